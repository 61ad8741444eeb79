#!/usr/bin/env bash
# Place the NIC Configuration Operator's published NicConfigurationTemplate CRD where the tests read it
# (tests/export/test_k8s_supernic.py), without keeping it in this repository:
#   scripts/nic_configuration_crds.sh SOURCE [DEST]
# SOURCE: a git directory (or clone) of Mellanox/nic-configuration-operator, read at the pinned commit below,
#         or the CRD file itself (from a release of the operator's Helm chart).
# DEST:   default .cache/nic-configuration-operator (ignored by git); GPUFABRIC_NCO_CRDS points the tests at another.
# The file must have the SHA-256 below: the tests judge gpufabric's objects by exactly this schema.
set -euo pipefail
cd "$(dirname "$0")/.."
commit=8bfbeb34ba25215dd06402cd01bae0108341a8d4   # main, 2026-08-13 (the Network Operator 26.7 line)
path=deployment/nic-configuration-operator-chart/crds/configuration.net.nvidia.com_nicconfigurationtemplates.yaml
sha=c03da72f82fe59664dfeb0f118db86db2e92548532de85b141f1f955bd036bbe
source=${1:?usage: scripts/nic_configuration_crds.sh SOURCE [DEST]}
dest=${2:-.cache/nic-configuration-operator}
name=$(basename "$path")
mkdir -p "$dest"
tmp=$(mktemp "$dest/.$name.XXXXXX")
trap 'rm -f "$tmp"' EXIT
if [ -f "$source" ]; then
    cp "$source" "$tmp"
else
    git --git-dir="$(git -C "$source" rev-parse --absolute-git-dir 2>/dev/null || echo "$source")" show "$commit:$path" >"$tmp"
fi
got=$(sha256sum "$tmp" | cut -d' ' -f1)
if [ -n "$sha" ] && [ "$got" != "$sha" ]; then
    echo "$name: SHA-256 $got, expected $sha (commit $commit)" >&2
    exit 1
fi
chmod 644 "$tmp"
mv "$tmp" "$dest/$name"
trap - EXIT
echo "$dest/$name ($got)"
