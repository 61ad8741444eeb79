"""A rolling restart's audit trail, interrupted or refused: each switch's end is written as its batch ends, so
a restart stopped later (Ctrl-C, SIGTERM, a bug) still has the finished batches' ends on record, and every
other switch gets a record naming the stop and what is left drained; a restart refused by the fabric's lock
records each switch as refused. The rollout itself is replaced here (no switch is reached): what is checked is
the service's trail around it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from gpufabric.fleet.args import FleetArgs
from gpufabric.push.lock import FabricBusyError, fabric_lock
from gpufabric.upgrade import service
from gpufabric.upgrade.roll import Outcome, Rolled, State
from gpufabric.upgrade.service import RestartRequest, restart

INTENT = str(ROOT / "inventory" / "examples" / "multi-vendor.yml")
SWITCHES = ("cmp-su1-leaf1", "cmp-su1-leaf2", "cmp-su2-leaf1")


@pytest.fixture
def request_(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RestartRequest:
    monkeypatch.setenv("GPUFABRIC_SWITCH_PASSWORD", "roll-trail-not-a-secret")
    monkeypatch.setattr(service, "fabric_lock", lambda fabric, **kw: fabric_lock(fabric, tmp_path / "locks", **kw))
    fleet = FleetArgs(file=INTENT, devices=SWITCHES, known_hosts=tmp_path / "known_hosts")
    return RestartRequest(fleet, drain=False, validate=False, audit_log=tmp_path / "audit.jsonl")


def _trail(request: RestartRequest) -> dict[str, dict[str, Any]]:
    assert request.audit_log is not None
    records = [json.loads(line) for line in request.audit_log.read_text().splitlines()]
    assert len(records) == len({r["switch"] for r in records}), records  # one end per switch
    return {r["switch"]: r for r in records}


def test_an_interrupted_restart_records_every_switch(request_, monkeypatch):
    def first_batch_then_interrupted(batches, steps, drainer, job, watcher) -> Rolled:
        first = batches[0]
        watcher.batch_done(first, [Outcome(n, State.DONE, batch=first.number, mode="daemons") for n in first.devices])
        raise KeyboardInterrupt  # Ctrl-C, or SIGTERM as the command line turns it

    monkeypatch.setattr(service, "roll", first_batch_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        restart(request_)
    trail = _trail(request_)
    assert set(trail) == set(SWITCHES)
    done = {n for n, r in trail.items() if r["status"] == "restart done"}
    assert len(done) == 1 and trail[done.pop()]["reason"] == "rebooted (daemons)"  # the canary's batch ended
    stopped = [r for r in trail.values() if r["status"] == "restart failed"]
    assert len(stopped) == len(SWITCHES) - 1
    for r in stopped:
        assert "the restart stopped: KeyboardInterrupt" in r["reason"], r
        assert "nornir maintenance off" in r["reason"], r


def test_a_restart_the_fabric_lock_refuses_records_every_switch_refused(request_, tmp_path, monkeypatch):
    def never(*args: Any) -> Rolled:
        raise AssertionError("the rollout ran without the fabric's lock")

    monkeypatch.setattr(service, "roll", never)
    with fabric_lock("multi-vendor", tmp_path / "locks"), pytest.raises(FabricBusyError):
        restart(request_)
    trail = _trail(request_)
    assert set(trail) == set(SWITCHES) and {r["status"] for r in trail.values()} == {"refused"}
