"""Nornir tasks of a push, one switch each: check for another push's pending change, preview (diff),
stage (diff, commit, post-change checks), confirm, roll back.

Plain task functions, as Nornir's own: they take a Task and return a Result whose `result` is a
`DeviceOutcome` (what the report and the audit trail say of the switch) and whose flags say what
Nornir means by them: `failed` when the task did not do what it is for (a switch unreadable, a stage
rolled back, a confirm or rollback refused), so `AggregatedResult.failed_hosts` and
`nr.data.failed_hosts` name them; `changed` when the switch's configuration differs from before the
push once the task ends (a preview that finds a diff counts, as nornir_napalm's dry run does);
`diff` the masked diff. Staging leaves a good change pending (a revert timer armed on the switch) so
the rollout can confirm a batch only when the whole batch is healthy.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from nornir.core.task import Result, Task

from gpufabric.fleet.expect import Expectation, Health, health, ports_now, regressions, sessions_now
from gpufabric.fleet.push_id import describe
from gpufabric.fleet.status import Status
from gpufabric.platforms import all_platforms
from gpufabric.platforms.disruption import Disruption

log = logging.getLogger(__name__)

# Drivers without a switch-side revert timer (none of gpufabric's platforms today): a checkpoint taken by
# the commit is what rollback returns to, and nothing reverts the switch if the controller is lost.
CHECKPOINT_PLATFORMS = frozenset(p.facts.napalm_driver for p in all_platforms() if not p.facts.confirm_timer)


POLL = 0.5  # seconds between two health checks of a switch after its commit
# The poll that ends a healthy stretch is aimed to end this long after the stretch reaches `settle`: aimed
# exactly, a poll a little quicker than the one before ended just short of it and cost one more poll.
SETTLE_MARGIN = 0.05


@dataclass
class PushOptions:
    dry_run: bool = False
    confirm_timeout: int = 120  # the device reverts by itself if not confirmed within this
    check_timeout: float = 30.0  # how long sessions and ports get to come back
    settle: float = 2.0  # the checks must hold this long: a session resets a moment after the commit
    masked: tuple[str, ...] = field(default=(), repr=False)  # secret values: never in a diff or a reason
    push_id: str = ""  # this push's id: a pending push on a switch with another id refuses this one


@dataclass
class DeviceOutcome:
    device: str
    status: Status
    reason: str = ""
    diff: str = ""
    seconds: float = 0.0
    batch: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # Why its change would disturb traffic, as its platform reads the preview's diff (empty: hitless).
    disruptions: tuple[Disruption, ...] = ()
    drain: bool = False  # drained around its change (in a dry run: would be)


def _result(task: Task, outcome: DeviceOutcome, *, failed: bool, changed: bool, diff: str = "") -> Result:
    return Result(host=task.host, result=outcome, failed=failed, changed=changed, diff=diff)


def digest(diff: str) -> str | None:
    """What logs and the audit trail carry of a diff: its SHA-256 (of the masked text), never the text."""
    return "sha256:" + hashlib.sha256(diff.encode()).hexdigest() if diff.strip() else None


T = TypeVar("T")


class _Beside(Generic[T]):
    """A read of the switch run in a thread of its own while the caller goes on with the same session (a
    driver whose `concurrent_reads` says its commands may overlap); `result()` waits for it and raises what
    it raised, `wait()` only waits."""

    def __init__(self, read: Callable[[], T]) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(read,), name="gpufabric-read", daemon=True)
        self._thread.start()

    def _run(self, read: Callable[[], T]) -> None:
        try:
            self._value = read()
        except BaseException as exc:  # handed to whoever asks for the result
            self._error = exc

    def wait(self) -> None:
        self._thread.join()

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


def _concurrent(conn: Any) -> bool:
    return bool(getattr(conn, "concurrent_reads", False))


def _health(conn: Any, expect: Expectation) -> Health:
    """The sessions and ports up now, and the running configuration held to the switch's expectation; the
    readings side by side where the driver allows it."""
    if not expect.peers:
        running, ports = _config_and_ports(conn, expect)
        return health(expect, {}, ports, running)
    if not _concurrent(conn):
        running = _running(conn) if expect.reads_running else None
        return health(expect, sessions_now(conn), ports_now(conn), running)
    beside = _Beside(lambda: _config_and_ports(conn, expect))
    try:
        bgp = sessions_now(conn)
    except BaseException:
        beside.wait()
        raise
    running, ports = beside.result()
    return health(expect, bgp, ports, running)


def _config_and_ports(conn: Any, expect: Expectation) -> tuple[str | None, dict[str, dict[str, Any]]]:
    """The running configuration (where the expectation holds it) and the ports: one reading of the switch
    where its driver takes both at once (`get_running_and_port_states`), else one after the other."""
    if not expect.reads_running:
        return None, ports_now(conn)
    both = getattr(type(conn), "get_running_and_port_states", None)
    if both is None:
        return _running(conn), ports_now(conn)
    running, ports = both(conn)
    return str(running), dict(ports)


def _running(conn: Any) -> str:
    return str(conn.get_config(retrieve="running")["running"])


def _wait_healthy(conn: Any, expect: Expectation, before: Health, opts: PushOptions) -> list[str]:
    """Poll at most POLL seconds apart until the checks have held `settle` seconds (healthy at the end of a
    poll, and still at the end of one `settle` later), or `check_timeout` ran out."""
    deadline = time.monotonic() + opts.check_timeout
    healthy_since: float | None = None
    problems: list[str] = []
    quickest = float("inf")  # the quickest poll so far
    while True:
        polled = time.monotonic()
        problems = regressions(expect, before, _health(conn, expect))
        now = time.monotonic()
        quickest = min(quickest, now - polled)
        if problems:
            healthy_since = None
        elif healthy_since is None:
            healthy_since = now
        if healthy_since is not None and now - healthy_since >= opts.settle:
            return []
        if now >= deadline:
            return problems or ["checks did not settle"]
        time.sleep(_pause(now, healthy_since, opts.settle, quickest))


def _pause(now: float, healthy_since: float | None, settle: float, quickest: float) -> float:
    """How long to wait before the next poll. In a healthy stretch, the poll that ends it is aimed to end just
    past `settle` (by the quickest poll so far), and the polls before it are spread evenly, none more than
    POLL apart: at POLL apart regardless, one ended just short of `settle` as often as not, and cost a poll
    more."""
    if healthy_since is None:
        return POLL
    aim = healthy_since + settle + SETTLE_MARGIN - now - quickest  # when the last poll should start, from now
    if aim <= POLL:
        return max(0.0, aim)
    between = math.ceil((aim - POLL) / (POLL + quickest))  # the fewest polls before the last that keep POLL
    # Polls slower than the time left (a loaded machine) leave no room to spread: the next one goes at once.
    return max(0.0, min(POLL, (aim - between * quickest) / (between + 1)))


def mask(text: str, secrets: tuple[str, ...]) -> str:
    """The text with every secret value replaced: a diff of a changed SNMP community shows stars."""
    for value in secrets:
        text = text.replace(value, "********")
    return text


def _connect(task: Task) -> Any:
    """The switch's NAPALM session: opened on first use (gpufabric.fleet.access logs it), then reused."""
    return task.host.get_connection("napalm", task.nornir.config)


def hang_up(task: Task) -> None:
    """End the switch's session once everything it is asked is read: each open paramiko session keeps a
    thread polling its socket ten times a second (validate reads a whole fabric at once)."""
    with contextlib.suppress(Exception):  # the session may already be gone; what was read stands
        task.host.close_connection("napalm")


Classify = Callable[[str], tuple[Disruption, ...]]  # a platform's `disruptions`: a diff's reasons


def preview(task: Task, candidate: str, opts: PushOptions, classify: Classify | None = None) -> Result:
    """Load the candidate, diff it and discard it: whether this switch would change, read from every
    switch at once before any of them changes, and (with `classify`, its platform's reading of a diff)
    why the change would disturb traffic. A switch that cannot be reached, logged into or read here
    fails the push before anything changes."""
    started = time.monotonic()
    outcome = DeviceOutcome(task.host.name, Status.FAILED)
    conn: Any = None
    try:
        conn = _connect(task)
        conn.load_replace_candidate(config=candidate)
        outcome.diff = mask(conn.compare_config(), opts.masked)
        conn.discard_config()
        outcome.status = Status.WOULD_CHANGE if outcome.diff.strip() else Status.UNCHANGED
        if classify is not None and outcome.status == Status.WOULD_CHANGE:
            outcome.disruptions = classify(outcome.diff)
    except Exception as exc:  # its outcome: the rollout then changes nothing
        outcome.reason = mask(_reason(exc), opts.masked)
        _discard_quietly(conn)
    outcome.seconds = time.monotonic() - started
    log.info("%s: preview %s %s", task.host.name, outcome.status, digest(outcome.diff) or outcome.reason)
    failed = outcome.status == Status.FAILED
    return _result(task, outcome, failed=failed, changed=outcome.status == Status.WOULD_CHANGE, diff=outcome.diff)


def check_pending(task: Task, opts: PushOptions) -> Result:
    """Whether another push has a change awaiting confirmation on this switch (`busy`, the push in
    `extra["pending_push"]`), asked of every targeted switch before any of them is even read: a
    candidate loaded for a diff could disturb the other push's pending change (NVUE's pending
    revision, say). A switch that cannot be asked fails the push as an unreadable one does; a busy
    one fails this task too (this push may not go there)."""
    started = time.monotonic()
    outcome = DeviceOutcome(task.host.name, Status.CLEAR)
    try:
        other = other_push(_connect(task), opts.push_id)
        if other is not None:
            outcome.status, outcome.extra["pending_push"] = Status.BUSY, other
            outcome.reason = f"another push has a change pending confirmation here: {describe(other)}"
    except Exception as exc:
        outcome.status, outcome.reason = Status.FAILED, mask(_reason(exc), opts.masked)
    outcome.seconds = time.monotonic() - started
    log.info("%s: pending-push check %s %s", task.host.name, outcome.status, outcome.reason)
    return _result(task, outcome, failed=outcome.status != Status.CLEAR, changed=False)


def other_push(conn: Any, own: str) -> dict[str, Any] | None:
    """The push (id, start, controller) whose change awaits confirmation on this switch, when it is not
    this one. A driver without `pending_push` (NAPALM's own, or its mock) cannot say, and counts as
    having none: only such drivers go unchecked, and their platform's own commit still refuses a
    second pending change where it can (EOS's pending commit timer, say)."""
    ask = getattr(type(conn), "pending_push", None)
    if ask is None:
        return None
    found = conn.pending_push()
    if not found or found.get("push_id") == own:
        return None
    return dict(found)


def _discard_quietly(conn: Any) -> None:
    """A candidate loaded before a failure is not left behind (an EOS config session, say), if the
    switch can still be told; the failure itself is what gets reported."""
    if conn is None:
        return
    with contextlib.suppress(Exception):  # best effort: the failure before it is what is reported
        conn.discard_config()


Guard = Callable[[str], str | None]  # why a diff read at stage may not be committed (None: it may)


def stage(
    task: Task, candidate: str, expect: Expectation, opts: PushOptions, batch: int, *, guard: Guard | None = None
) -> Result:
    """Load, diff, commit with the revert timer armed, then the checks. `guard`: asked of the diff read here
    before the commit (the rollout's: a diff that changed since the preview and became disruptive on a
    switch that was not drained); its answer fails the switch with nothing committed."""
    started = time.monotonic()
    outcome = DeviceOutcome(task.host.name, Status.FAILED, batch=batch)
    committed = False
    conn: Any = None
    reading: _Beside[Health] | None = None
    preparing: _Beside[None] | None = None
    try:
        conn = _connect(task)
        if not opts.dry_run and _concurrent(conn):  # the health before the commit, read while the candidate loads
            reading = _Beside(lambda: _health(conn, expect))
        conn.load_replace_candidate(config=candidate)
        # What the commit reads first (a driver's rollback point, its pending-commit check), read while the
        # candidate is staged and diffed; a discard below drops it.
        if not opts.dry_run and _concurrent(conn) and callable(getattr(conn, "prepare_commit", None)):
            preparing = _Beside(conn.prepare_commit)
        outcome.diff = mask(conn.compare_config(), opts.masked)
        if preparing is not None:  # what follows (a discard, the commit) comes after its reads; had they
            preparing.wait()  # failed, the commit reads again itself and says why
        if not outcome.diff.strip():
            conn.discard_config()
            outcome.status = Status.UNCHANGED
        elif opts.dry_run:
            conn.discard_config()
            outcome.status = Status.WOULD_CHANGE
        elif guard is not None and (refused := guard(outcome.diff)) is not None:
            conn.discard_config()
            outcome.reason = refused
        else:
            before = reading.result() if reading is not None else _health(conn, expect)
            checkpoint = task.host.platform in CHECKPOINT_PLATFORMS
            committed = True  # from here on, any failure rolls back (the timer too, if the controller is lost)
            timer = None if checkpoint else opts.confirm_timeout
            log.info("%s: commit %s (revert timer %s s, batch %d)", task.host.name, digest(outcome.diff), timer, batch)
            conn.commit_config(revert_in=timer)
            problems = _wait_healthy(conn, expect, before, opts)
            if problems:
                log.info("%s: checks failed, rolling back: %s", task.host.name, mask("; ".join(problems), opts.masked))
                conn.rollback()
                outcome.status, outcome.reason = Status.ROLLED_BACK, "; ".join(problems)
            else:
                outcome.status = Status.STAGED
    except Exception as exc:  # a device's failure is its outcome; the rollout decides what it means
        outcome.reason = _reason(exc)
        if committed:
            outcome.status, outcome.reason = _roll_back_after(conn, outcome.reason)
    finally:
        for beside in (reading, preparing):  # nothing of the switch's session is left running when the task ends
            if beside is not None:
                beside.wait()
    outcome.reason = mask(outcome.reason, opts.masked)
    outcome.seconds = time.monotonic() - started
    log.info("%s: stage %s %s", task.host.name, outcome.status, outcome.reason)
    # A failure after the commit whose rollback failed too leaves the change on the switch.
    kept = outcome.status == Status.STAGED or (committed and outcome.status == Status.FAILED)
    failed = outcome.status in (Status.FAILED, Status.ROLLED_BACK)
    return _result(task, outcome, failed=failed, changed=kept, diff=outcome.diff)


def _roll_back_after(conn: Any, reason: str) -> tuple[Status, str]:
    try:
        conn.rollback()
    except Exception as exc:
        return (
            Status.FAILED,
            f"{reason}; rollback failed: {_reason(exc)} (a timer, where the platform has one, reverts)",
        )
    return Status.ROLLED_BACK, f"{reason} (after the commit: rolled back)"


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def confirm(task: Task, outcome: DeviceOutcome, masked: tuple[str, ...] = ()) -> Result:
    """Confirm a staged change. Failed or not, the switch holds the change when this ends (a failed
    confirm leaves it pending, for the rollout's rollback or the switch's timer)."""
    try:
        conn = _connect(task)
        if task.host.platform not in CHECKPOINT_PLATFORMS:
            conn.confirm_commit()
        outcome.status = Status.CHANGED
    except Exception as exc:
        outcome.status, outcome.reason = Status.FAILED, mask(f"confirm failed: {_reason(exc)}", masked)
    log.info("%s: confirm %s %s", task.host.name, outcome.status, outcome.reason)
    return _result(task, outcome, failed=outcome.status == Status.FAILED, changed=True, diff=outcome.diff)


def rollback(task: Task, outcome: DeviceOutcome, why: str, masked: tuple[str, ...] = ()) -> Result:
    """Return the switch to its configuration from before the push; a failed rollback keeps the change."""
    try:
        _connect(task).rollback()
        outcome.status, outcome.reason = Status.ROLLED_BACK, why
    except Exception as exc:
        outcome.status, outcome.reason = Status.FAILED, mask(f"{why}; rollback failed: {_reason(exc)}", masked)
    log.info("%s: rollback %s %s", task.host.name, outcome.status, outcome.reason)
    failed = outcome.status == Status.FAILED
    return _result(task, outcome, failed=failed, changed=failed)


def sessions_down(task: Task, peers: dict[str, int]) -> Result:
    """The planned BGP sessions of this switch that are not established (with the planned ASN) now."""
    try:
        conn = _connect(task)
        up = health(Expectation(task.host.name, peers, ()), sessions_now(conn), {}).peers_up
        return Result(host=task.host, result=sorted(set(peers) - up))
    except Exception as exc:  # unreachable now: every session counts as down, with the reason
        return Result(host=task.host, result=[f"({_reason(exc)})"], failed=True)
