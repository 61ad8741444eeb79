"""`nornir restart --lab` against the lab (root only): a switch's reboot is a restart of its FRR daemons.
The compute plane is restarted one failure domain at a time; every switch's daemons are new processes
afterwards, each came back with the sessions it had, and validate passes again."""

from __future__ import annotations

import json
import os
import time

import pytest
from conftest import run

from gpufabric.lab import frr_node, syslog

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)")

PLANE = ("--plane", "compute")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    state = tmp_path_factory.mktemp("lab") / "state"
    up = run("gpufabric", "lab", "up", "--no-hosts", "--state-dir", str(state))
    assert up.returncode == 0, up.stderr
    yield state
    run("gpufabric", "lab", "down", "--state-dir", str(state))


def _validate_failures(state) -> list[tuple[str, str, str]]:
    done = run("nornir", "validate", *PLANE, "--state-dir", str(state), "--format", "json")
    assert done.returncode in (0, 4), done.stderr
    return [(r["check"], r["device"], r["item"]) for r in json.loads(done.stdout)["results"] if r["verdict"] == "fail"]


def _healthy(state, timeout: float = 180.0) -> list[tuple[str, str, str]]:
    deadline = time.monotonic() + timeout
    while True:
        found = _validate_failures(state)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(2)


def test_a_rolling_restart_restarts_each_switchs_daemons_and_waits_for_its_sessions(lab):
    pushed = run("nornir", "push", *PLANE, "--state-dir", str(lab), "--json")
    assert pushed.returncode == 0, pushed.stderr
    assert _healthy(lab) == []
    done = run("nornir", "validate", *PLANE, "--state-dir", str(lab), "--format", "json")
    releases = [r for r in json.loads(done.stdout)["results"] if r["check"] == "release"]
    assert releases and all(r["verdict"] == "pass" for r in releases)  # the machine's FRR is the pinned 8.4
    switches = sorted({r["device"] for r in releases})
    before = {n: frr_node.pids(n)["bgpd"] for n in switches}
    restarted = run("nornir", "restart", *PLANE, "--state-dir", str(lab), "--drain", "never", "--json")
    assert restarted.returncode == 0, restarted.stderr
    result = json.loads(restarted.stdout)
    assert result["ok"] and result["target"] == "lab" and not result["drain"]
    assert {d["device"]: d["state"] for d in result["devices"]} == dict.fromkeys(switches, "done")
    assert {d["mode"] for d in result["devices"]} == {"daemons"}
    assert result["batches"][0]["domain"].startswith("canary") and len(result["batches"]) >= 3
    after = {n: frr_node.pids(n)["bgpd"] for n in switches}
    assert all(after[n] != before[n] for n in switches), (before, after)  # every bgpd is a new process
    # Each restarted daemon runs at the lab's control-plane priority again, as `lab up` started it.
    niceness = {(n, d): os.getpriority(os.PRIO_PROCESS, pid) for n in switches for d, pid in frr_node.pids(n).items()
                if d in ("zebra", "bgpd", "bfdd")}  # fmt: skip
    assert niceness and set(niceness.values()) == {frr_node.CONTROL_PLANE_NICENESS}, niceness
    assert _healthy(lab) == []
    _said_by_each_new_bgpd(lab, after)


def _said_by_each_new_bgpd(state, bgpd: dict[str, int]) -> None:
    """What each restarted switch's new bgpd logged is in that switch's log (the lab's syslog, named by the
    sender's PID as the kernel gives it): its sessions coming up again. Skipped where the machine's own syslog
    daemon has the messages."""
    if "syslog" not in json.loads((state / "state.json").read_text())["pids"]:
        pytest.skip("this machine's syslog daemon serves /dev/log: FRR's messages are in its logs")
    for switch, pid in bgpd.items():
        log = (state / "nodes" / switch / syslog.LOG_NAME).read_text()
        ups = [line for line in log.splitlines() if f" bgpd[{pid}]: " in line and "%ADJCHANGE: neighbor" in line]
        assert any(line.endswith(" Up") for line in ups), (switch, pid, log[-2000:])
        assert all(line.isprintable() for line in log.splitlines())
