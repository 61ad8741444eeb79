"""A batch goes out whole or not at all, and a push never starts over another push's pending change.

The switches here are `SwitchDouble`, a test double of a NAPALM driver with commit-confirm (what
EOS's config sessions and gpufabric's FRR and Cumulus drivers offer): a running configuration, a
commit awaiting confirmation, the configuration from before the last commit kept for `rollback()`
(which works after a confirm too, as EOS's `configure replace flash:rollback-0`, FRR's revert
script and Cumulus's saved revision do), and the push a pending commit belongs to. The rollout,
the Nornir tasks and the Nornir runner are the real ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from napalm.base import NetworkDriver
from napalm.base.exceptions import CommitError
from nornir.core import Nornir
from nornir.core.inventory import ConnectionOptions, Defaults, Groups, Host, Hosts, Inventory
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir.plugins.runners import ThreadedRunner
from nornir_napalm.plugins import connections as napalm_connections
from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

from gpufabric.fleet.expect import Expectation
from gpufabric.fleet.push_id import new_push_id, tag
from gpufabric.push import rollout
from gpufabric.push.targets import Batch
from nornir_tasks.push import PushOptions

OLD, NEW = "hostname old\n", "hostname new\n"


@dataclass
class SwitchState:
    running: str = OLD
    before: str | None = None  # what rollback() returns to
    pending: bool = False
    pending_push: dict[str, str] | None = None
    fail_confirm: bool = False
    fail_rollback: bool = False
    calls: list[str] = field(default_factory=list)
    push_ids: list[str] = field(default_factory=list)  # optional_args["push_id"] each session was given


SWITCHES: dict[str, SwitchState] = {}


class SwitchDouble(NetworkDriver):
    """Test double of a switch's NAPALM driver (see the module's docstring); its state is SWITCHES[hostname]."""

    def __init__(self, hostname: str, username: str, password: str, timeout: int = 60, optional_args: Any = None):
        self.hostname, self.candidate = hostname, None
        self.state = SWITCHES[hostname]
        self.state.push_ids.append((optional_args or {}).get("push_id", ""))

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def load_replace_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        self.state.calls.append("load")
        self.candidate = config

    def compare_config(self) -> str:
        return "" if self.candidate == self.state.running else f"-{self.state.running}+{self.candidate}"

    def discard_config(self) -> None:
        self.candidate = None

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        if self.state.pending:
            raise CommitError("a commit is pending confirmation")
        self.state.calls.append("commit")
        self.state.before, self.state.running, self.state.pending = self.state.running, self.candidate or "", True

    def confirm_commit(self) -> None:
        self.state.calls.append("confirm")
        if self.state.fail_confirm:
            raise ConnectionError("confirm lost")
        self.state.pending = False

    def rollback(self) -> None:
        self.state.calls.append("rollback")
        if self.state.fail_rollback:
            raise ConnectionError("session dropped")
        if self.state.before is not None:
            self.state.running, self.state.before = self.state.before, None
        self.state.pending = False

    def has_pending_commit(self) -> bool:
        return self.state.pending

    def pending_push(self) -> dict[str, str] | None:
        return self.state.pending_push

    def get_interfaces(self) -> dict[str, Any]:
        return {}


@pytest.fixture
def switches(monkeypatch):
    SWITCHES.clear()
    real = napalm_connections.get_network_driver
    monkeypatch.setattr(napalm_connections, "get_network_driver", lambda p: SwitchDouble if p == "double" else real(p))
    # nornir_napalm's own plugin, whatever an earlier test's `nornir push` registered under its name.
    monkeypatch.setitem(ConnectionPluginRegister.available, CONNECTION_NAME, Napalm)
    yield SWITCHES
    SWITCHES.clear()


def fleet(names: list[str]) -> Nornir:
    hosts = Hosts()
    for name in names:
        SWITCHES[name] = SwitchState()
        hosts[name] = Host(name=name, hostname=name, username="u", password="p", platform="double")
        hosts[name].connection_options["napalm"] = ConnectionOptions(extras={"optional_args": {}})
    return Nornir(inventory=Inventory(hosts=hosts, groups=Groups(), defaults=Defaults()), runner=ThreadedRunner(4))


def push(
    nr: Nornir, batches: list[Batch], push_id: str = "gf-20261123T120000Z-000001", processes: int = 1
) -> rollout.Rollout:
    names = [n for b in batches for n in b.devices]
    return rollout.run(
        nr,
        plan_batches=batches,
        candidates=dict.fromkeys(names, NEW),
        expects={n: Expectation(n, {}, ()) for n in names},
        opts=PushOptions(confirm_timeout=300, check_timeout=0.0, settle=0.0, push_id=push_id),
        processes=processes,
    )


def test_a_failed_confirm_rolls_back_the_switches_of_its_batch_already_confirmed(switches):
    """Switch 2 of a batch of 3 fails its confirm: all three end on the configuration from before the push,
    and the next batch never goes out. The canary's batch, confirmed before, keeps its change."""
    nr = fleet(["s0", "s1", "s2", "s3", "s4"])
    switches["s2"].fail_confirm = True
    result = push(nr, [Batch(1, "canary", ("s0",)), Batch(2, "fd-1", ("s1", "s2", "s3")), Batch(3, "fd-2", ("s4",))])
    assert result.outcomes["s0"].status == "changed" and switches["s0"].running == NEW
    assert [switches[n].running for n in ("s1", "s2", "s3")] == [OLD, OLD, OLD]
    assert not any(switches[n].pending for n in ("s1", "s2", "s3"))
    assert switches["s1"].calls == switches["s3"].calls == ["load", "load", "commit", "confirm", "rollback"]
    out = result.outcomes
    assert out["s1"].status == out["s3"].status == "rolled back"
    assert out["s1"].reason == "confirmed, then the batch was rolled back: s2's confirm failed"
    assert (out["s2"].status, out["s2"].reason) == (
        "rolled back",
        "confirm failed: ConnectionError: confirm lost; the batch is rolled back",
    )
    assert out["s4"].status == "skipped" and switches["s4"].calls == ["load"] and switches["s4"].running == OLD
    assert not result.converged and result.stopped_at is not None and result.stopped_at.number == 2


def test_a_rollback_that_fails_after_a_confirm_is_reported_as_a_failure(switches):
    """All or nothing as far as the switches allow: one that cannot be rolled back keeps the change, and
    says so (failed, with both reasons), never `rolled back`."""
    nr = fleet(["s0", "s1", "s2", "s3"])
    switches["s2"].fail_confirm = True
    switches["s3"].fail_rollback = True
    result = push(nr, [Batch(1, "canary", ("s0",)), Batch(2, "fd-1", ("s1", "s2", "s3"))])
    assert switches["s1"].running == switches["s2"].running == OLD and switches["s3"].running == NEW
    assert result.outcomes["s3"].status == "failed"
    assert result.outcomes["s3"].reason == (
        "confirmed, then the batch was rolled back: s2's confirm failed; "
        "rollback failed: ConnectionError: session dropped"
    )


def test_a_batch_that_confirms_whole_keeps_the_change(switches):
    nr = fleet(["s1", "s2", "s3"])
    result = push(nr, [Batch(1, "fd-1", ("s1", "s2", "s3"))])
    assert result.converged and {o.status for o in result.outcomes.values()} == {"changed"}
    assert all(switches[n].running == NEW and "rollback" not in switches[n].calls for n in ("s1", "s2", "s3"))


def test_another_push_pending_on_one_switch_refuses_the_push_before_any_change(switches):
    """A push from another controller has a change awaiting confirmation on s3: this push loads, stages and
    commits nothing anywhere, and names that push, its controller and its start."""
    nr = fleet(["s1", "s2", "s3"])
    other = {"push_id": "gf-20261123T101500Z-a1b2c3", "started": "2026-11-23T10:15:00Z", "controller": "ctl-a"}
    switches["s3"].pending_push = other
    with pytest.raises(rollout.OtherPushPendingError) as refused:
        push(nr, [Batch(1, "canary", ("s1",)), Batch(2, "fd-1", ("s2", "s3"))])
    assert str(refused.value).startswith(
        "another push is in progress: gf-20261123T101500Z-a1b2c3 (controller ctl-a, started 2026-11-23T10:15:00Z) "
        "has a change pending confirmation on s3; nothing was changed"
    )
    assert switches["s3"].calls == []  # not even a candidate loaded where the other push's change waits
    assert all("commit" not in switches[n].calls for n in ("s1", "s2", "s3"))
    assert [switches[n].running for n in ("s1", "s2", "s3")] == [OLD, OLD, OLD]


def test_the_earliest_of_several_pending_pushes_is_named(switches):
    nr = fleet(["s1", "s2"])
    switches["s1"].pending_push = {"push_id": "gf-20261123T110000Z-bbbbbb", "started": "2026-11-23T11:00:00Z"}
    switches["s2"].pending_push = {"push_id": "gf-20261123T100000Z-aaaaaa", "started": "2026-11-23T10:00:00Z"}
    with pytest.raises(rollout.OtherPushPendingError, match=r"gf-20261123T100000Z-aaaaaa .* on s2 and 1 more"):
        push(nr, [Batch(1, "fd-1", ("s1", "s2"))])


def test_its_own_pending_push_does_not_refuse_a_push(switches):
    nr = fleet(["s1"])
    switches["s1"].pending_push = {"push_id": "gf-20261123T120000Z-000001", "started": "2026-11-23T12:00:00Z"}
    assert push(nr, [Batch(1, "canary", ("s1",))], push_id="gf-20261123T120000Z-000001").converged


def test_every_driver_is_given_the_push_id(switches):
    nr = fleet(["s1", "s2"])
    ident = new_push_id(controller="ctl-b")
    tag(nr.inventory, ident)
    push(nr, [Batch(1, "fd-1", ("s1", "s2"))], push_id=ident.id)
    assert switches["s1"].push_ids == switches["s2"].push_ids == [ident.id]
    options = nr.inventory.hosts["s1"].connection_options["napalm"].extras["optional_args"]
    assert options == {"push_id": ident.id, "push_controller": "ctl-b"}


def test_a_large_fleet_is_read_from_forked_processes_with_the_same_outcomes_and_guards(switches):
    """The pending-push check and the preview of a fleet of FORK_FROM or more switches run in forked
    processes (the double's state there is a copy: what they read comes back, nothing they did stays).
    Outcomes are those of one process; a switch that cannot be read is unreadable and nothing changes;
    another push's pending change refuses the push; the batches go out from this process."""
    from gpufabric.fleet.runner import FORK_FROM

    names = [f"s{i}" for i in range(FORK_FROM + 4)]
    batches = [Batch(1, "canary", (names[0],)), Batch(2, "fd-1", tuple(names[1:]))]
    nr = fleet(names)
    for n in names[::3]:
        switches[n].running = NEW  # already as planned: unchanged
    result = push(nr, batches, processes=2)
    assert result.converged
    assert {n: o.status for n, o in result.outcomes.items()} == {
        n: "unchanged" if i % 3 == 0 else "changed" for i, n in enumerate(names)
    }
    assert all(switches[n].running == NEW for n in names)
    assert switches[names[1]].calls == ["load", "commit", "confirm"]  # the preview's load was in a child

    nr = fleet(names)
    switches[names[5]].pending_push = {"push_id": "gf-20261123T110000Z-0000aa", "started": "x", "controller": "c"}
    with pytest.raises(rollout.OtherPushPendingError):
        push(nr, batches, processes=2)
    assert not any(switches[n].calls for n in names)  # refused before any switch was even read

    nr = fleet(names)
    switches[names[7]].fail_confirm = True
    bad = names[9]
    SWITCHES[bad] = SwitchState(running="unreadable")
    original = SwitchDouble.compare_config

    def compare(self: SwitchDouble) -> str:
        if self.hostname == bad:
            raise ConnectionError("session dropped")
        return original(self)

    SwitchDouble.compare_config = compare  # type: ignore[method-assign]
    try:
        result = push(nr, batches, processes=2)
    finally:
        SwitchDouble.compare_config = original  # type: ignore[method-assign]
    assert result.unreadable == [bad] and not result.converged
    assert not any("commit" in switches[n].calls for n in names)
