"""host_network's read-back of a bonded host (tasks/validate.yml, playbooks/validate.yml), on a test double.

This machine's kernel has no bonding module, so no bond can be read live here (Molecule reads the routed NICs
of booted hosts). The double is what `ip -j` prints, written by hand in iproute2's JSON format (field names
from iproute2's ip/iplink_bond.c and ipaddress.c: `linkinfo.info_kind`, `info_data.mode`, `xmit_hash_policy`,
`ad_lacp_rate`, `miimon`, a member's `master`); the role's own checks (vars/main.yml, rendered by Ansible)
and verdict filter judge it. A bond read as planned passes; a bond in the wrong mode and hash, with a member
missing, an address on a member and an IPv6 address on the bond fails, naming each setting.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from ansible_helpers import run_play

from gpufabric.export.inventory import ansible_vars, build
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "host_network"

pytestmark = pytest.mark.slow  # an ansible-playbook run


def _host() -> dict[str, Any]:
    plan = build_plan(load_intent(str(ROOT / "inventory" / "examples" / "multi-vendor.yml")))
    return ansible_vars(next(h for h in build(plan) if h.name == "nvme01"))


def _ip_double(hv: dict[str, Any], *, broken: bool) -> dict[str, Any]:
    """`host_network_read` as tasks/validate.yml registers it, with iproute2's JSON as stdout (a test double)."""
    bond = hv["gpufabric_bonds"][0]
    members = bond["members"][:1] if broken else bond["members"]
    info = {"mode": "balance-rr" if broken else "802.3ad", "miimon": 100, "updelay": 0, "downdelay": 0}
    info |= {"xmit_hash_policy": "layer2" if broken else "layer3+4", "ad_lacp_rate": "fast", "ad_select": "stable"}
    links = [{"ifindex": 1, "ifname": "lo", "mtu": 65536, "linkinfo": None}]
    links.append({"ifname": bond["interface"], "mtu": 9000, "linkinfo": {"info_kind": "bond", "info_data": info}})
    for m in members:
        slave = {"info_slave_kind": "bond", "info_slave_data": {"state": "ACTIVE", "mii_status": "UP"}}
        links.append({"ifname": m, "mtu": 9000, "master": bond["interface"], "linkinfo": slave})
    links += [{"ifname": m, "mtu": 9000} for m in bond["members"] if m not in members]
    addr = {"local": bond["address"], "prefixlen": bond["prefixlen"], "family": "inet", "scope": "global"}
    addrs = [{"ifname": bond["interface"], "addr_info": [addr]}]
    addrs += [{"ifname": m, "addr_info": [addr] if broken else []} for m in bond["members"]]
    ll = {"local": "fe80::1", "prefixlen": 64, "family": "inet6", "scope": "link"}
    addrs6 = [{"ifname": bond["interface"], "addr_info": [ll] if broken else []}]
    rules = [{"priority": 0, "src": "all", "table": "local"}]
    rules.append({"priority": 1000, "src": bond["address"], "srclen": 32, "table": "101"})
    routes = [{"dst": "default", "gateway": bond["gateway"], "dev": bond["interface"], "flags": ["onlink"]}]
    reads = [
        ("-d link show", links),
        ("-4 address show", addrs),
        ("-4 rule show", rules),
        ("-6 address show", addrs6),
        ("-4 route show table 101", routes),
    ]
    return {"results": [{"item": item, "stdout": json.dumps(out), "rc": 0} for item, out in reads]}


def _sysctl_double() -> dict[str, Any]:
    import base64

    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())["host_network_sysctls"]
    read = [{"item": k, "content": base64.b64encode(f"{v}\n".encode()).decode()} for k, v in defaults.items()]
    return {"results": read}


@pytest.fixture(scope="module")
def checks(tmp_path_factory) -> dict[str, list[dict[str, str]]]:
    out = tmp_path_factory.mktemp("read_back")
    hv = _host()
    hosts = {
        name: {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            **hv,
            "host_network_read": _ip_double(hv, broken=name == "broken"),
            "host_network_sysctl_read": _sysctl_double(),
        }
        for name in ("planned", "broken")
    }
    play = [
        {
            "name": "The role's checks over the double's readings",
            "hosts": "all",
            "gather_facts": False,
            "vars_files": [str(ROLE / "defaults" / "main.yml"), str(ROLE / "vars" / "main.yml")],
            "tasks": [
                {
                    "ansible.builtin.copy": {
                        "content": "{{ host_network_checks | to_json }}",
                        "dest": str(out) + "/{{ inventory_hostname }}.json",
                        "mode": "0600",
                    }
                }
            ],
        }
    ]
    run_play(out, hosts, play)
    return {name: json.loads((out / f"{name}.json").read_text()) for name in hosts}


def _differences(checks: list[dict[str, str]]) -> list[str]:
    spec = importlib.util.spec_from_file_location("read_back_filters", ROLE / "filter_plugins" / "read_back.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.FilterModule().filters()["gpufabric_differences"](checks)


def test_a_bond_read_as_planned_passes_and_every_bond_setting_was_compared(checks):
    planned = checks["planned"]
    assert _differences(planned) == []
    compared = {c["setting"]: c["expected"] for c in planned}
    assert compared["bond-storage kind"] == "bond"
    assert compared["bond-storage mode"] == "802.3ad"
    assert compared["bond-storage xmit_hash_policy"] == "layer3+4"
    assert compared["bond-storage ad_lacp_rate"] == "fast"
    assert compared["bond-storage miimon"] == "100"
    assert compared["bond-storage members"] == "ens1f0np0,ens1f1np1"
    assert compared["bond-storage MTU"] == "9000"
    assert compared["bond-storage IPv6 addresses"] == "none"
    assert compared["bond-storage table 101 default"] == f"via {_host()['gpufabric_bonds'][0]['gateway']}"
    assert compared["ens1f0np0 address"] == "none (member of bond-storage)"
    assert compared["ens1f1np1 MTU"] == "9000"
    # The members are not addressed interfaces of their own: no table, rule or address expected on them.
    assert not any(s.startswith(("ens1f0np0 table", "ens1f0np0 rule")) for s in compared)


def test_a_bond_off_the_plan_fails_naming_each_setting(checks):
    address = _host()["gpufabric_bonds"][0]["address"]
    assert _differences(checks["broken"]) == [
        "bond-storage IPv6 addresses: expected none, found fe80::1",
        "bond-storage mode: expected 802.3ad, found balance-rr",
        "bond-storage xmit_hash_policy: expected layer3+4, found layer2",
        "bond-storage members: expected ens1f0np0,ens1f1np1, found ens1f0np0",
        f"ens1f0np0 address: expected none (member of bond-storage), found {address} (member of bond-storage)",
        f"ens1f1np1 address: expected none (member of bond-storage), found {address} (member of no bond)",
    ]
