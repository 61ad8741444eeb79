"""The lab (real FRR switches in namespaces, root only): `nornir push` sets the kernel's ECMP hash over the
L4 ports on every switch, and `nornir validate` finds a switch whose hash policy was changed by hand."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run
from tests.lab_slot import fabric, ns, up_args

pytestmark = [
    pytest.mark.lab,
    pytest.mark.own_lab,  # its lab is its worker's (tests/lab_slot.py): it runs beside the other lab tests
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)"),
]

PLANE = ("--plane", "compute")
POLICY = "/proc/sys/net/ipv4/fib_multipath_hash_policy"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    state = tmp_path_factory.mktemp("lab") / "state"
    up = run("gpufabric", "lab", "up", str(fabric()), "--no-hosts", *up_args(), "--state-dir", str(state))
    assert up.returncode == 0, up.stderr
    yield state
    run("gpufabric", "lab", "down", "--state-dir", str(state))


@pytest.fixture(scope="module")
def pushed(lab):
    done = run("nornir", "push", *PLANE, "--state-dir", str(lab), "--json")
    assert done.returncode == 0, done.stderr
    return lab


def _policy(node: str) -> str:
    done = subprocess.run(["ip", "netns", "exec", ns(node), "cat", POLICY], check=True, capture_output=True, text=True)
    return done.stdout


def _set_policy(node: str, value: int) -> None:
    subprocess.run(["ip", "netns", "exec", ns(node), "sh", "-c", f"echo {value} > {POLICY}"], check=True)


def _hash_results(state: Path) -> list[tuple[str, str, str, str]]:
    done = run("nornir", "validate", *PLANE, "--state-dir", str(state), "--format", "json", "--all")
    assert done.returncode in (0, 4), done.stderr
    results = json.loads(done.stdout)["results"]
    return [
        (r["device"], r["expected"], r["observed"], r["verdict"])
        for r in results
        if r["check"] == "load-balancing" and r["item"] == "net.ipv4.fib_multipath_hash_policy"
    ]


def test_push_sets_the_l4_hash_and_validate_finds_a_planted_change(pushed):
    assert _policy("cmp-spine1").strip() == "1"
    found = _hash_results(pushed)
    assert found and all(r[1:] == ("1", "1", "pass") for r in found)
    _set_policy("cmp-spine1", 0)
    try:
        after = _hash_results(pushed)
        assert ("cmp-spine1", "1", "0", "fail") in after
        assert [r for r in after if r[3] == "fail"] == [("cmp-spine1", "1", "0", "fail")]
    finally:
        _set_policy("cmp-spine1", 1)
