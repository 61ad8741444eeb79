"""host_network's files for every host of a plan, on every backend, rendered by Ansible as the role's persist
tasks name them, into `<out>/<host>/<backend>/...`. Tests read them with each backend's own software, and
tests/golden/hosts/<example>.sha256 holds their digests (the default fabric's prove they did not change).

The table below mirrors the role's persist tasks (template, the file name under the backend's folder, the list
it loops over); tests/ansible/test_host_planes.py checks that every template of the role appears in it.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

from ansible_helpers import run_play

from gpufabric.export.inventory import ansible_vars, build
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

ROOT = Path(__file__).resolve().parents[1]
ROLE = ROOT / "roles" / "host_network"
NET = "{{ item.interface }}"
NETPLAN = "netplan/etc/netplan/60-gpufabric.yaml"
DSCP = "nftables/60-gpufabric-dscp.nft"
# (template, destination under the host's folder, loop or None for one file, condition or None)
FILES: list[tuple[str, str, str | None, str | None]] = [
    ("bond.netdev.j2", f"systemd-networkd/60-gpufabric-{NET}.netdev", "host_network_bonds", None),
    ("nic.network.j2", f"systemd-networkd/60-gpufabric-{NET}.network", "host_network_links", None),
    ("member.network.j2", f"systemd-networkd/60-gpufabric-{NET}.network", "host_network_members", None),
    ("trunk.network.j2", f"systemd-networkd/60-gpufabric-{NET}.network", "host_network_trunks", None),
    ("vlan.netdev.j2", f"systemd-networkd/61-gpufabric-{NET}.netdev", "host_network_vlans", None),
    ("vlan.network.j2", f"systemd-networkd/61-gpufabric-{NET}.network", "host_network_vlans", None),
    ("vrf.netdev.j2", "systemd-networkd/59-gpufabric-{{ item.name }}.netdev", "host_network_vrfs", None),
    ("vrf.network.j2", "systemd-networkd/59-gpufabric-{{ item.name }}.network", "host_network_vrfs", None),
    ("netplan.yaml.j2", NETPLAN, None, None),  # written 0600 below: netplan warns about a file others can read
    ("nic.nmconnection.j2", f"NetworkManager/gpufabric-{NET}.nmconnection", "host_network_links", None),
    ("member.nmconnection.j2", f"NetworkManager/gpufabric-{NET}.nmconnection", "host_network_members", None),
    ("trunk.nmconnection.j2", f"NetworkManager/gpufabric-{NET}.nmconnection", "host_network_trunks", None),
    ("vlan.nmconnection.j2", f"NetworkManager/gpufabric-{NET}.nmconnection", "host_network_vlans", None),
    ("vrf.nmconnection.j2", "NetworkManager/gpufabric-{{ item.name }}.nmconnection", "host_network_vrfs", None),
    ("dscp.nft.j2", DSCP, None, "host_network_dscp_rules | length > 0"),
]


def _task(template: str, dest: str, loop: str | None, when: str | None) -> dict[str, Any]:
    task: dict[str, Any] = {
        "name": f"{template} -> {dest}",
        "ansible.builtin.template": {
            "src": str(ROLE / "templates" / template),
            "dest": "{{ out }}/{{ inventory_hostname }}/" + dest,
        },
    }
    if template == "netplan.yaml.j2":
        task["ansible.builtin.template"]["mode"] = "0600"
    if loop is not None:
        task["loop"] = "{{ " + loop + " }}"
    if when is not None:
        task["when"] = when
    return task


def render_play(out: Path) -> list[dict[str, Any]]:
    folders = ("systemd-networkd", "netplan/etc/netplan", "NetworkManager", "nftables")
    return [
        {
            "name": "Render host_network's files for every backend",
            "hosts": "all",
            "gather_facts": False,
            "vars_files": [str(ROLE / "defaults" / "main.yml"), str(ROLE / "vars" / "main.yml")],
            "vars": {"out": str(out)},
            "tasks": [
                {
                    "ansible.builtin.file": {
                        "path": "{{ out }}/{{ inventory_hostname }}/" + d,
                        "state": "directory",
                        "mode": "0755",
                    }
                }
                for d in folders
            ]
            + [_task(*row) for row in FILES if (ROLE / "templates" / row[0]).exists()],
        }
    ]


def host_vars(intent: Path, hosts: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Server -> its inventory variables (as the inventory plugin gives them), every server or those named."""
    plan = build_plan(load_intent(str(intent)))
    found = {h.name: ansible_vars(h) for h in build(plan) if h.platform == "linux"}
    return {n: v for n, v in found.items() if hosts is None or n in hosts}


LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


def render(out: Path, intent: Path, hosts: list[str] | None = None) -> Path:
    run_play(out, {n: LOCAL | v for n, v in host_vars(intent, hosts).items()}, render_play(out))
    return out


def render_many(out: Path, sources: dict[str, tuple[Path, list[str] | None]]) -> Path:
    """Several plans' servers in one Ansible run (it costs its start-up once): `<out>/<label>--<host>/...`."""
    inventory = {}
    for label, (intent, hosts) in sources.items():
        inventory |= {f"{label}--{n}": LOCAL | v for n, v in host_vars(intent, hosts).items()}
    run_play(out, inventory, render_play(out))
    return out


def digests(out: Path, label: str | None = None) -> str:
    """`sha256sum`'s format over every rendered file, `<host>/<backend>/<file>`, sorted; with `label`, the
    files of that plan's hosts from render_many."""
    lines = []
    for folder in sorted(p for p in out.iterdir() if p.is_dir() and p.name != "ansible"):
        host = folder.name
        if label is not None:
            if not host.startswith(f"{label}--"):
                continue
            host = host.removeprefix(f"{label}--")
        for p in sorted(f for f in folder.rglob("*") if f.is_file()):
            lines.append(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {host}/{p.relative_to(folder)}\n")
    return "".join(lines)
