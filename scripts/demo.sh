#!/usr/bin/env bash
# The main job on the embedded default fabric, as root on a fresh machine: install what the lab
# needs, then `gpufabric demo`: switches and GPU hosts brought up in the lab, configured, proven.
#   scripts/demo.sh [INTENT] [--chaos] [--keep] [--json PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

want_apt dot graphviz
want_apt vtysh frr frr-pythontools
want_apt lldpd lldpd
want_apt sshd openssh-server
want_apt nft nftables
want_apt ping iputils-ping
want_apt systemd-nspawn systemd-container
want_apt debootstrap debootstrap
want_apt socat socat
want_apt zstd zstd
install_wanted
ensure_venv .venv test   # Ansible comes with the test extra
export PATH="$PWD/.venv/bin:$PATH"
echo "running gpufabric demo $* (its steps follow, one line each)" >&2
exec gpufabric demo "$@"
