"""`nornir restart --lab` against the lab (root only): a switch's reboot is a restart of its FRR daemons.
The compute plane is restarted one failure domain at a time; every switch's daemons are new processes
afterwards, each came back with the sessions it had, and validate passes again."""

from __future__ import annotations

import json
import os
import time

import pytest
from conftest import INVENTORY, run
from lab_slot import intent_file, ns, up_args

from gpufabric.lab import daemons, frr_node, syslog

pytestmark = [
    pytest.mark.own_lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)"),
]

PLANE = ("--plane", "compute")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lab")
    state, intent = folder / "state", intent_file(INVENTORY / "fabric.yml", folder)
    up = run("gpufabric", "lab", "up", str(intent), "--no-hosts", *up_args(), "--state-dir", str(state))
    assert up.returncode == 0, up.stderr
    yield state, intent
    run("gpufabric", "lab", "down", "--state-dir", str(state))


def _validate_failures(lab) -> list[tuple[str, str, str]]:
    state, intent = lab
    done = run("nornir", "validate", str(intent), *PLANE, "--state-dir", str(state), "--format", "json")
    assert done.returncode in (0, 4), done.stderr
    return [(r["check"], r["device"], r["item"]) for r in json.loads(done.stdout)["results"] if r["verdict"] == "fail"]


def _healthy(lab, timeout: float = 180.0) -> list[tuple[str, str, str]]:
    deadline = time.monotonic() + timeout
    while True:
        found = _validate_failures(lab)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(2)


def test_a_rolling_restart_restarts_each_switchs_daemons_and_waits_for_its_sessions(lab):
    state, intent = lab
    pushed = run("nornir", "push", str(intent), *PLANE, "--state-dir", str(state), "--json")
    assert pushed.returncode == 0, pushed.stderr
    assert _healthy(lab) == []
    done = run("nornir", "validate", str(intent), *PLANE, "--state-dir", str(state), "--format", "json")
    releases = [r for r in json.loads(done.stdout)["results"] if r["check"] == "release"]
    assert releases and all(r["verdict"] == "pass" for r in releases)  # the machine's FRR is the pinned 8.4
    switches = sorted({r["device"] for r in releases})
    before = {n: frr_node.pids(ns(n))["bgpd"] for n in switches}
    restarted = run("nornir", "restart", str(intent), *PLANE, "--state-dir", str(state), "--drain", "never", "--json")
    assert restarted.returncode == 0, restarted.stderr
    result = json.loads(restarted.stdout)
    assert result["ok"] and result["target"] == "lab" and not result["drain"]
    assert {d["device"]: d["state"] for d in result["devices"]} == dict.fromkeys(switches, "done")
    assert {d["mode"] for d in result["devices"]} == {"daemons"}
    assert result["batches"][0]["domain"].startswith("canary") and len(result["batches"]) >= 3
    after = {n: frr_node.pids(ns(n))["bgpd"] for n in switches}
    assert all(after[n] != before[n] for n in switches), (before, after)  # every bgpd is a new process
    # Each restarted daemon runs at the lab's control-plane priority again, as `lab up` started it.
    control = ("zebra", "bgpd", "bfdd")
    running = {(n, d): pid for n in switches for d, pid in frr_node.pids(ns(n)).items() if d in control}
    niceness = {key: os.getpriority(os.PRIO_PROCESS, pid) for key, pid in running.items()}
    assert niceness and set(niceness.values()) == {frr_node.CONTROL_PLANE_NICENESS}, niceness
    assert _healthy(lab) == []
    _said_by_each_new_bgpd(state, after)


def _said_by_each_new_bgpd(state, bgpd: dict[str, int]) -> None:
    """What each restarted switch's new bgpd logged is in that switch's log (the lab's syslog, named by the
    sender's PID as the kernel gives it): its sessions coming up again. Skipped where the machine's own syslog
    daemon has the messages."""
    if daemons.recorded_syslog() is None:
        pytest.skip("this machine's syslog daemon serves /dev/log: FRR's messages are in its logs")
    for switch, pid in bgpd.items():
        log = (state / "nodes" / ns(switch) / syslog.LOG_NAME).read_text()
        ups = [line for line in log.splitlines() if f" bgpd[{pid}]: " in line and "%ADJCHANGE: neighbor" in line]
        assert any(line.endswith(" Up") for line in ups), (switch, pid, log[-2000:])
        assert all(line.isprintable() for line in log.splitlines())
