"""The SONiC example in the lab: its switches' FRR part (BGP in split mode) runs for real (root only).

Every planned platform runs as frr in the lab (no SONiC image runs here), so this proves the plan,
the FRR configuration and the checks `validate` makes for a SONiC fabric, not SONiC's own daemons.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from conftest import ROOT, run

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)"),
]

EXAMPLE = str(ROOT / "inventory" / "examples" / "sonic.yml")
PLANE = ("--plane", "compute")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    state = tmp_path_factory.mktemp("lab") / "state"
    up = run("gpufabric", "lab", "up", EXAMPLE, "--no-hosts", "--state-dir", str(state))
    assert up.returncode == 0, up.stderr
    yield state
    run("gpufabric", "lab", "down", "--state-dir", str(state))


def _validate(state) -> list[dict]:
    done = run("nornir", "validate", EXAMPLE, *PLANE, "--state-dir", str(state), "--format", "json")
    assert done.returncode in (0, 4), done.stderr
    return json.loads(done.stdout)["results"]


def test_the_sonic_fabric_converges_with_every_parallel_path_used(lab):
    pushed = run("nornir", "push", EXAMPLE, *PLANE, "--state-dir", str(lab), "--json")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    # `push` waits for the BGP sessions; the routes over the parallel links arrive a moment later.
    deadline = time.monotonic() + 180  # bounds a fabric that never converges; a loaded machine is slow
    while True:
        results = _validate(lab)
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
