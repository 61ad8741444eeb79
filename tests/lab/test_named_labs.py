"""Two labs of different intents side by side on one machine (root only): the default fabric in the default lab
and the SONiC example in a lab named `nlsonic`. Each is pushed and validated on its own; a third lab whose OOB
subnet overlaps the first's is refused before it makes anything; `lab down` of one leaves the other running
(its namespaces, processes and root-namespace routes), and it still validates clean.

Everything either lab made is removed by its own `lab down` at the end, which stops exactly the PIDs the lab
recorded, whatever failed before.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import INVENTORY, ROOT, run

from gpufabric.fleet.lab import registry
from gpufabric.fleet.lab.names import LabNames
from gpufabric.fleet.lab.state import LabState
from gpufabric.fleet.lab.topology import topology
from gpufabric.intent import load_intent
from gpufabric.lab import netlink

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)")

FABRIC = str(INVENTORY / "fabric.yml")
SONIC = str(ROOT / "inventory" / "examples" / "sonic.yml")
CLASHING = str(ROOT / "inventory" / "examples" / "lab-infiniband.yml")  # the default fabric's OOB subnet
NAMED = "nlsonic"
PLANE = ("--plane", "compute")


@pytest.fixture(scope="module")
def labs(tmp_path_factory):
    """The two labs up (the default one with its state in a folder of the test's own); both down at the end."""
    base = tmp_path_factory.mktemp("named")
    first, second = base / "default", base / NAMED
    try:
        up = run("gpufabric", "lab", "up", "--no-hosts", "--state-dir", str(first))
        assert up.returncode == 0, up.stderr
        up = run("gpufabric", "lab", "up", SONIC, "--no-hosts", "--name", NAMED, "--state-dir", str(second))
        assert up.returncode == 0, up.stderr
        yield first, second
    finally:
        for state in (second, first):  # each lab's own teardown: the PIDs and names it recorded
            run("gpufabric", "lab", "down", "--state-dir", str(state))


def _validate(args: tuple[str, ...]) -> list[dict]:
    done = run("nornir", "validate", *args, *PLANE, "--format", "json")
    assert done.returncode in (0, 4), done.stderr
    return json.loads(done.stdout)["results"]


def _failed(results: list[dict]) -> list[tuple[str, str, str]]:
    return [(r["check"], r["device"], r["item"]) for r in results if r["verdict"] == "fail"]


def _until_clean(args: tuple[str, ...], timeout: float = 240.0) -> list[dict]:
    """Validate until nothing fails (BGP and LLDP take a while on a loaded machine): the deadline only
    bounds a lab that never gets there."""
    deadline = time.monotonic() + timeout
    while True:
        results = _validate(args)
        if not _failed(results) or time.monotonic() > deadline:
            return results
        time.sleep(2)


def _alive(pids: dict[str, int]) -> dict[str, bool]:
    return {key: Path(f"/proc/{pid}").exists() for key, pid in pids.items()}


def _unreachable() -> set[str]:
    out = subprocess.run(["ip", "route", "show", "type", "unreachable"], capture_output=True, text=True, check=True)
    return {line.split()[1] for line in out.stdout.splitlines() if line.startswith("unreachable")}


def _wait(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.5)


def test_each_lab_carries_its_name(labs):
    first, second = labs
    a, b = LabState.load(first), LabState.load(second)
    assert a.name == "default" and b.name == NAMED
    sonic = topology(load_intent(SONIC), NAMED)
    assert set(b.namespaces) == {f"{NAMED}_{n.name}" for n in sonic.nodes}
    assert set(a.namespaces) == {n.name for n in topology(load_intent(FABRIC)).nodes}
    assert set(a.namespaces).isdisjoint(b.namespaces) and set(a.root_links).isdisjoint(b.root_links)
    assert LabNames(NAMED).bridge in b.root_links and all(len(link) <= 15 for link in b.root_links)
    present = netlink.namespaces()
    assert set(a.namespaces) <= present and set(b.namespaces) <= present
    # The named lab's FRR runs in pathspace `nlsonic_<switch>`, its host name the switch's own.
    spine = f"{NAMED}_cmp-spine1"
    shown = subprocess.run(
        ["vtysh", "-N", spine, "-c", "show running-config"], capture_output=True, text=True, check=False
    )
    assert shown.returncode == 0 and "hostname cmp-spine1" in shown.stdout, shown.stderr
    # `lab status` lists both labs, and the named lab's switches are all up.
    status = run("gpufabric", "lab", "status", SONIC, "--name", NAMED, "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    doc = json.loads(status.stdout)
    assert doc["name"] == NAMED and all(r["up"] for r in doc["switches"]) and len(doc["switches"]) == len(sonic.nodes)
    assert {(lab["name"], lab["fabric"]) for lab in doc["labs"]} >= {("default", a.fabric), (NAMED, b.fabric)}


def test_a_lab_whose_oob_subnet_overlaps_anothers_is_refused_before_anything(labs, tmp_path):
    before = netlink.namespaces()
    state = tmp_path / "clash"
    done = run("gpufabric", "lab", "up", CLASHING, "--no-hosts", "--name", "nlclash", "--state-dir", str(state))
    assert done.returncode == 2, done.stderr
    assert "lab default" in done.stderr and "172.20.0.0/24" in done.stderr, done.stderr
    assert not [ns for ns in netlink.namespaces() - before if ns.startswith("nlclash_")]
    assert LabState.load(state) is None and registry.find("nlclash") is None


def test_both_push_and_validate_and_down_of_one_leaves_the_other(labs):
    first, second = labs
    for target in ((FABRIC, "--state-dir", str(first)), (SONIC, "--lab-name", NAMED)):  # the name finds its folder
        pushed = run("nornir", "push", *target, *PLANE, "--json")
        assert pushed.returncode == 0, pushed.stdout + pushed.stderr
        assert json.loads(pushed.stdout)["target"] == "lab"
    assert _failed(_until_clean((FABRIC, "--state-dir", str(first)))) == []
    sonic_results = _until_clean((SONIC, "--lab-name", NAMED))
    assert _failed(sonic_results) == []
    assert len([r for r in sonic_results if r["check"] == "bgp-session"]) == 128  # the SONiC fabric, not the other

    a, b = LabState.load(first), LabState.load(second)
    # What runs of the default lab now (a daemon watchfrr restarted on a loaded machine has another PID: the
    # down of the other lab is held to what ran before it, and every sshd and lldpd must run).
    running = _alive(a.pids)
    assert all(alive for key, alive in running.items() if key.endswith(("/sshd", "/lldpd"))), running
    assert any(_alive(b.pids).values())
    routes_before = _unreachable()
    assert set(a.routes) <= routes_before

    down = run("gpufabric", "lab", "down", "--name", NAMED)  # its folder from the name
    assert down.returncode == 0 and f"lab {NAMED}" in down.stderr, down.stderr
    assert not second.exists() and registry.find(NAMED) is None
    _wait(lambda: not any(_alive(b.pids).values()), "the named lab's processes gone")
    present = netlink.namespaces()
    assert set(b.namespaces).isdisjoint(present)
    assert set(b.root_links).isdisjoint(netlink.links())
    # The default lab: untouched. Its namespaces, every process it started, its routes (the SONiC lab's
    # loopback pool is the same 10.0.0.0/24: that route stays for the lab still up).
    assert set(a.namespaces) <= present
    assert _alive(a.pids) == running
    assert set(a.routes) <= _unreachable()
    assert set(a.root_links) <= netlink.links()
    assert _failed(_until_clean((FABRIC, "--state-dir", str(first)))) == []

    down = run("gpufabric", "lab", "down", "--state-dir", str(first))
    assert down.returncode == 0, down.stderr
    _wait(lambda: not any(_alive(a.pids).values()), "the default lab's processes gone")
    assert set(a.namespaces).isdisjoint(netlink.namespaces()) and set(a.root_links).isdisjoint(netlink.links())
    # Its routes gone, but for a prefix another lab up holds too (an xdist worker's lab of the same pools).
    assert not ((set(a.routes) - registry.held_elsewhere(a.name)) & _unreachable())
    assert not [lab for lab in registry.labs() if lab.state_dir in (str(first), str(second))]
