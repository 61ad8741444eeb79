"""`--drain`: the rollout drains exactly the switches the policy names, around their batch's change.

The switches are a test double of a NAPALM driver with commit-confirm and rollback; the drainer is a
recording test double of the `Drainer` protocol. Both write into one event log, so the order of drains,
commits, confirms, rollbacks and undrains across the switches of a batch is what is asserted. A switch's
change is disruptive when its candidate holds `mtu` (the classification itself is each platform's, tested
in tests/nos/<os>/); the rollout, the Nornir tasks and the runner are the real ones.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from napalm.base import NetworkDriver
from napalm.base.exceptions import CommitError
from nornir.core import Nornir
from nornir.core.inventory import ConnectionOptions, Defaults, Groups, Host, Hosts, Inventory
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir.core.task import Result, Task
from nornir.plugins.runners import ThreadedRunner
from nornir_napalm.plugins import connections as napalm_connections
from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

from gpufabric.fleet.expect import Expectation
from gpufabric.fleet.status import Status
from gpufabric.platforms.disruption import Disruption, Reason
from gpufabric.push import rollout
from gpufabric.push.drain import DrainPolicy, NoDrainerError, TaskDrainer
from gpufabric.push.targets import Batch
from nornir_tasks.push import PushOptions

PUSH_ID = "gf-20261125T140000Z-000042"
OLD = "hostname old\n"
EVENTS: list[tuple[str, str]] = []  # (switch, what happened), in the order it happened
LOGINS: list[tuple[str, str, int]] = []  # (switch, the thread that logged in, how many EVENTS came before)


@dataclass
class State:
    running: str = OLD
    before: str | None = None
    pending: bool = False
    fail_commit: bool = False


SWITCHES: dict[str, State] = {}


class Switch(NetworkDriver):
    def __init__(self, hostname: str, username: str, password: str, timeout: int = 60, optional_args: Any = None):
        self.hostname, self.candidate = hostname, None
        self.state = SWITCHES[hostname]

    def open(self) -> None:
        LOGINS.append((self.hostname, threading.current_thread().name, len(EVENTS)))

    def close(self) -> None:
        pass

    def load_replace_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        self.candidate = config

    def compare_config(self) -> str:
        return "" if self.candidate == self.state.running else f"-{self.state.running}+{self.candidate}"

    def discard_config(self) -> None:
        self.candidate = None

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        EVENTS.append((self.hostname, "commit"))
        if self.state.fail_commit:
            raise CommitError("refused")
        self.state.before, self.state.running, self.state.pending = self.state.running, self.candidate or "", True

    def confirm_commit(self) -> None:
        EVENTS.append((self.hostname, "confirm"))
        self.state.pending = False

    def rollback(self) -> None:
        EVENTS.append((self.hostname, "rollback"))
        if self.state.before is not None:
            self.state.running, self.state.before = self.state.before, None
        self.state.pending = False

    def get_interfaces(self) -> dict[str, Any]:
        return {}


@dataclass
class RecordingDrainer:
    """The `Drainer` protocol, recording what it is asked; `fail_drain` / `fail_undrain` name switches it
    cannot do, `raises` makes every call raise."""

    fail_drain: set[str] = field(default_factory=set)
    fail_undrain: set[str] = field(default_factory=set)
    raises: bool = False
    reasons: dict[str, str] = field(default_factory=dict)
    push_ids: set[str] = field(default_factory=set)

    def drain(self, nr: Nornir, push_id: str, reasons: Mapping[str, str]) -> Mapping[str, str]:
        return self._do("drain", nr, push_id, self.fail_drain, reasons)

    def undrain(self, nr: Nornir, push_id: str) -> Mapping[str, str]:
        return self._do("undrain", nr, push_id, self.fail_undrain, {})

    def _do(self, what: str, nr: Nornir, push_id: str, fail: set[str], reasons: Mapping[str, str]) -> dict[str, str]:
        if self.raises:
            raise RuntimeError(f"{what}: the switch went away")
        self.push_ids.add(push_id)
        self.reasons.update(reasons)
        for name in sorted(nr.inventory.hosts):
            EVENTS.append((name, what if name not in fail else f"{what} failed"))
        return {n: f"{what} timed out" for n in sorted(nr.inventory.hosts) if n in fail}


@pytest.fixture
def switches(monkeypatch):
    SWITCHES.clear()
    EVENTS.clear()
    LOGINS.clear()
    real = napalm_connections.get_network_driver
    monkeypatch.setattr(napalm_connections, "get_network_driver", lambda p: Switch if p == "double" else real(p))
    monkeypatch.setitem(ConnectionPluginRegister.available, CONNECTION_NAME, Napalm)
    yield SWITCHES
    SWITCHES.clear()
    EVENTS.clear()


def fleet(names: list[str]) -> Nornir:
    hosts = Hosts()
    for name in names:
        SWITCHES[name] = State()
        hosts[name] = Host(name=name, hostname=name, username="u", password="p", platform="double")
        hosts[name].connection_options["napalm"] = ConnectionOptions(extras={"optional_args": {}})
    return Nornir(inventory=Inventory(hosts=hosts, groups=Groups(), defaults=Defaults()), runner=ThreadedRunner(4))


def mtu(diff: str) -> tuple[Disruption, ...]:
    return (Disruption(Reason.MTU, "a port's MTU changes [mtu 9000]"),) if "mtu" in diff else ()


# The canary alone, then a failure domain of three, then one of two.
BATCHES = [Batch(1, "canary (rail 1)", ("a",)), Batch(2, "rail 1", ("b", "c", "d")), Batch(3, "rail 2", ("e", "f"))]


def push(
    nr: Nornir,
    candidates: dict[str, str],
    *,
    drain: DrainPolicy = DrainPolicy.AUTO,
    drainer: RecordingDrainer | None = None,
    dry_run: bool = False,
) -> rollout.Rollout:
    names = [n for b in BATCHES for n in b.devices]
    return rollout.run(
        nr,
        plan_batches=BATCHES,
        candidates=candidates,
        expects={n: Expectation(n, {}, ()) for n in names},
        opts=PushOptions(dry_run=dry_run, confirm_timeout=300, check_timeout=0.0, settle=0.0, push_id=PUSH_ID),
        classify=dict.fromkeys(names, mtu),
        drain=drain,
        drainer=drainer,
    )


def candidates(**kinds: str) -> dict[str, str]:
    """Every switch of BATCHES: unchanged unless named; named ones get a hitless or a disruptive change."""
    texts = {"hitless": "hostname new\n", "disruptive": "hostname new\nmtu 9000\n"}
    return {n: texts[kinds[n]] if n in kinds else OLD for b in BATCHES for n in b.devices}


def when(switch: str, what: str) -> int:
    return EVENTS.index((switch, what))


def of(switch: str) -> list[str]:
    return [what for name, what in EVENTS if name == switch]


def test_auto_drains_only_the_disruptive_switches_before_their_batch_changes_and_undrains_after_its_confirm(
    switches,
):
    """b and e change their MTU, a, c and f only their hostname, d nothing. Only b and e are drained; each
    before any switch of its batch commits, and undrained after every switch of its batch confirmed."""
    drainer = RecordingDrainer()
    done = push(
        fleet(list("abcdef")),
        candidates(a="hitless", b="disruptive", c="hitless", e="disruptive", f="hitless"),
        drainer=drainer,
    )
    assert done.converged and done.drained == ["b", "e"]
    assert of("b") == ["drain", "commit", "confirm", "undrain"] and of("e") == ["drain", "commit", "confirm", "undrain"]
    assert of("a") == ["commit", "confirm"] and of("c") == ["commit", "confirm"] and of("d") == []
    assert when("b", "drain") < when("c", "commit") and when("c", "confirm") < when("b", "undrain")
    assert when("b", "undrain") < when("e", "drain") < when("f", "commit") < when("f", "confirm") < when("e", "undrain")
    assert drainer.reasons == {"b": "mtu", "e": "mtu"} and drainer.push_ids == {PUSH_ID}
    assert [done.outcomes[n].drain for n in "abcdef"] == [False, True, False, False, True, False]
    assert done.outcomes["b"].status == Status.CHANGED and done.outcomes["b"].disruptions[0].reason == Reason.MTU


def test_always_drains_every_switch_that_changes_and_never_drains_none(switches):
    drainer = RecordingDrainer()
    done = push(fleet(list("abcdef")), candidates(a="hitless", b="disruptive", e="hitless"), drain=DrainPolicy.ALWAYS,
                drainer=drainer)  # fmt: skip
    assert done.converged and done.drained == ["a", "b", "e"]
    assert {name for name, what in EVENTS if what == "drain"} == {"a", "b", "e"}
    assert drainer.reasons == {"a": "--drain always (hitless change)", "b": "--drain always (mtu)",
                               "e": "--drain always (hitless change)"}  # fmt: skip

    EVENTS.clear()
    drainer = RecordingDrainer()
    done = push(fleet(list("abcdef")), candidates(b="disruptive", e="disruptive"), drain=DrainPolicy.NEVER,
                drainer=drainer)  # fmt: skip
    assert done.converged and done.drained == []
    assert not any(what.startswith(("drain", "undrain")) for _, what in EVENTS)
    assert done.outcomes["b"].disruptions  # still said: classified, not drained


def test_a_failed_drain_stops_the_batch_before_anything_of_it_changes(switches):
    """c and d need a drain; c's fails. Nothing of the batch is committed, d (drained) is undrained again, b
    and c fail or are skipped saying why, and the next batch never goes out. The canary keeps its change."""
    drainer = RecordingDrainer(fail_drain={"c"})
    done = push(
        fleet(list("abcdef")),
        candidates(a="hitless", b="hitless", c="disruptive", d="disruptive", e="disruptive"),
        drainer=drainer,
    )
    assert not done.converged and done.stopped_at is not None and done.stopped_at.number == 2
    assert of("b") == [] and of("c") == ["drain failed"] and of("d") == ["drain", "undrain"]
    assert of("e") == [] and of("a") == ["commit", "confirm"]
    assert {n: SWITCHES[n].running for n in "bcde"} == dict.fromkeys("bcde", OLD)
    assert done.outcomes["c"].status == Status.FAILED and "drain failed: drain timed out" in done.outcomes["c"].reason
    assert done.outcomes["b"].status == Status.SKIPPED and "the drain of c failed" in done.outcomes["b"].reason
    assert done.outcomes["d"].status == Status.SKIPPED and done.outcomes["e"].status == Status.SKIPPED
    assert done.still_drained == ["c"]  # it may be half drained: said, and left to `maintenance status`


def test_a_drainer_that_raises_drains_nothing_and_changes_nothing(switches):
    done = push(fleet(list("abcdef")), candidates(a="disruptive", b="hitless"), drainer=RecordingDrainer(raises=True))
    assert not done.converged and EVENTS == []
    assert done.outcomes["a"].status == Status.FAILED and "RuntimeError: drain: the switch went away" in (
        done.outcomes["a"].reason
    )
    assert done.outcomes["b"].status == Status.SKIPPED and SWITCHES["a"].running == OLD


def test_a_rolled_back_batch_still_undrains_its_drained_switches(switches):
    """d refuses its commit: the batch is rolled back (b was staged), then b and c, drained before, are
    undrained; the rollout stops there."""
    nr = fleet(list("abcdef"))
    SWITCHES["d"].fail_commit = True
    done = push(nr, candidates(a="hitless", b="disruptive", c="disruptive", d="hitless", e="disruptive"),
                drainer=RecordingDrainer())  # fmt: skip
    assert not done.converged and done.stopped_at is not None and done.stopped_at.number == 2
    assert of("b") == ["drain", "commit", "rollback", "undrain"]
    assert of("c")[0] == "drain" and of("c")[-1] == "undrain" and "rollback" in of("c")
    assert when("d", "commit") < when("b", "undrain")
    assert done.outcomes["b"].status == Status.ROLLED_BACK and done.outcomes["b"].drain
    assert of("e") == [] and done.outcomes["e"].status == Status.SKIPPED
    assert SWITCHES["b"].running == OLD


def test_a_switch_left_drained_stops_the_rollout(switches):
    """b's change is confirmed but its undrain fails: it is reported failed and still drained, and the next
    failure domain is not taken out while b's is still out."""
    done = push(fleet(list("abcdef")), candidates(b="disruptive", e="disruptive"),
                drainer=RecordingDrainer(fail_undrain={"b"}))  # fmt: skip
    assert not done.converged and done.still_drained == ["b"]
    assert SWITCHES["b"].running != OLD and of("b") == ["drain", "commit", "confirm", "undrain failed"]
    assert done.outcomes["b"].status == Status.FAILED
    assert "undrain failed, still drained: undrain timed out" in done.outcomes["b"].reason
    assert of("e") == [] and done.outcomes["e"].status == Status.SKIPPED


def test_a_push_that_needs_a_drain_and_has_no_drainer_is_refused_before_any_change(switches):
    with pytest.raises(NoDrainerError, match=r"1 switches need a drain \(--drain auto: c\)"):
        push(fleet(list("abcdef")), candidates(a="hitless", c="disruptive"))
    assert EVENTS == [] and all(s.running == OLD for s in SWITCHES.values())
    # Without a disruptive change, or with --drain never, it goes ahead.
    assert push(fleet(list("abcdef")), candidates(a="hitless", c="hitless")).converged
    EVENTS.clear()
    assert push(fleet(list("abcdef")), candidates(c="disruptive"), drain=DrainPolicy.NEVER).converged


def test_a_dry_run_says_who_would_be_drained_and_drains_nobody(switches):
    drainer = RecordingDrainer()
    done = push(fleet(list("abcdef")), candidates(a="hitless", c="disruptive", f="disruptive"), dry_run=True,
                drainer=drainer)  # fmt: skip
    assert done.drained == ["c", "f"] and EVENTS == []
    assert [str(d) for d in done.outcomes["c"].disruptions] == ["mtu: a port's MTU changes [mtu 9000]"]
    # Without a drainer a dry run is not refused: it only says what a push would do.
    assert push(fleet(list("abcdef")), candidates(c="disruptive"), dry_run=True).drained == ["c"]


def test_a_switch_whose_diff_became_disruptive_after_the_preview_is_not_committed_undrained(switches):
    """c's preview read a hostname change (not drained); before its batch, someone sets an MTU on it, so the
    diff read at stage is disruptive: c is not committed, its batch is rolled back, the rollout stops."""
    nr = fleet(list("abcdef"))
    names = [n for b in BATCHES for n in b.devices]

    def someone_changes_c(read: rollout.Rollout) -> None:
        assert not read.outcomes["c"].drain
        SWITCHES["c"].running = "hostname old\nmtu 1500\n"

    done = rollout.run(
        nr,
        plan_batches=BATCHES,
        candidates=candidates(a="hitless", b="disruptive", c="hitless"),
        expects={n: Expectation(n, {}, ()) for n in names},
        opts=PushOptions(confirm_timeout=300, check_timeout=0.0, settle=0.0, push_id=PUSH_ID),
        on_preview=someone_changes_c,
        classify=dict.fromkeys(names, mtu),
        drain=DrainPolicy.AUTO,
        drainer=RecordingDrainer(),
    )
    assert not done.converged and "commit" not in of("c")
    assert done.outcomes["c"].status == Status.FAILED
    assert done.outcomes["c"].reason.startswith("its diff changed since the preview and is now disruptive (mtu: ")
    assert of("b") == ["drain", "commit", "rollback", "undrain"]  # its batch is rolled back, b undrained


def drain_task(task: Task, push_id: str, reason: str) -> Result:
    """A maintenance task as the rollout's TaskDrainer runs it: c's drain raises, d's says it failed."""
    if task.host.name == "c":
        raise TimeoutError("the peers still hold c after 300 s")
    EVENTS.append((task.host.name, f"drain task {push_id} {reason}"))
    return Result(host=task.host, result="not drained" if task.host.name == "d" else "drained",
                  failed=task.host.name == "d")  # fmt: skip


def undrain_task(task: Task, push_id: str) -> Result:
    EVENTS.append((task.host.name, f"undrain task {push_id}"))
    return Result(host=task.host, result="undrained")


def test_nornir_tasks_make_a_drainer_whose_failures_carry_the_tasks_words(switches):
    done = push(fleet(list("abcdef")), candidates(b="disruptive", e="disruptive"),
                drainer=TaskDrainer(drain_task, undrain_task))  # fmt: skip
    assert done.converged
    assert of("b") == [f"drain task {PUSH_ID} mtu", "commit", "confirm", f"undrain task {PUSH_ID}"]
    EVENTS.clear()
    # b goes first, alone (the canary); then c and d, whose drains fail: neither changes.
    done = push(fleet(list("abcdef")), candidates(b="disruptive", c="disruptive", d="disruptive"),
                drainer=TaskDrainer(drain_task, undrain_task))  # fmt: skip
    assert not done.converged and of("c") == [] and of("d") == [f"drain task {PUSH_ID} mtu"]
    assert "drain failed: TimeoutError: the peers still hold c after 300 s" in done.outcomes["c"].reason
    assert "drain failed: not drained" in done.outcomes["d"].reason
    assert done.outcomes["b"].status == Status.CHANGED and done.still_drained == ["c", "d"]


def test_a_task_drainer_gives_each_task_its_options(switches):
    given: list[tuple[str, str, bool]] = []

    def drain_reading(task: Task, push_id: str, reason: str, read_before: bool = True) -> Result:
        given.append((task.host.name, "drain", read_before))
        return Result(host=task.host, result="drained")

    def undrain_reading(task: Task, push_id: str, read_before: bool = True) -> Result:
        given.append((task.host.name, "undrain", read_before))
        return Result(host=task.host, result="undrained")

    done = push(fleet(list("abcdef")), candidates(b="disruptive", e="disruptive"),
                drainer=TaskDrainer(drain_reading, undrain_reading, options={"read_before": False}))  # fmt: skip
    assert done.converged
    assert sorted(given) == [("b", "drain", False), ("b", "undrain", False), ("e", "drain", False),
                             ("e", "undrain", False)]  # fmt: skip


def test_the_next_batch_logs_in_while_a_batch_is_undrained_and_only_once(switches):
    """The preview's sessions ended (as a large fleet's, read from other processes, are), each batch's switches
    are logged into in the background while the batch before is undrained (after its confirms), once each,
    before anything of their own batch happens."""
    nr = fleet(list("abcdef"))
    names = [n for b in BATCHES for n in b.devices]
    done = rollout.run(
        nr,
        plan_batches=BATCHES,
        candidates=candidates(a="disruptive", b="disruptive", c="hitless", e="disruptive", f="hitless"),
        expects={n: Expectation(n, {}, ()) for n in names},
        opts=PushOptions(confirm_timeout=300, check_timeout=0.0, settle=0.0, push_id=PUSH_ID),
        on_preview=lambda _read: nr.close_connections(),
        classify=dict.fromkeys(names, mtu),
        drain=DrainPolicy.AUTO,
        drainer=RecordingDrainer(),
    )
    assert done.converged
    after_preview = {name: (thread, before) for name, thread, before in LOGINS[len(names) :]}
    assert len(after_preview) == len(LOGINS) - len(names) == 5  # once each; d does not change
    assert not after_preview["a"][0].startswith("gpufabric-warm")  # the first batch logs in itself
    for name, (thread, before) in after_preview.items():
        if name == "a":
            continue
        last, drain = ("a", "b") if name in "bc" else ("c", "e")
        assert thread.startswith("gpufabric-warm"), (name, thread)
        assert when(last, "confirm") < before <= when(drain, "drain"), name  # the undrain before, not the stage
