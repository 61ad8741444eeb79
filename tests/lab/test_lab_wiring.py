"""The lab's namespaces, cables and management bridge, made for real (root only) and removed exactly."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import INVENTORY, cli_env, run

from gpufabric.fleet.lab.names import DEFAULT_LAB, owner_of
from gpufabric.fleet.lab.state import LabState
from gpufabric.fleet.lab.topology import BRIDGE, topology
from gpufabric.intent import load_intent
from gpufabric.lab import netlink
from gpufabric.lab.control import down
from gpufabric.lab.wiring import up

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)")


def _ip(*args: str) -> str:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def lab(tmp_path):
    topo = topology(load_intent(str(INVENTORY / "fabric.yml")))
    yield topo, tmp_path
    down(tmp_path)


def test_up_wires_the_plan_and_down_removes_exactly_it(lab):
    topo, state_dir = lab
    state = up(topo, state_dir)
    assert set(state.namespaces) == {n.name for n in topo.nodes}
    cable = topo.cables[0]
    a_side = _ip("-n", cable.a, "-o", "link", "show", "dev", cable.a_port)
    assert f"mtu {cable.mtu}" in a_side and "UP" in a_side
    peer_index = a_side.split("@if")[1].split(":")[0]
    b_side = _ip("-n", cable.b, "-o", "link", "show", "dev", cable.b_port)
    assert b_side.startswith(f"{peer_index}:")  # the veth's other end is the planned port on the planned peer
    node = topo.nodes[3]
    ping = subprocess.run(["ping", "-c1", "-W2", node.mgmt_ip.split("/")[0]], capture_output=True, check=False)
    assert ping.returncode == 0, "the root namespace reaches every switch over the OOB bridge"
    assert up(topo, state_dir).namespaces == state.namespaces  # idempotent
    made_ns, made_links = set(state.namespaces), set(state.root_links)
    down(state_dir)
    # What the lab recorded is gone. Only that is compared: the Molecule lane runs beside the lab tier and
    # makes and removes namespaces and links of its own meanwhile (that the lab leaves others' alone is
    # the test below).
    assert made_ns and made_ns.isdisjoint(netlink.namespaces())
    assert BRIDGE in made_links and made_links.isdisjoint(netlink.links())
    assert LabState.load(state_dir) is None


def test_down_after_a_crash_removes_what_was_recorded(lab):
    topo, state_dir = lab
    subprocess.run(["ip", "netns", "add", topo.nodes[0].name], check=True)
    LabState(topo.fabric, namespaces=[topo.nodes[0].name]).save(state_dir)  # crashed right after the first step
    down(state_dir)
    assert topo.nodes[0].name not in netlink.namespaces()


def test_a_namespace_the_lab_did_not_make_is_left_alone(lab):
    topo, state_dir = lab
    name = topo.nodes[1].name
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        with pytest.raises(netlink.LabCommandError, match=f"{name} exists but this lab did not make it"):
            up(topo, state_dir)
        down(state_dir)
        assert name in netlink.namespaces()
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def test_lab_commands_up_status_down(tmp_path):
    state = str(tmp_path / "state")
    assert run("gpufabric", "lab", "up", "--no-hosts", "--state-dir", state).returncode == 0
    status = run("gpufabric", "lab", "status", "--state-dir", state, "--json")
    assert status.returncode == 0
    rows = json.loads(status.stdout)["switches"]
    assert len(rows) == 16 and all(r["up"] and r["runs_as"] == "frr" for r in rows)
    assert run("gpufabric", "lab", "down", "--state-dir", state).returncode == 0
    after = run("gpufabric", "lab", "status", "--state-dir", state, "--json")
    assert after.returncode == 4 and not any(r["up"] for r in json.loads(after.stdout)["switches"])


def test_lab_up_runs_daemons_and_down_leaves_nothing_behind(tmp_path):
    state_dir = tmp_path / "state"
    before_etc = set(os.listdir("/etc/frr"))
    # A home of its own, and no VTYSH_HISTFILE from the tests: whatever vtysh the lab runs must keep
    # no history there by the lab's own doing.
    home = tmp_path / "home"
    home.mkdir()
    env = cli_env(HOME=str(home))
    env.pop("VTYSH_HISTFILE", None)
    up = ["gpufabric", "lab", "up", "--no-hosts", "--state-dir", str(state_dir)]
    assert subprocess.run(up, capture_output=True, text=True, env=env, check=False).returncode == 0
    state = LabState.load(state_dir)
    node = "cmp-spine1"
    inside = subprocess.run(["ip", "netns", "pids", node], capture_output=True, text=True, check=True).stdout.split()
    names = {Path(f"/proc/{pid}/comm").read_text().strip() for pid in inside}
    assert {"watchfrr", "zebra", "bgpd", "sshd", "lldpd"} <= names
    running = subprocess.run(
        ["vtysh", "-N", node, "-c", "show running-config"], capture_output=True, text=True, check=True
    )
    assert f"hostname {node}" in running.stdout and "router bgp" not in running.stdout  # starts empty
    assert (state_dir / "login.json").stat().st_mode & 0o077 == 0  # the lab login is readable by root only
    pids = list(state.pids.values())
    made_ns, made_links = set(state.namespaces), set(state.root_links)
    down = ["gpufabric", "lab", "down", "--state-dir", str(state_dir)]
    assert subprocess.run(down, capture_output=True, text=True, env=env, check=False).returncode == 0
    assert list(home.iterdir()) == []  # no ~/.history_frr, nothing else in the user's home
    assert not any(os.path.exists(f"/proc/{pid}") for pid in pids), "a daemon the lab started is still running"
    # What the lab recorded is gone (the Molecule lane beside the lab tier makes namespaces of its own).
    assert made_ns and made_ns.isdisjoint(netlink.namespaces()) and made_links.isdisjoint(netlink.links())
    # Nothing of this lab's left in /etc/frr (another worker's lab, named, may have come up meanwhile).
    left = {entry for entry in set(os.listdir("/etc/frr")) - before_etc if owner_of(entry) == DEFAULT_LAB}
    assert not left and not os.path.exists(f"/var/run/frr/{node}"), left
    assert not state_dir.exists()


def test_down_finishes_past_a_failing_step_and_a_second_down_removes_the_rest(tmp_path, monkeypatch):
    from gpufabric.lab import daemons

    state_dir = tmp_path / "state"
    assert run("gpufabric", "lab", "up", "--no-hosts", "--state-dir", str(state_dir)).returncode == 0
    recorded = LabState.load(state_dir)
    pids, made_ns = dict(recorded.pids), set(recorded.namespaces)
    real = daemons.stop_all
    monkeypatch.setattr(daemons, "stop_all", lambda state: (_ for _ in ()).throw(RuntimeError("planted")))
    first = down(state_dir)
    assert first is not None and first.problems[0] == "daemons: RuntimeError: planted"
    assert "links and namespaces: kept" in first.problems[1]  # never a namespace with a daemon inside
    assert LabState.load(state_dir) is not None  # kept: a second down has work left
    monkeypatch.setattr(daemons, "stop_all", real)
    second = run("gpufabric", "lab", "down", "--state-dir", str(state_dir))
    assert second.returncode == 0 and "removed" in second.stderr, second.stderr
    assert not [p for p in pids.values() if Path(f"/proc/{p}").exists()]
    assert made_ns and made_ns.isdisjoint(netlink.namespaces())  # what the lab made (Molecule's beside it)
    assert not state_dir.exists()
