#!/usr/bin/env bash
# The main job on the embedded default fabric: validate, plan, write every export to build/,
# render every switch's configuration and verify it against the plan.
#   scripts/demo.sh [INTENT]   (default: inventory/fabric.yml)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_apt dot graphviz
ensure_venv .venv
export PATH="$PWD/.venv/bin:$PATH"
intent=${1:-}

gpufabric check $intent
gpufabric plan $intent
mkdir -p build
gpufabric export plan $intent -o build/plan.json
gpufabric export cabling $intent -o build/cabling.csv
gpufabric export bom $intent -o build/bom.csv
gpufabric export drawing $intent -o build/drawing
gpufabric export slurm $intent -o build/topology.conf
gpufabric export k8s-labels $intent -o build/k8s-labels.yaml
gpufabric export containerlab $intent -o build/fabric.clab.yml
gpufabric export ansible-inventory $intent -o build/ansible-inventory.yml
# Switch configs need the password the intent references; a lab run makes up one (never printed).
if [ -z "${GPUFABRIC_SWITCH_PASSWORD:-}" ]; then
    GPUFABRIC_SWITCH_PASSWORD=$(head -c 18 /dev/urandom | base64)
    export GPUFABRIC_SWITCH_PASSWORD
fi
gpufabric render $intent -o build/configs
gpufabric verify $intent --configs build/configs
echo
echo "Everything is under build/. Next: ansible-inventory --graph, and docs/intent.md to change the fabric."
