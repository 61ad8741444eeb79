"""`push --max-capacity-loss`: batches of several failure domains within a capacity budget, and the
judge (gpufabric.push.proof) that proves a rollout's log kept it, independently of the planner."""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner
from conftest import example_plan, sized
from napalm.base import NetworkDriver

from gpufabric.cli import cli
from gpufabric.fleet.target import WORKERS
from gpufabric.plan.model import Plan
from gpufabric.push.audit import AuditLog, SwitchFacts, Trail, Who, read
from gpufabric.push.budget import Budget, BudgetError, parse_budget
from gpufabric.push.proof import Judge, Outage, claims_problems, from_events, from_trail
from gpufabric.push.targets import Batch, batches, domains_of

EXAMPLES = ["inventory/fabric.yml", "examples/multi-vendor.yml", "examples/superpod-1su.yml",
            "examples/superpod-4su.yml", "examples/sonic.yml", "examples/three-tier-32k.yml"]  # fmt: skip
THIRTY_TWO_K = "inventory/examples/three-tier-32k.yml"


def _plan(path: str) -> Plan:
    return example_plan(path if path.startswith("inventory/") else f"inventory/{path}")


def _rails(plan: Plan, devices: tuple[str, ...]) -> int:
    """Most NICs of one plane that one server has on these switches (counted here, from the servers)."""
    down = set(devices)
    lost = Counter((s.name, nic.plane) for s in plan.servers for nic in s.nics if nic.leaf in down)
    return max(lost.values(), default=0)


def test_a_budget_is_a_percentage():
    assert parse_budget("12.5%") == pytest.approx(0.125)
    assert parse_budget(" 25 ") == pytest.approx(0.25)
    assert parse_budget("0%") == 0
    for bad in ("", "abc", "-1%", "101", "nan", "inf%"):
        with pytest.raises(BudgetError):
            parse_budget(bad)


@pytest.mark.parametrize("example", sized(EXAMPLES))
@pytest.mark.parametrize("budget", [0.125, 0.25])
def test_every_batch_keeps_the_budget_no_server_loses_two_rails_every_switch_once(example, budget):
    plan = _plan(example)
    targets = list(plan.devices())
    planner = Budget(plan, budget)
    planned = planner.batches(plan, targets, None, width=WORKERS)
    pushed = [n for b in planned for n in b.devices]
    assert sorted(pushed) == sorted(d.name for d in targets) and len(pushed) == len(set(pushed))
    assert planned[0].domain.startswith("canary") and len(planned[0].devices) == 1
    assert [b.number for b in planned] == list(range(1, len(planned) + 1))
    plane = {d.name: d.plane for d in targets}
    domain = {d.name: d.failure_domain for d in targets}
    judge = Judge(plan, budget)
    for b in planned:
        assert _rails(plan, b.devices) <= 1, b
        verdict = judge.judge(Outage(f"batch {b.number}", frozenset(b.devices)))
        assert verdict.held, (b.number, b.domain, verdict.problems)
        cost = planner.cost(b.devices)
        for p in {plane[n] for n in b.devices}:
            if len({domain[n] for n in b.devices if plane[n] == p}) > 1:  # several domains of a plane: in budget
                assert planner.planes[p].cost({n for n in b.devices if plane[n] == p}).within(budget), b
        # The planner's figures and the judge's (another model: BGP's path vector) agree.
        assert cost.rails_lost == verdict.rails_lost
        assert cost.worst_share == pytest.approx(verdict.worst_share)
        assert cost.reach_share == pytest.approx(verdict.reach_share)
    assert len(planned) <= len(batches(plan, targets, None, width=WORKERS))
    _each_plane_opens_with_its_next_domain(plan, planned)


def _each_plane_opens_with_its_next_domain(plan: Plan, planned: list[Batch]) -> None:
    """A plane's part of a batch opens with the first of its domains not yet pushed (leaves before spines),
    whatever else of the plane the budget lets ride along."""
    domains = domains_of(plan, list(plan.devices()))  # in today's order
    pushed = set(planned[0].devices)
    for b in planned[1:]:
        parts = [(plan.device(ds[0]).plane, domain) for domain, ds in b.split()]
        for p in dict.fromkeys(plane for plane, _ in parts):
            left = [(plane, name) for plane, name, ms in domains if plane == p and not pushed.issuperset(ms)]
            assert next(part for part in parts if part[0] == p) == left[0], (b.number, p)
        pushed.update(b.devices)


@pytest.mark.parametrize("example", sized(EXAMPLES))
@pytest.mark.parametrize("budget", [0.0, 1e-6])
def test_a_budget_of_nothing_gives_todays_batches(example, budget):
    """Batch for batch, with the same domains: on the 32k example the storage plane's first domain does not
    fit beside the compute plane's (today's bound: the largest domain), so it goes in a batch of its own,
    under a budget of nothing as without one."""
    plan = _plan(example)
    targets = list(plan.devices())
    today = [(b.domain, b.devices) for b in batches(plan, targets, None, width=WORKERS)]
    planned = Budget(plan, budget).batches(plan, targets, None, width=WORKERS)
    assert [(b.domain, b.devices) for b in planned] == today


@pytest.mark.slow
def test_the_32k_rollout_takes_a_few_batches_at_twelve_and_a_half_percent():
    """Eight rails, each with eight spine positions (every leaf keeps 56 of its 64 spines), the four
    superspine places alone (each costs every spine one of its four superspines: what the design
    tolerates); the storage plane side by side, its leaves a side at a time and two of its 16 spines at a
    time: 13 batches for the 1,366 switches, not 85."""
    plan = _plan(THIRTY_TWO_K)
    targets = list(plan.devices())
    planner = Budget(plan, 0.125)
    planned = planner.batches(plan, targets, None, width=WORKERS)
    assert len(planned) == 13 and len(batches(plan, targets, None, width=WORKERS)) == 85
    roles = [Counter(plan.device(n).role for n in b.devices if plan.device(n).plane == "compute") for b in planned]
    assert roles[1] == {"leaf": 63, "spine": 64} and all(r == {"leaf": 64, "spine": 64} for r in roles[2:9])
    assert all(r == {"superspine": 64} for r in roles[9:13])
    assert all(planner.cost(b.devices).worst_share == pytest.approx(0.875) for b in planned[1:9])
    storage = [[n for n in b.devices if plan.device(n).plane == "storage"] for b in planned]
    assert [len(s) for s in storage] == [0, 34, 34, 3, 3, 2, 2, 2, 2, 2, 2, 0, 0]
    domains = [{plan.device(n).failure_domain for n in s} for s in storage]
    assert all(
        planner.planes["storage"].cost(set(s)).within(0.125)
        for s, d in zip(storage, domains, strict=True)
        if len(d) > 1
    )
    assert sum(len(d) > 1 for d in domains) == 8  # a storage side's leaf beside two spines, or two spines


def test_a_batch_size_still_caps_every_batch():
    plan = _plan("inventory/fabric.yml")
    planned = Budget(plan, 0.5).batches(plan, list(plan.devices()), 2, width=WORKERS)
    assert max(len(b.devices) for b in planned) <= 2


# -- the judge: a log that went over the budget fails ------------------------------------------------


def _spines(plan: Plan, count: int) -> list[str]:
    compute = plan.planes["compute"]
    return [d.name for d in compute.devices if d.role == "spine"][:count]


def _leaves_of_two_rails(plan: Plan) -> list[str]:
    compute = plan.planes["compute"]
    return [d.name for d in compute.devices if d.role == "leaf" and d.rail in (1, 2)][:2]


def test_the_judge_fails_a_planted_over_budget_simulator_log():
    plan = _plan("examples/superpod-4su.yml")
    spines = _spines(plan, 8)
    assert len(spines) == 8
    within = [{"time": 1.0 + i / 10, "switch": s, "event": "drain"} for i, s in enumerate(spines[:1])]
    over = [{"time": 10.0 + i / 10, "switch": s, "event": "drain"} for i, s in enumerate(spines)]
    back = [{"time": 20.0 + i / 10, "switch": s, "event": "undrained"} for i, s in enumerate(spines)]
    judge = Judge(plan, 0.125)
    moments = from_events(
        [*within, {"time": 5.0, "switch": spines[0], "event": "undrained"}, *over, *back]
    )  # fmt: skip
    assert [sorted(m.switches) for m in moments] == [spines[:1], sorted(spines)]
    verdicts = [judge.judge(m) for m in moments]
    assert verdicts[0].held
    assert not verdicts[1].held and "kept" in verdicts[1].problems[0]
    assert verdicts[1].worst_share < 0.875


def test_a_switch_committed_then_drained_is_out_until_both_end():
    events = [
        {"time": 1.0, "switch": "a", "event": "drain"},
        {"time": 2.0, "switch": "a", "event": "commit"},
        {"time": 3.0, "switch": "b", "event": "commit"},
        {"time": 4.0, "switch": "a", "event": "confirm"},  # still drained: still out
        {"time": 4.5, "switch": "c", "event": "commit"},
        {"time": 5.0, "switch": "a", "event": "undrained"},
        {"time": 6.0, "switch": "b", "event": "confirm"},
        {"time": 7.0, "switch": "c", "event": "revert"},
    ]
    assert [set(m.switches) for m in from_events(events)] == [{"a", "b", "c"}]


def test_the_judge_fails_two_rails_of_a_server_at_once_and_an_overstating_trail(tmp_path: Path):
    plan = _plan("examples/superpod-1su.yml")
    leaves = _leaves_of_two_rails(plan)
    log = tmp_path / "audit.jsonl"
    facts = {n: SwitchFacts("cumulus", "compute") for n in leaves}
    with AuditLog(log) as file:
        trail = Trail(file, "p1", "2026-01-01T00:00:00Z", "f", Who("u", "u", None, "c"), False, "switches", facts)
        claimed = {"worst_ecmp_share": 1.0, "worst_ecmp_group": "", "max_rails_lost": 1, "rails_server": "",
                   "reach_share": 1.0}  # fmt: skip
        trail.batch(2, "compute:leaves-rail1 + compute:leaves-rail2", leaves, claimed, budget=0.125)
    records = [r for _, r in read(log) if r]
    assert records[0]["status"] == "batch" and records[0]["switches"] == sorted(leaves)
    outages = from_trail(records)
    verdict = Judge(plan, 0.125).judge(outages[0])
    assert not verdict.held and verdict.rails_lost == 2
    assert any("NICs" in p for p in verdict.problems)
    assert claims_problems(verdict) == ["recorded 1 rail(s) lost at most, found 2"]


def test_one_failure_domain_over_the_budget_is_what_the_design_tolerates():
    plan = _plan("examples/superpod-1su.yml")
    spine = _spines(plan, 1)
    verdict = Judge(plan, 0.0).judge(Outage("one spine", frozenset(spine)))
    assert verdict.held and verdict.tolerated == ["compute"] and verdict.worst_share < 1


# -- the command line -----------------------------------------------------------------------------


def test_push_refuses_a_budget_that_is_no_percentage():
    result = CliRunner().invoke(cli, ["push", "inventory/fabric.yml", "--max-capacity-loss", "lots", "--dry-run"])
    assert result.exit_code == 2 and "percentage" in result.output


def test_push_says_what_the_budget_is_in_its_help():
    result = CliRunner().invoke(cli, ["push", "--help"])
    assert result.exit_code == 0 and "--max-capacity-loss" in result.output


def test_a_batch_record_carries_its_switches_and_cost(tmp_path: Path):
    log = tmp_path / "audit.jsonl"
    with AuditLog(log) as file:
        trail = Trail(file, "p2", "t", "f", Who("u", "u", None, "c"), False, "switches", {})
        trail.batch(3, "d", ("b", "a"), {"worst_ecmp_share": 0.875}, budget=0.125)
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert record["batch"] == 3 and record["switches"] == ["a", "b"] and record["max_capacity_loss"] == 0.125
    assert record["worst_ecmp_share"] == 0.875 and record["switch"] == "" and record["status"] == "batch"


# -- end to end through `nornir push`, every switch a driver double ---------------------------------


class _Switch(NetworkDriver):
    """A NAPALM driver double with commit-confirm: every switch changes once, then is in sync."""

    RUNNING: ClassVar[dict[str, str]] = {}

    def __init__(self, hostname: str, username: str, password: str, timeout: int = 60, optional_args: Any = None):
        self.hostname, self.candidate = hostname, ""

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def load_replace_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        self.candidate = config or ""

    def compare_config(self) -> str:
        running = self.RUNNING.setdefault(self.hostname, "hostname old\n")
        return "" if self.candidate == running else f"-{running}+{self.candidate}"

    def discard_config(self) -> None:
        self.candidate = ""

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        self.RUNNING[self.hostname] = self.candidate

    def confirm_commit(self) -> None:
        pass

    def rollback(self) -> None:
        pass

    def get_bgp_neighbors(self) -> dict[str, Any]:
        return {}

    def get_config(self, retrieve: str = "all", full: bool = False, sanitized: bool = False) -> dict[str, str]:
        """The running configuration push's proof holds to the switch's expectation: what was committed."""
        return {"running": self.RUNNING.get(self.hostname, ""), "startup": "", "candidate": ""}

    def get_interfaces(self) -> dict[str, Any]:
        return {}


@pytest.mark.slow
def test_a_push_under_a_budget_records_each_batch_and_its_cost_and_the_proof_holds(monkeypatch, tmp_path, capsys):
    from nornir.core.plugins.connections import ConnectionPluginRegister
    from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

    from gpufabric.cli import main
    from gpufabric.fleet import access
    from gpufabric.push import service
    from gpufabric.push.lock import fabric_lock
    from nornir_tasks.push import PushOptions

    intent = "inventory/examples/multi-vendor.yml"
    monkeypatch.setitem(ConnectionPluginRegister.available, CONNECTION_NAME, Napalm)
    for name in ("GPUFABRIC_SWITCH_PASSWORD", "GPUFABRIC_SNMP_COMMUNITY", "GPUFABRIC_SALT_KEY"):
        monkeypatch.setenv(name, f"placeholder-{name.lower()}")
    trail = tmp_path / "trail" / "audit.jsonl"
    monkeypatch.setenv("GPUFABRIC_AUDIT_LOG", str(trail))
    monkeypatch.setattr(access, "network_driver", lambda platform: _Switch)
    monkeypatch.setattr(service, "fabric_lock", lambda fabric, **kw: fabric_lock(fabric, tmp_path / "locks", **kw))
    monkeypatch.setattr(service, "PushOptions", functools.partial(PushOptions, settle=0.0))
    monkeypatch.setattr(_Switch, "RUNNING", {})
    with pytest.raises(SystemExit) as done:
        main(
            [
                "push",
                intent,
                "--wait",
                "0",
                "--check-timeout",
                "3",
                "--json",
                "--max-capacity-loss",
                "25%",
                "--drain",
                "never",
            ]
        )
    assert done.value.code in (0, None)
    report = json.loads(capsys.readouterr().out)
    plan = _plan(intent)
    assert len(report["batches"]) == len(Budget(plan, 0.25).batches(plan, list(plan.devices()), None, width=WORKERS))
    assert all(b["cost"]["max_rails_lost"] <= 1 for b in report["batches"])
    found = [r for _, r in read(trail) if r]
    outages = from_trail(found)
    assert [o.label for o in outages] == [f"batch {b['number']}" for b in report["batches"]]
    assert [sorted(o.switches) for o in outages] == [sorted(b["devices"]) for b in report["batches"]]
    judge = Judge(plan, 0.25)
    for outage in outages:
        verdict = judge.judge(outage)
        assert verdict.held and not claims_problems(verdict), (outage.label, verdict.problems)
    switches = [r for r in found if r["status"] != "batch"]
    assert sorted(r["switch"] for r in switches) == sorted(d.name for d in plan.devices())
