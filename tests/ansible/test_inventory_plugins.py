"""The Nornir and Ansible inventory plugins list exactly the planned devices and hosts."""

from __future__ import annotations

import json

import pytest
from conftest import INVENTORY, ROOT, run
from nornir import InitNornir
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

from gpufabric.plan.model import ip

CANARY = "canary-Secret-7c1e"


def _graph_hosts(text: str) -> set[str]:
    return {line.split("--")[-1] for line in text.splitlines() if "--" in line and "@" not in line}


@pytest.mark.parametrize("args", [["--graph"], ["-i", "inventory", "--graph"]], ids=["ansible.cfg", "folder"])
def test_ansible_inventory_graph_lists_the_plan(default_plan, args):
    done = run("ansible-inventory", *args, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    planned = {d.name for d in default_plan.devices()} | {s.name for s in default_plan.servers}
    assert _graph_hosts(done.stdout) == planned
    for group in (
        "@plane_compute:",
        "@role_leaf:",
        "@compute_su1:",
        "@compute_rail2:",
        "@storage_unit1:",
        "@platform_frr:",
        "@group_gpu:",
    ):
        assert group in done.stdout


def test_ansible_host_vars_carry_the_nics(default_plan):
    done = run("ansible-inventory", "--host", "gpu03", cwd=ROOT, check=True)
    hostvars = json.loads(done.stdout)
    server = next(s for s in default_plan.servers if s.name == "gpu03")
    nics = hostvars["gpufabric_nics"]
    assert [(n["interface"], n["leaf"], n["leaf_port"]) for n in nics] == [
        (n.interface, n.leaf, n.leaf_port) for n in server.nics
    ]
    assert nics[0]["leaf"] == "cmp-su2-leaf1" and nics[0]["mtu"] == 9000
    assert hostvars["gpufabric_planes"]["compute"]["qos"]["roce_dscp"] == 26
    assert hostvars["gpufabric_planes"]["compute"]["qos"]["host_tos"] == 106
    assert "qos" not in hostvars["gpufabric_planes"]["storage"]


def test_a_bonded_hosts_address_is_given_once_on_its_bond():
    """Planes with `host_links: lacp`: the bond carries the address, MTU, gateway, members and LACP settings;
    its members carry none of those, so no address is on two interfaces of a host."""
    from gpufabric.export.inventory import ansible_vars, build
    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan

    plan = build_plan(load_intent(str(INVENTORY / "examples" / "multi-vendor.yml")))
    hosts = {h.name: ansible_vars(h) for h in build(plan) if "servers" in h.groups}
    bonded = hosts["nvme01"]
    members = [n for n in bonded["gpufabric_nics"] if n["bond"]]
    assert [n["interface"] for n in members] == ["ens1f0np0", "ens1f1np1"]
    assert all("address" not in n and "gateway" not in n and "prefixlen" not in n for n in members)
    server = next(s for s in plan.servers if s.name == "nvme01")
    assert bonded["gpufabric_bonds"] == [
        {
            "interface": "bond-storage",
            "plane": "storage",
            "members": ["ens1f0np0", "ens1f1np1"],
            "mtu": 9000,
            "address": ip(server.nics[0].address),
            "prefixlen": server.nics[0].prefixlen,
            "gateway": ip(server.nics[0].gateway),
            "mode": "802.3ad",
            "transmit_hash_policy": "layer3+4",
            "lacp_rate": "fast",
            "miimon": 100,
        }
    ]
    for name, hv in hosts.items():
        addresses = [n["address"] for n in hv["gpufabric_nics"] if "address" in n]
        addresses += [b["address"] for b in hv["gpufabric_bonds"]]
        assert len(addresses) == len(set(addresses)), f"{name}: an address on two interfaces"
    # A plane of routed hosts: no bond, every NIC keeps its own address.
    assert hosts["gpu001"]["gpufabric_bonds"][0]["members"] == ["ens5f0np0", "ens5f1np1"]
    assert all("address" in n for n in hosts["gpu001"]["gpufabric_nics"] if not n["bond"])


def test_ansible_plugin_reports_a_bad_intent(tmp_path):
    (tmp_path / "fabric.yml").write_text("fabric: {name: BAD}\n")
    (tmp_path / "gpufabric.yml").write_text("plugin: gpufabric\n")
    done = run("ansible-inventory", "-i", str(tmp_path / "gpufabric.yml"), "--list", cwd=ROOT)
    assert "fabric.name" in done.stderr and "is required but missing" in done.stderr


@pytest.mark.slow
def test_ansible_plugin_narrows_to_hosts_and_reaches_lab_hosts_as_recorded(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (state / "hosts.json").write_text(
        json.dumps(
            {
                "bridge": "b",
                "hosts": {"gpu02": {"netns": "h-gpu02", "root": "/r", "address": "172.31.254.3", "pid": 1}},
                "user": "root",
                "key_file": "/k/id",
                "known_hosts": "/k/known_hosts",
                "python": "/usr/bin/python3",
            }
        )
    )
    (tmp_path / "gpufabric.yml").write_text(
        f"plugin: gpufabric\nintent: {ROOT / 'inventory' / 'fabric.yml'}\nhosts: [gpu01, gpu02]\nlab_state: {state}\n"
    )
    source = str(tmp_path / "gpufabric.yml")
    assert _graph_hosts(run("ansible-inventory", "-i", source, "--graph", cwd=ROOT, check=True).stdout) == {
        "gpu01",
        "gpu02",
    }
    hostvars = {
        h: json.loads(run("ansible-inventory", "-i", source, "--host", h, cwd=ROOT, check=True).stdout)
        for h in ("gpu01", "gpu02")
    }
    assert hostvars["gpu01"]["ansible_host"] == "172.20.0.18"  # the plan's address: no record for it
    assert hostvars["gpu02"]["ansible_host"] == "172.31.254.3"
    assert hostvars["gpu02"]["ansible_ssh_private_key_file"] == "/k/id"
    # The login's bound for a container of this machine's (a busy machine answers slowly); a real host keeps Ansible's.
    assert hostvars["gpu02"]["ansible_ssh_timeout"] == 120
    assert "ansible_ssh_timeout" not in hostvars["gpu01"]
    assert (
        "UserKnownHostsFile=/k/known_hosts -o StrictHostKeyChecking=yes" in hostvars["gpu02"]["ansible_ssh_common_args"]
    )
    # The lab knows its image's interpreter; a host it does not run is left to Ansible's discovery.
    assert hostvars["gpu02"]["ansible_python_interpreter"] == "/usr/bin/python3"
    assert "ansible_python_interpreter" not in hostvars["gpu01"]
    # A lab container has no hardware of its own: host_baseline leaves it alone; a planned host is read.
    assert hostvars["gpu02"]["gpufabric_lab_container"] is True
    assert "gpufabric_lab_container" not in hostvars["gpu01"]


def test_nornir_plugin_lists_the_plan(default_plan, monkeypatch):
    monkeypatch.setenv("GPUFABRIC_SWITCH_PASSWORD", CANARY)
    # A push or validate earlier in this process registered gpufabric's connection plugin under NAPALM's
    # name; InitNornir registers NAPALM's own again and would refuse the clash.
    monkeypatch.setitem(ConnectionPluginRegister.available, CONNECTION_NAME, Napalm)
    nr = InitNornir(
        inventory={"plugin": "GpufabricInventory", "options": {"intent": str(INVENTORY / "fabric.yml")}},
        runner={"plugin": "threaded", "options": {"num_workers": 4}},
        logging={"enabled": False},
    )
    planned = {d.name for d in default_plan.devices()} | {s.name for s in default_plan.servers}
    assert set(nr.inventory.hosts) == planned
    compute = nr.filter(filter_func=lambda h: "compute_switches" in h.groups)
    assert set(compute.inventory.hosts) == {d.name for d in default_plan.planes["compute"].devices}
    leaf = nr.inventory.hosts["cmp-su1-leaf1"]
    assert leaf.platform == "frr" and leaf.data["asn"] == 4200000001 and leaf.hostname == leaf.data["mgmt_ip"]
    assert leaf.password == CANARY  # the connection gets the secret ...
    assert CANARY not in json.dumps({h: nr.inventory.hosts[h].data for h in nr.inventory.hosts})  # ... data never


@pytest.mark.slow
def test_no_output_ever_contains_the_secret(tmp_path):
    """Plant a canary in every referenced secret and look for it in everything gpufabric prints or writes."""
    secrets = {
        "GPUFABRIC_SWITCH_PASSWORD": CANARY,
        "GPUFABRIC_HOST_SSH_KEY": CANARY,
        "GPUFABRIC_SNMP_COMMUNITY": CANARY,
        "GPUFABRIC_SALT_KEY": CANARY,
    }
    commands = [
        ["gpufabric", "plan"],
        ["gpufabric", "plan", "--json"],
        ["gpufabric", "check"],
        ["ansible-inventory", "--list"],
    ]
    commands += [
        ["gpufabric", "export", kind, str(INVENTORY / "examples" / "multi-vendor.yml")]
        for kind in ("plan", "cabling", "bom", "drawing", "slurm", "k8s-labels", "containerlab", "ansible-inventory")
    ]
    for cmd in commands:
        done = run(*cmd, check=True, **secrets)
        assert CANARY not in done.stdout + done.stderr, cmd
