"""The SONiC example in the lab: its switches' FRR part (BGP in split-unified mode) runs for real (root only).

Every planned platform runs as frr in the lab (no SONiC image runs here), so this proves the plan,
the FRR configuration and the checks `validate` makes for a SONiC fabric, not SONiC's own daemons.
SONiC's own traffic shift is run too: the bgp container's TSA, TSB and TSC scripts and bgpcfgd's TSA
templates (from a sonic-buildimage tree, tests/sonic_ts_scripts.py) against a spine's real FRR, holding
the BGP part of the frr.conf gpufabric renders for the SONiC switch.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT, run

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.fleet.lab.topology import topology
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from tests.lab_slot import intent_file, ns, up_args
from tests.sonic_ts_scripts import TsScripts, buildimage

pytestmark = [
    pytest.mark.lab,
    pytest.mark.own_lab,  # its lab is its worker's (tests/lab_slot.py): it runs beside the other lab tests
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)"),
]

EXAMPLE = str(ROOT / "inventory" / "examples" / "sonic.yml")
PLANE = ("--plane", "compute")


@pytest.fixture(scope="module")
def intent(tmp_path_factory) -> str:
    """The example as this worker's lab runs it (its OOB addresses in the worker's own space)."""
    return str(intent_file(EXAMPLE, tmp_path_factory.mktemp("intent")))


@pytest.fixture(scope="module")
def lab(tmp_path_factory, intent):
    state = tmp_path_factory.mktemp("lab") / "state"
    up = run("gpufabric", "lab", "up", intent, "--no-hosts", *up_args(), "--state-dir", str(state))
    assert up.returncode == 0, up.stderr
    yield state
    run("gpufabric", "lab", "down", "--state-dir", str(state))


def _validate(state, intent: str) -> list[dict]:
    done = run("nornir", "validate", intent, *PLANE, "--state-dir", str(state), "--format", "json")
    assert done.returncode in (0, 4), done.stderr
    return json.loads(done.stdout)["results"]


def test_the_sonic_fabric_converges_with_every_parallel_path_used(lab, intent):
    pushed = run("nornir", "push", intent, *PLANE, "--state-dir", str(lab), "--json")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    # `push` waits for the BGP sessions; the routes over the parallel links arrive a moment later.
    deadline = time.monotonic() + 180  # bounds a fabric that never converges; a loaded machine is slow
    while True:
        results = _validate(lab, intent)
        failed = [r for r in results if r["verdict"] == "fail"]
        if not failed or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert failed == []
    # A leaf reaches each of the 7 other leaves over its 4 parallel links to each of the two spines.
    wide = [r for r in results if r["check"] == "ecmp-width" and r["observed"] == "8 paths"]
    assert len(wide) == 8 * 7
    assert {r["device"] for r in wide} == {f"cmp-leaf{u}{x}" for u in "12" for x in "abcd"}
    sessions = [r for r in results if r["check"] == "bgp-session"]
    assert len(sessions) == 128


LAB_PLAN = topology(load_intent(EXAMPLE)).plan  # the lab's plan: every switch as frr, the same addresses and ports
LEAVES = tuple(f"cmp-leaf{u}{x}" for u in "12" for x in "abcd")
DRAINED = "cmp-spine1"


def _loopback(name: str) -> str:
    (d,) = [d for d in LAB_PLAN.devices() if d.name == name]
    return ".".join(str(d.loopback >> s & 255) for s in (24, 16, 8, 0)) + "/32"


def _facing(spine: str) -> dict[str, set[str]]:
    """leaf -> its ports cabled to `spine`."""
    out: dict[str, set[str]] = {}
    for link in LAB_PLAN.links():
        if link.kind == "fabric" and link.b == spine:
            out.setdefault(link.a, set()).add(link.a_port)
    return out


def _vtysh(node: str, command: str) -> str:
    return subprocess.run(["vtysh", "-N", ns(node), "-c", command], capture_output=True, text=True, check=True).stdout


def _paths() -> dict[str, dict[str, set[str]]]:
    """leaf -> other leaf's loopback -> the ports its installed BGP route leaves by (read with vtysh)."""
    found: dict[str, dict[str, set[str]]] = {}
    for leaf in LEAVES:
        wanted = {_loopback(o) for o in LEAVES if o != leaf}
        routes = json.loads(_vtysh(leaf, "show ip route bgp json"))
        found[leaf] = {
            prefix: {h.get("interfaceName", "") for e in entries if e.get("selected")
                     for h in e.get("nexthops", []) if h.get("fib")}
            for prefix, entries in routes.items() if prefix in wanted
        }  # fmt: skip
    return found


def _until(check, what: str, seconds: float = 180) -> None:  # bounds a fabric that never converges
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(1)


def _all_wide() -> bool:
    paths = _paths()
    return all(len(paths[leaf]) == 7 and all(len(h) == 8 for h in paths[leaf].values()) for leaf in LEAVES)


def _around(spine: str) -> bool:
    """Every leaf reaches the 7 others over the 4 links to the other spine, none to `spine`."""
    facing, paths = _facing(spine), _paths()
    return all(
        len(paths[leaf]) == 7 and all(len(h) == 4 and not h & facing[leaf] for h in paths[leaf].values())
        for leaf in LEAVES
    )


def test_sonic_s_own_tsa_moves_the_traffic_off_the_spine_and_tsb_brings_it_back(lab, intent, tmp_path: Path) -> None:
    tree = buildimage()
    # The spine's FRR takes the BGP part of the frr.conf rendered for it as a SONiC switch (its outbound policy).
    plan = build_plan(load_intent(intent))
    (spine,) = [d for d in plan.devices() if d.name == DRAINED]
    frr = render_device(plan, spine, LinkIndex(plan)).files[f"{DRAINED}.frr.conf"]
    part = tmp_path / "sonic-bgp.conf"
    part.write_text(frr[frr.index("router bgp") :].removesuffix("end\n"))
    loaded = subprocess.run(["vtysh", "-N", ns(DRAINED), "-f", str(part)], capture_output=True, text=True, check=False)
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    _until(_all_wide, "every leaf reaching the others over 8 paths with the SONiC policy bound")
    ts = TsScripts(tree, tmp_path / "ts", namespace=ns(DRAINED))
    assert ts.run("TSC")[0].strip() == "System Mode: Normal"

    said, _ = ts.run("TSA")
    assert said.strip() == "System Mode: Normal -> Maintenance"
    assert ts.run("TSC")[0].strip() == "System Mode: Maintenance"
    _until(lambda: _around(DRAINED), f"every leaf routing around {DRAINED}")
    # The drained spine's own loopback is still announced, marked with SONiC's traffic-shift community.
    shown = json.loads(_vtysh("cmp-leaf1a", f"show ip bgp {_loopback(DRAINED)} json"))
    communities = {p.get("community", {}).get("string") for p in shown.get("paths", [])}
    assert "12345:12345" in communities, shown

    said, _ = ts.run("TSB")
    assert said.strip() == "System Mode: Maintenance -> Normal"
    assert ts.run("TSC")[0].strip() == "System Mode: Normal"
    _until(_all_wide, "every leaf back to 8 paths after TSB")
