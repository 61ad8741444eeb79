"""`gpufabric lab up` with an InfiniBand compute plane, and `nornir validate --plane compute` on it (root).

The compute plane runs in ibsim (the fabric simulator) with the real OpenSM as primary and standby,
read back by the real infiniband-diags; the other planes run as FRR namespaces as always. Proven here:
validate green, a cut and a swapped cable named, OpenSM rerouting around a cut, partitions enforced
(a port outside a tenant's partition has no path to it), and `lab down` leaving no process and no file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from conftest import ROOT, run

from gpufabric.ib import lab as ib_lab
from gpufabric.ib import sim, topology
from gpufabric.ib.errors import IbError
from gpufabric.ib.model import PortRef
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

pytestmark = [
    pytest.mark.lab,
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces; ibsim's preload)"),
    pytest.mark.skipif(bool(sim.missing()), reason=f"InfiniBand lab needs: {', '.join(sim.missing())}"),
]

EXAMPLE = str(ROOT / "inventory" / "examples" / "lab-infiniband.yml")


def test_lab_down_stops_the_simulator_and_both_subnet_managers(tmp_path: Path) -> None:
    state = tmp_path / "state"
    up = run("gpufabric", "lab", "up", EXAMPLE, "--no-hosts", "--state-dir", str(state))
    try:
        assert up.returncode == 0, up.stderr
        procs = json.loads((state / "infiniband" / "ib-lab.json").read_text())["processes"]
        pids = [p["pid"] for p in procs.values()]
        assert set(procs) == {"ibsim", "primary", "standby"}
    finally:
        down = run("gpufabric", "lab", "down", "--state-dir", str(state))
    assert down.returncode == 0, down.stderr
    assert "InfiniBand standby and primary and ibsim" in down.stderr
    assert not any(Path(f"/proc/{p}").exists() for p in pids)
    assert not state.exists()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("lab")
    state = folder / "state"
    up = run("gpufabric", "lab", "up", EXAMPLE, "--no-hosts", "--state-dir", str(state))
    assert up.returncode == 0, up.stderr
    assert "InfiniBand compute plane: 5 switches and 8 adapters in ibsim" in up.stderr
    yield state
    # The simulator's and the subnet managers' logs outlive `lab down`, beside the state folder: a failure
    # here is read in OpenSM's own words.
    for log in (state / "infiniband").rglob("*.log"):
        shutil.copy(log, folder / "-".join(log.relative_to(state).parts))
    run("gpufabric", "lab", "down", "--state-dir", str(state))


def _validate(state: Path, *extra: str) -> tuple[int, dict]:
    done = run(
        "nornir", "validate", EXAMPLE, "--plane", "compute", "--state-dir", str(state), "--format", "json", *extra
    )
    assert done.returncode in (0, 4), done.stderr
    return done.returncode, json.loads(done.stdout)


T = TypeVar("T")


def _until_green(read: Callable[[], tuple[bool, T, object]], within: float) -> T:
    """`read()` (green?, what was read, what is failing) again until green; fails with what is still failing."""
    deadline = time.monotonic() + within
    while True:
        green, found, failing = read()
        if green:
            return found
        assert time.monotonic() < deadline, f"not green after {within:.0f} s: {failing}"
        time.sleep(2)


def _green(state: Path, within: float = 180.0) -> dict:
    """Validate until every check passes: after a relink the SM's next sweep brings the ports up (and an SM
    starved of CPU on a loaded machine answers sminfo late: a failed `ib-sm` until it does).
    Fails with what is still failing, so a test never starts on a fabric an earlier one left broken."""

    def read() -> tuple[bool, dict, object]:
        code, doc = _validate(state)
        return code == 0, doc, sorted(_failed(doc))

    return _until_green(read, within)


def _green_junit(state: Path, within: float = 180.0) -> ET.Element:
    """The same wait as `_green`, read as JUnit XML: the suites once none has a failure."""

    def read() -> tuple[bool, ET.Element, object]:
        done = run("nornir", "validate", EXAMPLE, "--plane", "compute", "--state-dir", str(state), "--format", "junit")
        assert done.returncode in (0, 4), done.stderr
        suites = ET.fromstring(done.stdout)
        return suites.get("failures") == "0", suites, done.stdout[-3000:]

    return _until_green(read, within)


def _console(state: Path, command: str) -> None:
    run("gpufabric", "ib", "lab", "console", "--state-dir", str(state / "infiniband"), command, check=True)


def _failed(doc: dict) -> set[tuple[str, str, str]]:
    return {(r["check"], r["item"], r["observed"]) for r in doc["results"] if r["verdict"] == "fail"}


def _diag(state: Path, *args: str) -> str:
    return ib_lab.runner(state / "infiniband")(list(args))


def _lid(state: Path, name: str) -> str:
    node = topology.parse(_diag(state, "ibnetdiscover"), "ibnetdiscover").by_name()[name]
    assert node.lid, name
    return str(node.lid)


def _clear(state: Path, switch: str, port: int) -> None:
    """Clear a port's counters, as an operator does after a repair (once the SM's sweep has the port up)."""
    deadline = time.monotonic() + 180
    while True:
        try:
            _diag(state, "perfquery", "-R", _lid(state, switch), str(port))
            return
        except IbError:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


def _uplink(state: Path, src: str, dst: str) -> str | None:
    """The port `src`'s leaf leaves by toward the spine on the route to `dst` (ibtracert's out-port);
    None while there is no route: between a cut and the SM's next sweep the leaf's table still points
    at the dead port, and ibtracert says it cannot reach."""
    try:
        route = _diag(state, "ibtracert", _lid(state, src), _lid(state, dst))
    except IbError:
        return None
    hops = re.findall(r'^\[(\d+)\] -> switch port \{[^}]*\}\[\d+\] lid \d+-\d+ "spine01"', route, re.MULTILINE)
    return hops[0] if hops else None


def test_validate_is_green_on_the_planned_fabric(lab: Path) -> None:
    status = run("gpufabric", "lab", "status", EXAMPLE, "--state-dir", str(lab), "--json")
    assert json.loads(status.stdout)["infiniband"] == {
        "processes": {"ibsim": True, "primary": True, "standby": True},
        "up": True,
    }
    doc = _green(lab)
    assert doc["ok"] is True
    checks = {r["check"] for r in doc["results"]}
    assert checks == {"ib-cabling", "ib-nodes", "ib-lid", "ib-port", "ib-sm", "ib-partition", "ib-route", "ib-counters"}
    cabling = next(r for r in doc["results"] if r["check"] == "ib-cabling")
    assert cabling["item"] == "16 planned cables" and cabling["observed"] == "as planned"
    sm = {r["item"]: r["observed"] for r in doc["results"] if r["check"] == "ib-sm"}
    assert "SMINFO_MASTER" in sm["master gpu01 mlx5_0"] and "SMINFO_STANDBY" in sm["standby gpu02 mlx5_0"]
    # The same results as JUnit XML: one suite per check, no failure.
    suites = _green_junit(lab)
    assert suites.get("failures") == "0" and {s.get("name") for s in suites} == checks


def test_a_cut_cable_is_named_and_opensm_reroutes_around_it(lab: Path) -> None:
    _green(lab)
    fabric = build_plan(load_intent(EXAMPLE)).infiniband.fabric
    port = _uplink(lab, "gpu01 mlx5_0", "gpu03 mlx5_0")
    assert port is not None
    spine_end = fabric.peer[PortRef("su1-leaf1", int(port))]
    _console(lab, f'unlink "S-su1-leaf1"[{port}]')
    try:
        code, doc = _validate(lab)
        assert code == 4
        assert ("ib-cabling", f'"su1-leaf1"[{port}] - {spine_end}', "missing") in _failed(doc)

        # OpenSM reroutes at its next sweep: leaf, spine, leaf still, over the leaf's other uplink. The sweep
        # writes the switches' tables one after another and ibsim answers late on a loaded machine, so a trace
        # read mid-sweep can fail: both rails' routes are read again until they pass, bounded.
        def rerouted() -> tuple[bool, str | None, object]:
            moved = _uplink(lab, "gpu01 mlx5_0", "gpu03 mlx5_0")
            if moved in (None, port):
                return False, moved, f"the leaf still leaves by {moved}"
            routes = [r for r in _validate(lab)[1]["results"] if r["check"] == "ib-route"]
            return len(routes) == 2 and all(r["verdict"] == "pass" for r in routes), moved, routes

        _until_green(rerouted, 180.0)  # fails naming the routes still failing
    finally:
        # Traffic in flight when the cable went is counted as discards at its ends: after a repair the operator
        # clears the counters of the repaired cable, as here, before the fabric counts as green. Also when the
        # test failed: the next test starts on the fabric this one leaves.
        _console(lab, f'relink "S-su1-leaf1"[{port}]')
        _clear(lab, "su1-leaf1", int(port))
        _clear(lab, spine_end.node, spine_end.port)
    assert _green(lab)["ok"] is True


def test_a_swapped_pair_is_named_at_both_ends(lab: Path) -> None:
    _green(lab)
    # gpu01's and gpu02's rail-2 adapters swapped at their leaf (slot 1 and slot 2 of su1-leaf2). Rail 2:
    # the subnet managers and the diagnostics sit on rail 1, and a test of cabling is not one of failover.
    _console(lab, 'unlink "S-su1-leaf2"[1]')
    _console(lab, 'unlink "S-su1-leaf2"[2]')
    _console(lab, 'link "S-su1-leaf2"[1] "H-gpu02 mlx5_1"[1]')
    _console(lab, 'link "S-su1-leaf2"[2] "H-gpu01 mlx5_1"[1]')
    try:
        code, doc = _validate(lab, "--all")
        assert code == 4
        failed = {(c, item) for c, item, _ in _failed(doc) if c == "ib-cabling"}
        assert ("ib-cabling", '"su1-leaf2"[1] - "gpu01 mlx5_1"[1]') in failed or any(
            "gpu01 mlx5_1" in item and "su1-leaf2" in item for _, item in failed
        ), failed
        assert any("gpu02 mlx5_1" in item for _, item in failed), failed
    finally:
        _console(lab, 'unlink "S-su1-leaf2"[1]')
        _console(lab, 'unlink "S-su1-leaf2"[2]')
        _console(lab, 'link "S-su1-leaf2"[1] "H-gpu01 mlx5_1"[1]')
        _console(lab, 'link "S-su1-leaf2"[2] "H-gpu02 mlx5_1"[1]')
        for port in (1, 2):
            _clear(lab, "su1-leaf2", port)
    assert _green(lab)["ok"] is True


def _path_pkeys(lab: Path, src: str, dst: str) -> list[str]:
    out = _diag(lab, "saquery", "-p", "--src-to-dst", f"{_lid(lab, src)}:{_lid(lab, dst)}")
    return re.findall(r"pkey\.+(0x[0-9A-Fa-f]+)", out)


def test_partitions_are_enforced_between_the_tenants(lab: Path) -> None:
    _green(lab)
    # gpu03 and gpu04 (tenant-b) share PKey 0x0102; gpu04 and gpu01 (tenant-a) share nothing but the
    # default partition, where both are limited members: no path at all.
    assert _path_pkeys(lab, "gpu03 mlx5_0", "gpu04 mlx5_0") == ["0x8102"]
    assert _path_pkeys(lab, "gpu04 mlx5_1", "gpu01 mlx5_1") == []
    pkeys = set(re.findall(r"0x[0-9a-f]{4}", _diag(lab, "smpquery", "pkeys", _lid(lab, "gpu04 mlx5_0")))) - {"0x0000"}
    assert pkeys == {"0x7fff", "0x8102"}
