"""A push as a library call: `push(request, watcher) -> PushResult`.

Everything a push decides and does lives here: the audit trail opened first (a push that cannot
leave its trail changes nothing), the selection narrowed to what differs from an older intent, the
fleet opened (gpufabric.fleet decides lab or real switches), the refusals checked before anything
changes, the rollout under the fabric's lock, and the wait for the pushed switches' BGP sessions.
It prints nothing: what a person sees while it runs, the `PushWatcher` it is given shows (the
command line's progress bar and lines); what it did, the `PushResult` it returns says.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from nornir.core.processor import Processor
from nornir.plugins.runners import ThreadedRunner

from gpufabric.config.compare import compare, load_side
from gpufabric.config.secrets import SecretUnavailableError, secret_values
from gpufabric.fleet.access import Access
from gpufabric.fleet.args import FleetArgs
from gpufabric.fleet.candidates import candidate
from gpufabric.fleet.errors import PushRefusedError
from gpufabric.fleet.expect import Expectation, expectations
from gpufabric.fleet.push_id import PushId, new_push_id, tag
from gpufabric.fleet.status import Status
from gpufabric.fleet.target import WORKERS, Fleet, lab_trail, open_fleet
from gpufabric.intent import load_intent
from gpufabric.parallel import cores
from gpufabric.plan import build_plan
from gpufabric.platforms import platform
from gpufabric.push.audit import AuditError, AuditLog, SwitchFacts, Trail, Who, default_path
from gpufabric.push.budget import Budget, stage_workers
from gpufabric.push.converge import Convergence, fabric_sessions, wait_converged
from gpufabric.push.drain import Drainer, DrainPolicy
from gpufabric.push.lock import fabric_lock
from gpufabric.push.rollout import Rollout, run
from gpufabric.push.targets import Batch, batches
from gpufabric.push.timing import check_platform_timers, check_timing
from nornir_tasks.push import DeviceOutcome, PushOptions, digest


@dataclass(frozen=True)
class PushRequest:
    """What a push is asked to do, beyond which switches and how to reach them (`fleet`)."""

    fleet: FleetArgs
    dry_run: bool = False
    confirm_timeout: int = 120  # a switch reverts a commit by itself unless confirmed within this
    check_timeout: float = 30.0  # how long a switch's sessions and ports get to come back
    batch_size: int | None = None
    one_plane_at_a_time: bool = False
    from_dir: Path | None = None  # push the files `render` wrote here instead of rendering again
    wait_seconds: float = 60.0  # after a converged push, wait this long for the pushed sessions (0: none)
    changed_from: str | None = None  # only the switches whose configuration differs from this intent
    audit_log: Path | None = None  # None: the lab's state folder for a lab that is up, else the default
    drain: DrainPolicy = DrainPolicy.AUTO  # which switches are drained around their change
    drainer: Drainer | None = None  # what drains them (None: a push that needs a drain is refused)
    # What drains them, made once the fleet is open (the scheduler and the wait need the plan and the trail);
    # it takes the place of `drainer`.
    drainer_for: Callable[[Fleet, PushId, Trail], Drainer] | None = None
    max_capacity_loss: float | None = None  # a capacity budget (0.125: 12.5%); None: one domain of a plane a batch


class RolloutView(Processor, Protocol):
    """What watches a rollout: a Nornir processor, told of the diffs once all are read and of each batch."""

    def on_preview(self, read: Rollout) -> None: ...

    def on_batch(self, batch: Batch, done: dict[str, DeviceOutcome]) -> None: ...


class PushWatcher:
    """What a push tells its caller while it runs. Every method does nothing here: a library caller
    gets the result alone; the command line overrides them to show progress as it happens."""

    def narrowed(self, old: str, changed: list[str]) -> None:
        """The selection was narrowed to the switches whose configuration differs from `old`."""

    def reached(self, access: Access) -> None:
        """The fleet is open; `access.notes` are for the person running the push."""

    def starting(self, push: PushId) -> None:
        """Every refusal before the rollout passed; the rollout begins."""

    def rolling_out(self, where: str, total: int, dry_run: bool) -> AbstractContextManager[RolloutView | None]:
        return nullcontext(None)

    def waiting(self, sessions: int, seconds: float) -> AbstractContextManager[None]:
        return nullcontext(None)


@dataclass(frozen=True)
class PushResult:
    push: PushId
    target: str  # "lab" or "switches"
    dry_run: bool
    converged: bool  # every targeted switch is where the push wanted it
    seconds: float
    batches: tuple[Batch, ...] = ()  # the batches that went out (or would have), in order
    devices: tuple[DeviceOutcome, ...] = ()  # those batches' switches in order, then the others in plan order
    sessions: Convergence | None = None  # the wait for the pushed switches' BGP sessions, when there was one
    trail_error: AuditError | None = None  # an audit record that could not be written
    nothing_differs_from: str | None = None  # `changed_from` named an intent no switch differs from
    drain: DrainPolicy = DrainPolicy.NEVER  # the push's drain policy

    @property
    def drained(self) -> list[DeviceOutcome]:
        """The switches drained around their change (in a dry run: that would be), in batch order."""
        return [o for o in self.devices if o.drain]

    @property
    def by_name(self) -> dict[str, DeviceOutcome]:
        return {o.device: o for o in self.devices}

    @property
    def changed(self) -> int:
        """How many switches changed (or, in a dry run, would)."""
        return sum(o.status in (Status.CHANGED, Status.WOULD_CHANGE) for o in self.devices)

    @property
    def ok(self) -> bool:
        """Converged, its trail complete, and the pushed sessions up when they were waited for."""
        settled = self.sessions is None or self.sessions.converged
        return self.converged and self.trail_error is None and settled

    def as_dict(self) -> dict[str, Any]:
        """What `push --json` prints."""
        return {
            "push_id": self.push.id,
            "started": self.push.started,
            "controller": self.push.controller,
            "converged": self.converged,
            "dry_run": self.dry_run,
            "target": self.target,
            "seconds": round(self.seconds, 2),
            "batches": [asdict(b) for b in self.batches],
            "devices": [asdict(o) for o in self.devices],
            "sessions": None if self.sessions is None else asdict(self.sessions),
            "drain": {"policy": str(self.drain), "switches": [o.device for o in self.drained]},
        }


def push(request: PushRequest, watcher: PushWatcher | None = None, *, push_id: PushId | None = None) -> PushResult:
    """Push the rendered configuration to the selected switches, one failure domain of a plane at a time.

    Raises PushRefusedError (or SecretUnavailableError) when it refuses before any change: every
    record of the trail then says why."""
    started = time.perf_counter()
    ident = push_id or new_push_id()
    # Opened before anything is read: a push that cannot leave its trail changes nothing.
    with AuditLog(request.audit_log or default_trail(request.fleet)) as trail_file:
        return _push(trail_file, ident, started, request, watcher or PushWatcher())


def default_trail(args: FleetArgs) -> Path:
    """A push to a lab that is up keeps its trail in the lab's state folder, which `lab down` removes
    with the lab; any other push, the system's or the account's trail."""
    return lab_trail(args) or default_path()


def changed_since(args: FleetArgs, old: str) -> FleetArgs | None:
    """The selection narrowed to the switches whose configuration differs from what the intent `old`
    gives (None: none do)."""
    diff = compare(build_plan(load_side(old)), build_plan(load_intent(args.file)))
    changed = set(diff.changed_switches())
    if args.devices:
        changed &= set(args.devices)
    if not changed:
        return None
    return dataclasses.replace(args, devices=tuple(sorted(changed)))


def _push(
    trail_file: AuditLog, ident: PushId, started: float, request: PushRequest, watcher: PushWatcher
) -> PushResult:
    fleet_args = request.fleet
    if request.changed_from is not None:
        narrowed = changed_since(fleet_args, request.changed_from)
        if narrowed is None:
            seconds = time.perf_counter() - started
            target = "lab" if fleet_args.wants_lab else "switches"
            return PushResult(ident, target, request.dry_run, True, seconds, nothing_differs_from=request.changed_from)
        watcher.narrowed(request.changed_from, list(narrowed.devices))
        fleet_args = narrowed
    fleet = open_fleet(fleet_args)
    watcher.reached(fleet.access)
    tag(fleet.nr.inventory, ident)  # every driver learns the push id (after open_fleet set their options)
    names = fleet.names
    trail = Trail(
        trail_file,
        ident.id,
        ident.started,
        fleet.plan.intent.fabric.name,
        Who.now(fleet.access.username, ident.controller),
        request.dry_run,
        _target(fleet),
        {d.name: SwitchFacts(d.platform, d.plane) for d in fleet.targets},
    )
    try:
        rollout, plan_batches = _guarded(fleet, ident, trail, request, watcher)
    except (PushRefusedError, SecretUnavailableError) as exc:  # nothing was changed: each record says why
        fleet.nr.close_connections()
        trail.refused(names, str(exc))
        raise
    except BaseException as exc:  # a bug or an interrupt: the trail still names every switch not yet recorded
        why = f"the push stopped: {type(exc).__name__} (a change still pending reverts by its timer)"
        for name in names:
            trail.record(name, Status.FAILED, why)
        raise
    _audit(trail, [rollout.outcomes[n] for n in names if n in rollout.outcomes])  # skipped ones, and the rest
    settled = None
    if rollout.converged and not request.dry_run and request.wait_seconds > 0:
        sessions = fabric_sessions(fleet.plan, fleet.index, names, contexts=fleet.contexts)
        with watcher.waiting(sum(map(len, sessions.values())), request.wait_seconds):
            settled = wait_converged(fleet.nr, sessions, request.wait_seconds)
    fleet.nr.close_connections()
    # The switches that went out (or would have), in batch order; then the others, in plan order.
    batched = [n for b in rollout.batches for n in b.devices]
    ordered = [rollout.outcomes[n] for n in batched]
    ordered += [rollout.outcomes[n] for b in plan_batches for n in b.devices if rollout.outcomes[n].batch == 0]
    return PushResult(
        ident,
        _target(fleet),
        request.dry_run,
        rollout.converged,
        time.perf_counter() - started,
        tuple(rollout.batches),
        tuple(ordered),
        settled,
        trail.error,
        drain=request.drain,
    )


def _target(fleet: Fleet) -> str:
    return "lab" if fleet.access.lab else "switches"


def _guarded(
    fleet: Fleet, ident: PushId, trail: Trail, request: PushRequest, watcher: PushWatcher
) -> tuple[Rollout, list[Batch]]:
    """Everything of a push that may refuse it before a change (PushRefusedError), then the rollout."""
    names = fleet.names
    secrets = fleet.access.secrets
    candidates = {
        n: candidate(fleet.plan, fleet.index, n, secrets, request.from_dir, contexts=fleet.contexts) for n in names
    }
    expects = expectations(fleet.plan, fleet.index, names, contexts=fleet.contexts)
    budget = None if request.max_capacity_loss is None else Budget(fleet.plan, request.max_capacity_loss)
    if budget is not None:
        plan_batches = budget.batches(fleet.plan, fleet.targets, request.batch_size, width=WORKERS)
        workers = stage_workers(plan_batches, WORKERS)
        fleet.nr = fleet.nr.with_runner(ThreadedRunner(num_workers=workers))  # a whole batch staged at once
    else:
        plan_batches = batches(
            fleet.plan,
            fleet.targets,
            request.batch_size,
            width=WORKERS,
            one_plane_at_a_time=request.one_plane_at_a_time,
        )
        workers = WORKERS
    opts = PushOptions(
        dry_run=request.dry_run,
        confirm_timeout=request.confirm_timeout,
        check_timeout=request.check_timeout,
        masked=secret_values(fleet.plan.intent, secrets),
        push_id=ident.id,
    )
    check_timing(
        confirm_timeout=request.confirm_timeout,
        check_timeout=request.check_timeout,
        settle=opts.settle,
        connect_timeout=request.fleet.timeout,
        largest_batch=max(len(b.devices) for b in plan_batches),
        workers=workers,
    )
    if not fleet.access.lab:  # the lab's switches all run FRR, whatever the plan says
        check_platform_timers(request.confirm_timeout, (platform(d.platform) for d in fleet.targets))
    watcher.starting(ident)
    with ExitStack() as stack:
        if not request.dry_run:
            stack.enter_context(fabric_lock(fleet.plan.intent.fabric.name, target=fleet.access.target))
        rollout = _rollout(
            fleet,
            plan_batches=plan_batches,
            candidates=candidates,
            expects=expects,
            opts=opts,
            trail=trail,
            watcher=watcher,
            drain=request.drain,
            drainer=request.drainer_for(fleet, ident, trail) if request.drainer_for else request.drainer,
            budget=budget,
        )
    return rollout, plan_batches


def _rollout(
    fleet: Fleet,
    *,
    plan_batches: list[Batch],
    candidates: dict[str, str],
    expects: dict[str, Expectation],
    opts: PushOptions,
    trail: Trail,
    watcher: PushWatcher,
    drain: DrainPolicy,
    drainer: Drainer | None,
    budget: Budget | None = None,
) -> Rollout:
    """The rollout, watched; each switch's audit record is written as soon as its outcome is final,
    before the watcher hears of it: a report that cannot be shown must not cost the trail a batch's
    real outcome (a failed rollback above all)."""
    where = "the lab" if fleet.access.lab else "the switches"
    with watcher.rolling_out(where, len(fleet.targets), opts.dry_run) as view:

        def on_preview(read: Rollout) -> None:
            if budget is not None:  # what each batch that goes out costs, for the trail and the result
                read.batches[:] = [dataclasses.replace(b, cost=budget.cost(b.devices).as_dict()) for b in read.batches]
            # A dry run ends here; otherwise the switches that would change end with their batch (or skipped).
            _audit(trail, [o for o in read.outcomes.values() if opts.dry_run or o.status != Status.WOULD_CHANGE])
            if view is not None:
                view.on_preview(read)

        def on_batch(b: Batch, done: dict[str, DeviceOutcome]) -> None:
            if b.cost is not None:
                trail.batch(b.number, b.domain, b.devices, b.cost, budget=budget.budget if budget else None)
            _audit(trail, list(done.values()))
            if view is not None:
                view.on_batch(b, done)

        return run(
            fleet.nr.with_processors([view] if view is not None else []),
            plan_batches=plan_batches,
            candidates=candidates,
            expects=expects,
            opts=opts,
            on_preview=on_preview,
            on_batch=on_batch,
            processes=cores(),
            # Each switch's diff read as its platform reads it (in the lab, every switch is frr).
            classify={d.name: platform(d.platform).disruptions for d in fleet.targets},
            drain=drain,
            drainer=drainer,
        )


def _audit(trail: Trail, outcomes: list[DeviceOutcome]) -> None:
    for o in outcomes:
        trail.record(o.device, o.status, o.reason, digest=digest(o.diff), batch=o.batch)
