"""Run a push: read every switch's diff at once, then batch by batch only the switches that change:
drain those of the batch whose change is disruptive (gpufabric/push/drain.py), stage the batch in
parallel, then confirm it whole or roll it back whole, then undrain what was drained. While a batch
changes, the next one's sessions are opened (a login, nothing more), so that its drain or stage does not
begin by waiting for them."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from nornir.core import Nornir
from nornir.plugins.runners import ThreadedRunner

from gpufabric.fleet.errors import PushRefusedError
from gpufabric.fleet.expect import Expectation
from gpufabric.fleet.push_id import describe, started_of
from gpufabric.fleet.runner import run_checked_forked, run_per_host, run_per_host_results
from gpufabric.fleet.status import CONVERGED, Status
from gpufabric.fleet.target import READ_WORKERS
from gpufabric.push.drain import Drainer, DrainPolicy, NoDrainerError, needs_drain, why
from gpufabric.push.targets import Batch, narrow
from nornir_tasks.push import (
    Classify,
    DeviceOutcome,
    Guard,
    PushOptions,
    check_pending,
    confirm,
    mask,
    preview,
    rollback,
    stage,
)

log = logging.getLogger(__name__)


class OtherPushPendingError(PushRefusedError):
    """Another push has a change awaiting confirmation on a targeted switch: this push changes nothing."""

    def __init__(self, switches: list[str], pending: list[dict[str, Any]]) -> None:
        # The push that started first is the one holding the fabric; name it, and where it was seen.
        first = min(range(len(switches)), key=lambda i: started_of(pending[i]) or "~")  # unknown: last
        self.switches, self.pending = switches, pending[first]
        others = f" and {len(switches) - 1} more" if len(switches) > 1 else ""
        super().__init__(
            f"another push is in progress: {describe(self.pending)} has a change pending confirmation on "
            f"{switches[first]}{others}; nothing was changed. Wait for it to be confirmed or to revert "
            "(its revert timer), then push again"
        )


@dataclass
class Rollout:
    outcomes: dict[str, DeviceOutcome] = field(default_factory=dict)
    batches: list[Batch] = field(default_factory=list)  # the switches that change, as they go out
    stopped_at: Batch | None = None
    unreadable: list[str] = field(default_factory=list)  # switches the diff could not be read from
    drain_policy: DrainPolicy = DrainPolicy.NEVER
    still_drained: list[str] = field(default_factory=list)  # drained by this push, and their undrain failed

    @property
    def converged(self) -> bool:
        return (
            self.stopped_at is None
            and not self.unreadable
            and not self.still_drained
            and all(o.status in CONVERGED for o in self.outcomes.values())
        )

    @property
    def drained(self) -> list[str]:
        """The switches drained around their change (in a dry run: that would be), in batch order."""
        return [n for b in self.batches for n in b.devices if self.outcomes[n].drain]


def run(
    nr: Nornir,
    *,
    plan_batches: list[Batch],
    candidates: dict[str, str],
    expects: dict[str, Expectation],
    opts: PushOptions,
    on_preview: Callable[[Rollout], None] | None = None,
    on_batch: Callable[[Batch, dict[str, DeviceOutcome]], None] | None = None,
    read_workers: int = READ_WORKERS,
    processes: int = 1,
    classify: Mapping[str, Classify] | None = None,
    drain: DrainPolicy = DrainPolicy.NEVER,
    drainer: Drainer | None = None,
) -> Rollout:
    """`plan_batches` hold every targeted switch; the batches that go out hold only those that change.
    The pending-push check and the preview read `read_workers` switches at once, from `processes`
    forked processes when there are many (the batches go out from this one). `classify`: per switch,
    its platform's reading of a diff (`Platform.disruptions`); `drain` says which switches `drainer`
    drains around their change.
    Raises OtherPushPendingError, before anything changes, when another push's change is pending on a
    targeted switch, and NoDrainerError when switches need a drain and there is no `drainer`."""
    names = [n for b in plan_batches for n in b.devices]
    rollout = Rollout(drain_policy=drain)
    nr.data.reset_failed_hosts()  # from here, Nornir's failed hosts are this push's
    # Every switch is only read until the first batch: more of them at once (the same Nornir, its data
    # and processors; only the runner is wider). The batches keep the runner they were planned for.
    reader = nr.with_runner(ThreadedRunner(num_workers=read_workers))
    per_host: dict[str, Any] = {"candidate": candidates, "opts": dict.fromkeys(names, opts)}
    if classify is not None:
        per_host["classify"] = {n: classify.get(n) for n in names}
    # The pending-push check of every switch ends before any candidate is loaded; each switch's preview then
    # runs on the session its check opened, in the same reading process.
    checks, previews = run_checked_forked(
        reader,
        names,
        check_pending,
        preview,
        processes,
        check_args={"opts": dict.fromkeys(names, opts)},
        task_args=per_host,
        go=lambda found: not any(o.status == Status.BUSY for o, _failed in found.values()),
    )
    checked = {name: outcome for name, (outcome, _failed) in checks.items()}
    busy = [n for n in names if checked[n].status == Status.BUSY]
    if busy:
        log.info("refused: another push is pending on %s", ", ".join(busy))
        raise OtherPushPendingError(busy, [checked[n].extra["pending_push"] for n in busy])
    rollout.outcomes.update({n: o for n, o in checked.items() if o.status == Status.FAILED})
    rollout.outcomes.update({name: outcome for name, (outcome, _failed) in previews.items()})
    # Nornir's failed hosts: those the pending-push check or the preview could not read.
    rollout.unreadable = [n for n in names if n in nr.data.failed_hosts]
    rollout.batches = narrow(plan_batches, {n for n in names if rollout.outcomes[n].status == Status.WOULD_CHANGE})
    log.info(
        "preview: %d switches, %d change, %d unreadable, %d batches",
        len(names),
        sum(len(b.devices) for b in rollout.batches),
        len(rollout.unreadable),
        len(rollout.batches),
    )
    for batch in rollout.batches:
        for name in batch.devices:
            outcome = rollout.outcomes[name]
            outcome.batch = batch.number
            outcome.drain = needs_drain(drain, outcome.disruptions)
    if rollout.drained and drainer is None and not opts.dry_run and not rollout.unreadable:
        raise NoDrainerError(rollout.drained, drain)
    if on_preview:
        on_preview(rollout)
    if rollout.unreadable:
        _skip_the_rest(rollout, f"not attempted: {rollout.unreadable[0]} could not be read, so nothing was changed")
    elif not opts.dry_run:
        _roll_out(
            nr,
            rollout,
            candidates=candidates,
            expects=expects,
            opts=opts,
            on_batch=on_batch,
            drainer=drainer,
            classify=classify,
        )
    return rollout


def _roll_out(
    nr: Nornir,
    rollout: Rollout,
    *,
    candidates: dict[str, str],
    expects: dict[str, Expectation],
    opts: PushOptions,
    on_batch: Callable[[Batch, dict[str, DeviceOutcome]], None] | None,
    drainer: Drainer | None,
    classify: Mapping[str, Classify] | None,
) -> None:
    warming: _WarmUp | None = None
    try:
        for number, batch in enumerate(rollout.batches):
            names = list(batch.devices)
            if warming is not None:
                warming.wait()  # this batch's logins, begun while the last one changed, are done (or failed)
            drained = [n for n in names if rollout.outcomes[n].drain]
            if drained:
                assert drainer is not None  # run() refuses a push that needs a drain and has no drainer
                if not _drain(nr, rollout, batch, drained, drainer=drainer, opts=opts):
                    _hang_up(nr, names)
                    if on_batch:
                        on_batch(batch, {n: rollout.outcomes[n] for n in names})
                    _skip_the_rest(rollout, f"not attempted: the rollout stopped at batch {batch.number}")
                    return
            after = list(rollout.batches[number + 1].devices) if number + 1 < len(rollout.batches) else []
            # The next batch's logins overlap the undrain (seconds of waiting on the switches) when there is
            # one, else the stage: never the stage's first moments and checks when they can be avoided.
            if after and not drained:
                warming = _WarmUp(nr, after)
            _stage_batch(nr, rollout, batch, candidates=candidates, expects=expects, opts=opts, classify=classify)
            if drained:
                assert drainer is not None
                if after:
                    warming = _WarmUp(nr, after)
                _undrain(nr, rollout, batch, drained, drainer=drainer, opts=opts)
            _hang_up(nr, names)
            if on_batch:
                on_batch(batch, {n: rollout.outcomes[n] for n in names})
            if rollout.stopped_at is not None:
                _skip_the_rest(rollout, f"not attempted: the rollout stopped at batch {batch.number}")
                return
    finally:
        if warming is not None:  # no login still under way once the rollout is over (its sessions are ended)
            warming.wait()


WARM_WORKERS = 16  # logins in flight for the next batch while a batch changes (each mostly waits on its switch)


class _WarmUp:
    """The sessions of the next batch's switches, opened in the background while a batch changes: a login costs
    that batch's drain (or stage) its first fraction of a second, more for a batch of many switches at once.
    Only the login: nothing is read or changed on a switch. A login that fails is left to the batch's own
    first task, which logs in again and says why it cannot. `wait()` before that batch begins, so that no
    switch is ever logged into twice at once."""

    def __init__(self, nr: Nornir, names: list[str]) -> None:
        hosts = [nr.inventory.hosts[n] for n in names if n in nr.inventory.hosts]
        self._thread = threading.Thread(target=_log_in, args=(hosts, nr.config), name="gpufabric-warm", daemon=True)
        self._thread.start()

    def wait(self) -> None:
        self._thread.join()


def _log_in(hosts: list[Any], config: Any) -> None:
    if not hosts:
        return
    with ThreadPoolExecutor(max_workers=min(WARM_WORKERS, len(hosts)), thread_name_prefix="gpufabric-warm") as pool:
        for host in hosts:
            pool.submit(_open_quietly, host, config)


def _open_quietly(host: Any, config: Any) -> None:
    with contextlib.suppress(Exception):  # the batch's own first task logs in again, and reports why it cannot
        host.get_connection("napalm", config)


def _hang_up(nr: Nornir, names: list[str]) -> None:
    """End the sessions of a batch that is done (a later reading, the wait for BGP after the push, logs in
    again): an open paramiko session keeps a thread waking ten times a second, and over a fabric's thousand
    switches those threads took the interpreter from the batches still to go."""
    for name in names:
        host = nr.inventory.hosts.get(name)
        if host is not None:
            with contextlib.suppress(Exception):  # a session already gone: nothing to end
                host.close_connections()


def _only(nr: Nornir, names: list[str]) -> Nornir:
    wanted = set(names)
    return nr.filter(filter_func=lambda h: h.name in wanted)


def _drain(
    nr: Nornir, rollout: Rollout, batch: Batch, names: list[str], *, drainer: Drainer, opts: PushOptions
) -> bool:
    """Drain the batch's switches that need it, before any of the batch changes. When one cannot be drained,
    nothing of the batch changes: those that were drained are undrained, and the rollout stops here."""
    reasons = {n: why(rollout.drain_policy, rollout.outcomes[n].disruptions) for n in names}
    log.info("batch %d (%s): draining %s", batch.number, batch.domain, ", ".join(names))
    failed = _ask(drainer.drain, _only(nr, names), opts.push_id, reasons, names=names)
    if not failed:
        return True
    first = next(iter(failed))
    log.info("batch %d: the drain failed on %s; nothing of the batch changes", batch.number, ", ".join(failed))
    back = [n for n in names if n not in failed]
    left = _ask(drainer.undrain, _only(nr, back), opts.push_id, names=back) if back else {}
    for name in batch.devices:
        o = rollout.outcomes[name]
        if name in failed:
            o.status, o.reason = Status.FAILED, mask(f"drain failed: {failed[name]}; nothing was changed", opts.masked)
        else:
            o.status, o.reason = Status.SKIPPED, f"not attempted: the drain of {first} failed; nothing was changed"
        if name in left:
            o.status = Status.FAILED
            o.reason = mask(f"{o.reason}; its undrain failed too, still drained: {left[name]}", opts.masked)
    rollout.still_drained += [n for n in names if n in left or n in failed]
    rollout.stopped_at = batch
    return False


def _undrain(
    nr: Nornir, rollout: Rollout, batch: Batch, names: list[str], *, drainer: Drainer, opts: PushOptions
) -> None:
    """Undrain the batch's drained switches once the batch is confirmed or rolled back. One that stays
    drained stops the rollout: the next batch would take another failure domain out while it is still out."""
    log.info("batch %d (%s): undraining %s", batch.number, batch.domain, ", ".join(names))
    left = _ask(drainer.undrain, _only(nr, names), opts.push_id, names=names)
    for name, reason in left.items():
        o = rollout.outcomes[name]
        done = f"{o.status}" + (f" ({o.reason})" if o.reason else "")
        o.status, o.reason = Status.FAILED, mask(f"{done}; undrain failed, still drained: {reason}", opts.masked)
        rollout.still_drained.append(name)
    if left:
        rollout.stopped_at = batch


def _ask(method: Callable[..., Mapping[str, str]], nr: Nornir, *args: Any, names: list[str]) -> dict[str, str]:
    """A drainer's answer, {name: why} of the switches it could not do; a drainer that raises did none."""
    try:
        return {n: str(w) for n, w in method(nr, *args).items() if n in names}
    except Exception as exc:
        return dict.fromkeys(names, f"{type(exc).__name__}: {exc}"[:300])


def _stage_batch(
    nr: Nornir,
    rollout: Rollout,
    batch: Batch,
    *,
    candidates: dict[str, str],
    expects: dict[str, Expectation],
    opts: PushOptions,
    classify: Mapping[str, Classify] | None = None,
) -> None:
    """Stage the batch, then confirm it whole or roll it back whole (setting `rollout.stopped_at` if not)."""
    names = list(batch.devices)
    log.info("batch %d (%s): staging %s", batch.number, batch.domain, ", ".join(names))
    results = run_per_host_results(
        nr,
        names,
        stage,
        candidate=candidates,
        expect=expects,
        opts=dict.fromkeys(names, opts),
        batch=dict.fromkeys(names, batch.number),
        guard={n: _guard(rollout, n, classify) for n in names},
    )
    staged = _outcomes(results)
    for name, o in staged.items():  # what the preview found stays with the switch
        o.disruptions, o.drain = rollout.outcomes[name].disruptions, rollout.outcomes[name].drain
    rollout.outcomes.update(staged)
    pending = [n for n in names if staged[n].status == Status.STAGED]
    failed = [n for n in names if n in results.failed_hosts]  # rolled back, or failed outright
    if failed:
        why = f"rolled back with its batch: {failed[0]} {staged[failed[0]].status}"
        log.info("batch %d: %s; rolling back %s", batch.number, why, ", ".join(pending) or "nothing")
        if pending:
            rollout.outcomes.update(
                run_per_host(
                    nr,
                    pending,
                    rollback,
                    outcome=staged,
                    why=dict.fromkeys(pending, why),
                    masked=dict.fromkeys(pending, opts.masked),
                )
            )
        rollout.stopped_at = batch
    elif pending:
        log.info("batch %d: every switch staged and healthy; confirming", batch.number)
        results = run_per_host_results(
            nr,
            pending,
            confirm,
            outcome=staged,
            masked=dict.fromkeys(pending, opts.masked),
        )
        confirmed = _outcomes(results)
        rollout.outcomes.update(confirmed)
        refused = [n for n in pending if n in results.failed_hosts]
        if refused:
            log.info("batch %d: confirm failed on %s; rolling the batch back", batch.number, ", ".join(refused))
            rollout.outcomes.update(_undo_batch(nr, confirmed, refused, opts.masked))
            rollout.stopped_at = batch  # nothing more goes out


def _guard(rollout: Rollout, name: str, classify: Mapping[str, Classify] | None) -> Guard | None:
    """For a switch not drained under a policy that would drain a disruptive change: a diff read at stage that
    is not the preview's and is disruptive is not committed (the switch changed since it was read)."""
    read = classify.get(name) if classify is not None else None
    outcome = rollout.outcomes[name]
    if read is None or outcome.drain or rollout.drain_policy == DrainPolicy.NEVER:
        return None
    previewed = outcome.diff

    def check(diff: str) -> str | None:
        if diff == previewed:
            return None
        found = read(diff)
        if not found:
            return None
        return f"its diff changed since the preview and is now disruptive ({found[0]}), but it was not drained"

    return check


def _undo_batch(
    nr: Nornir, confirmed: dict[str, DeviceOutcome], refused: list[str], masked: tuple[str, ...]
) -> dict[str, DeviceOutcome]:
    """A batch is all or nothing: when a switch's confirm fails, every switch of the batch is rolled
    back, those already confirmed too (each driver keeps the configuration from before its commit:
    FRR its rollback files, Cumulus the revision saved before the apply, EOS `flash:rollback-0`, NX-OS
    its checkpoint). The
    switches whose confirm failed are rolled back as well rather than left to their timers: a confirm
    can fail after the switch took it. Each outcome says what happened to that switch."""
    first = refused[0]
    why = {
        n: (
            f"{confirmed[n].reason}; the batch is rolled back"
            if n in refused
            else f"confirmed, then the batch was rolled back: {first}'s confirm failed"
        )
        for n in confirmed
    }
    names = list(confirmed)
    return run_per_host(nr, names, rollback, outcome=confirmed, why=why, masked=dict.fromkeys(names, masked))


def _skip_the_rest(rollout: Rollout, why: str) -> None:
    """Switches that would have changed in a later batch."""
    for name, outcome in rollout.outcomes.items():
        if outcome.status == Status.WOULD_CHANGE:
            rollout.outcomes[name] = DeviceOutcome(
                name, Status.SKIPPED, why, diff=outcome.diff, batch=outcome.batch, disruptions=outcome.disruptions
            )


def _outcomes(results: Any) -> dict[str, DeviceOutcome]:
    """Each host's DeviceOutcome, from a run of one of the push's tasks."""
    return {name: multi[0].result for name, multi in results.items()}
