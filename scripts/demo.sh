#!/usr/bin/env bash
# The main job on the embedded default fabric, as root on a fresh machine: install what the lab
# needs, then `gpufabric demo`: switches and GPU hosts brought up in the lab, configured, proven.
#   scripts/demo.sh [INTENT] [--chaos] [--keep] [--json PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_apt dot graphviz
ensure_apt vtysh frr frr-pythontools
ensure_apt lldpd lldpd
ensure_apt sshd openssh-server
ensure_apt nft nftables
ensure_apt ping iputils-ping
ensure_apt systemd-nspawn systemd-container
ensure_apt debootstrap debootstrap
ensure_apt socat socat
ensure_apt zstd zstd
ensure_venv .venv test   # Ansible comes with the test extra
export PATH="$PWD/.venv/bin:$PATH"
exec gpufabric demo "$@"
