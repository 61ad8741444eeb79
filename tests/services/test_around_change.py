"""What a push, a restart or an upgrade does around a batch's change (gpufabric/maintenance/around.py), with
the switches' drain, undrain and wait replaced by recorders and a scheduler double that holds jobs as told:

- the servers behind a rail leaf are taken out of the scheduler before the leaf is drained; a job still
  running when the job wait ends refuses the batch, and no switch is touched, the nodes put back;
- a spine has no server behind it: the scheduler is not asked;
- the wait for the traffic leaves a rail leaf's ports out of the rate check (its servers' own traffic);
- traffic that does not leave undoes the batch: the switches undrained, the nodes put back;
- the nodes go back only once every switch of their batch is back in service;
- each step is a record of the audit trail.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpufabric.fleet.push_id import new_push_id
from gpufabric.maintenance import around
from gpufabric.maintenance.service import MaintenanceResult, Settle, SwitchState
from gpufabric.maintenance.wait import WaitResult
from gpufabric.push.audit import AuditLog, Trail, Who
from gpufabric.scheduler.model import Mark, NodeState
from tests.conftest import INVENTORY, example_plan

PLAN = example_plan(INVENTORY / "fabric.yml")


class Jobs:
    """A scheduler: `running` node -> job ids still on it (the test ends them); what was done, in order."""

    kind = "slurm"

    def __init__(self, running: dict[str, list[str]] | None = None) -> None:
        self.running = running or {}
        self.reasons: dict[str, str] = {}
        self.log: list[str] = []

    def nodes(self, names: Sequence[str]) -> dict[str, NodeState]:
        return {
            n: NodeState(n, n in self.reasons, self.reasons.get(n, ""), tuple(self.running.get(n, ())))
            for n in names
            if n.startswith("gpu")  # the storage servers are not in this scheduler
        }

    def take_out(self, node: str, mark: Mark) -> None:
        self.reasons[node] = mark.text
        self.log.append(f"drain {node}")

    def put_back(self, node: str, mark: Mark) -> bool:
        if self.reasons.get(node) != mark.text:
            return False
        del self.reasons[node]
        self.log.append(f"resume {node}")
        return True

    def move(self, states: dict[str, NodeState]) -> list[str]:
        return []

    def marked(self) -> list[NodeState]:
        return []


class Switches:
    """The switches' drain, undrain and wait, recorded; `leaves_in` seconds the traffic takes (None: never)."""

    def __init__(self, log: list[str], leaves: bool = True) -> None:
        self.log, self.leaves = log, leaves
        self.terminating: list[str] = []
        self.read_before: list[tuple[str, bool]] = []  # (drain|undrain, whether each switch is read first)

    def drain(self, fleet: Any, names: list[str], ident: Any, **kw: Any) -> MaintenanceResult:
        self.read_before.append(("drain", kw.get("read_before", True)))
        self.log += [f"switch-drain {n}" for n in names]
        states = tuple(SwitchState(n, True, False, {"drained": True, "mechanism": "gshut"}) for n in names)
        return MaintenanceResult("drain", ident.id, "lab", states, None, 0.0)

    def undrain(self, fleet: Any, names: list[str], ident: Any, **kw: Any) -> MaintenanceResult:
        self.read_before.append(("undrain", kw.get("read_before", True)))
        self.log += [f"switch-undrain {n}" for n in names]
        states = tuple(SwitchState(n, True, False, {"drained": False}) for n in names)
        waited = WaitResult(True, 1.0) if kw["settle"].wait else None
        return MaintenanceResult("undrain", ident.id, "lab", states, waited, 0.0)

    def wait(self, plan: Any, names: list[str], connect: Any, cap: Any, **kw: Any) -> WaitResult:
        self.log.append(f"wait {','.join(names)}")
        self.terminating = list(kw["terminating"])
        return WaitResult(True, 2.5) if self.leaves else WaitResult(False, kw["timeout"], ("cmp-spine1 swp1: 9 b/s",))


@pytest.fixture
def made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def build(jobs: Jobs, leaves: bool = True, job_wait: float = 0.0) -> tuple[around.AroundChange, Switches, Path]:
        switches = Switches(jobs.log, leaves)
        monkeypatch.setattr(around, "drain_switches", switches.drain)
        monkeypatch.setattr(around, "undrain_switches", switches.undrain)
        monkeypatch.setattr(around, "wait_drained", switches.wait)
        monkeypatch.setattr(around, "ecmp_caps", lambda fleet, names: {})
        fleet: Any = SimpleNamespace(plan=PLAN, access=SimpleNamespace())
        path = tmp_path / "audit.jsonl"
        ident = new_push_id()
        trail = Trail(AuditLog(path), ident.id, ident.started, "f", Who("a", "b", None, "c"), False, "lab", {})
        policy = around.SchedulerPolicy((jobs,), job_wait, False)
        change = around.AroundChange(fleet, ident, Settle(timeout=30.0), policy, trail)
        return change, switches, path

    return build


def _trail(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_job_still_running_refuses_the_batch_and_touches_no_switch(made) -> None:
    jobs = Jobs({"gpu01": ["job 7 running"]})
    change, _, path = made(jobs, job_wait=0.0)
    failed = around.RollDrainer(change).drain(["cmp-su1-leaf1"], "x", "restart")
    assert "job 7 running" in str(failed["cmp-su1-leaf1"]) and "refused, nothing was changed" in str(failed)
    assert jobs.log == ["drain gpu01", "drain gpu02", "resume gpu01", "resume gpu02"]  # no switch-drain
    assert jobs.reasons == {}
    (record,) = _trail(path)
    assert record["status"] == "scheduler-refused" and record["resumed"] == ["gpu01", "gpu02"]
    assert record["holding"] == {"gpu01": ["job 7 running"]} and record["switch"] == "cmp-su1-leaf1"


def test_a_free_rail_leaf_is_drained_after_its_servers_and_they_come_back_after_it(made) -> None:
    jobs = Jobs()
    change, switches, path = made(jobs)
    drainer = around.RollDrainer(change)
    assert drainer.drain(["cmp-su1-leaf1", "cmp-su2-leaf1"], "x", "restart") == {
        "cmp-su1-leaf1": None,
        "cmp-su2-leaf1": None,
    }
    assert jobs.log == [
        "drain gpu01", "drain gpu02", "drain gpu03", "drain gpu04",
        "switch-drain cmp-su1-leaf1", "switch-drain cmp-su2-leaf1", "wait cmp-su1-leaf1,cmp-su2-leaf1",
    ]  # fmt: skip
    assert switches.terminating == ["cmp-su1-leaf1", "cmp-su2-leaf1"]  # their ports carry their servers' traffic
    assert set(jobs.reasons) == {"gpu01", "gpu02", "gpu03", "gpu04"}
    assert drainer.undrain(["cmp-su1-leaf1"], "x") == {"cmp-su1-leaf1": None}
    assert set(jobs.reasons) == {"gpu01", "gpu02", "gpu03", "gpu04"}  # the batch is not all back yet
    drainer.undrain(["cmp-su2-leaf1"], "x")
    assert jobs.reasons == {} and jobs.log[-4:] == ["resume gpu01", "resume gpu02", "resume gpu03", "resume gpu04"]
    # A change drains what it found changing and undrains what it drained: no switch is read before.
    assert switches.read_before == [("drain", False), ("undrain", False), ("undrain", False)]
    statuses = [r["status"] for r in _trail(path)]
    assert statuses == ["scheduler-drained", "drained", "drained", "traffic-left", "undrained", "undrained",
                        "scheduler-resumed"]  # fmt: skip
    (drained,) = [r for r in _trail(path) if r["status"] == "scheduler-drained"]
    assert drained["nodes"] == ["gpu01", "gpu02", "gpu03", "gpu04"] and drained["scheduler"] == "slurm"


def test_a_spine_asks_no_scheduler(made) -> None:
    jobs = Jobs({"gpu01": ["job 7 running"]})
    change, switches, _ = made(jobs)
    assert around.PushDrainer(change).around.take(["cmp-spine1"], {"cmp-spine1": "bgp-reset"}) == {}
    assert jobs.log == ["switch-drain cmp-spine1", "wait cmp-spine1"] and switches.terminating == []


def test_traffic_that_does_not_leave_undoes_the_batch(made) -> None:
    jobs = Jobs()
    change, _, path = made(jobs, leaves=False)
    failed = change.take(["cmp-su1-leaf1"], {})
    assert "did not leave within 30 s" in failed["cmp-su1-leaf1"]
    assert jobs.log[-3:] == ["switch-undrain cmp-su1-leaf1", "resume gpu01", "resume gpu02"]
    assert jobs.reasons == {} and change.held == []
    assert "traffic-stayed" in [r["status"] for r in _trail(path)]


def test_the_plan_is_read_once_for_every_batch_of_a_change(made, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which servers stand behind each switch comes from one reading of the plan for the whole change (a
    32k fabric's leaf cost 60 ms a reading, twice a leaf, 128 leaves a batch), with the same answers."""
    made_behind: list[object] = []

    class Counted(around.Behind):
        def __init__(self, plan: Any) -> None:
            made_behind.append(plan)
            super().__init__(plan)

    monkeypatch.setattr(around, "Behind", Counted)
    jobs = Jobs()
    change, switches, _ = made(jobs)
    drainer = around.RollDrainer(change)
    assert drainer.drain(["cmp-su1-leaf1"], "x", "restart") == {"cmp-su1-leaf1": None}
    drainer.undrain(["cmp-su1-leaf1"], "x")
    assert drainer.drain(["cmp-su2-leaf1", "cmp-spine1"], "x", "restart") == {"cmp-su2-leaf1": None, "cmp-spine1": None}
    assert made_behind == [PLAN]
    assert jobs.log[:2] == ["drain gpu01", "drain gpu02"] and jobs.log[-5:-3] == ["drain gpu03", "drain gpu04"]
    assert switches.terminating == ["cmp-su2-leaf1"]  # the spine's ports are held to the rate
