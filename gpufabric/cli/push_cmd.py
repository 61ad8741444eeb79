"""`nornir push`: put the rendered configuration on the switches, safely."""

from __future__ import annotations

import dataclasses
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from gpufabric.cli.errors import show_notes
from gpufabric.cli.fleet_options import fleet_options
from gpufabric.cli.output import err, out, shown, write_stdout
from gpufabric.cli.push_progress import PushProgress
from gpufabric.config.secrets import SecretUnavailableError, secret_values
from gpufabric.fleet.candidates import candidate
from gpufabric.fleet.errors import PushRefusedError
from gpufabric.fleet.expect import Expectation, expectations
from gpufabric.fleet.push_id import PushId, new_push_id, tag
from gpufabric.fleet.status import Status
from gpufabric.fleet.target import WORKERS, Fleet, FleetArgs, open_fleet
from gpufabric.lab import state as lab_state
from gpufabric.outputs import json_dumps
from gpufabric.parallel import cores
from gpufabric.platforms import platform
from gpufabric.push.audit import ENV as AUDIT_ENV
from gpufabric.push.audit import AuditLog, SwitchFacts, Trail, Who, default_path
from gpufabric.push.converge import Convergence, fabric_sessions, wait_converged
from gpufabric.push.lock import fabric_lock
from gpufabric.push.rollout import Rollout, run
from gpufabric.push.targets import Batch, batches
from gpufabric.push.timing import check_platform_timers, check_timing
from nornir_tasks.push import DeviceOutcome, PushOptions, digest


@dataclass(frozen=True)
class Asked:
    """What the command line asked of this push, beyond which switches and how to reach them."""

    as_json: bool
    dry_run: bool
    confirm_timeout: int
    check_timeout: float
    batch_size: int | None
    one_plane_at_a_time: bool
    diff: bool
    from_dir: Path | None
    wait_seconds: float


STYLE = {
    Status.UNCHANGED: "dim",
    Status.CHANGED: "green",
    Status.WOULD_CHANGE: "yellow",
    Status.ROLLED_BACK: "red",
    Status.FAILED: "bold red",
    Status.SKIPPED: "yellow",
}


def _changed_since(args: FleetArgs, old: str) -> FleetArgs | None:
    """The selection narrowed to the switches `gpufabric diff OLD` says change (None: none do)."""
    from gpufabric.cli.diff_cmd import compare, load_side
    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan

    diff = compare(build_plan(load_side(old)), build_plan(load_intent(args.file)))
    changed = set(diff.changed_switches())
    if args.devices:
        changed &= set(args.devices)
    if not changed:
        return None
    err.print(shown(f"{len(changed)} switches differ from {old}: {', '.join(sorted(changed)[:10])}"
                    + (", ..." if len(changed) > 10 else "")))  # fmt: skip
    return dataclasses.replace(args, devices=tuple(sorted(changed)))


@click.command("push")
@fleet_options
@click.option("--dry-run", is_flag=True, help="Show each switch's diff; change nothing.")
@click.option(
    "--confirm-timeout",
    type=click.IntRange(10, 3600),
    default=120,
    show_default=True,
    help="Seconds after which a switch reverts a commit by itself unless the push confirms it.",
)
@click.option(
    "--check-timeout",
    type=click.FloatRange(1, 600),
    default=30.0,
    show_default=True,
    help="Seconds a switch's BGP sessions and ports get to come back after its change.",
)
@click.option(
    "--batch",
    "batch_size",
    type=click.IntRange(1),
    help="At most this many switches at once (within a failure domain, and in all when planes go side by side).",
)
@click.option(
    "--one-plane-at-a-time",
    is_flag=True,
    help="One failure domain per batch, every plane's leaves, then borders, then spines, instead of the data "
    "planes side by side (a batch then takes the next domain of each plane).",
)
@click.option(
    "--diff/--no-diff",
    default=True,
    show_default=True,
    help="Print each changed switch's diff once every diff is read, before the first change goes out.",
)
@click.option(
    "--wait",
    "wait_seconds",
    type=click.FloatRange(0, 3600),
    default=60.0,
    show_default=True,
    help="After a converged push, wait up to this long for every BGP session between pushed switches to be "
    "established (0: do not wait). Exit 1 if they are not.",
)
@click.option(
    "--changed-from",
    "changed_from",
    metavar="OLD",
    help="Push only the switches whose configuration differs from what the intent OLD (a file, or REV:PATH "
    "from git) gives: after growing the fabric, the new switches and those the new cables touch.",
)
@click.option(
    "--from",
    "from_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Push the files `render` wrote into this folder (as reviewed) instead of rendering again.",
)
@click.option(
    "--audit-log",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar=AUDIT_ENV,
    help="Append one JSON line per switch this push touches here (`gpufabric audit` reads it back). "
    f"[env: {AUDIT_ENV}; default: the lab's state folder for a push to the lab (removed by `lab down`), "
    "/var/log/gpufabric/audit.jsonl for root, ~/.local/state/gpufabric/audit.jsonl otherwise]",
)
def push_cmd(
    *,
    fleet_args: FleetArgs,
    as_json: bool,
    dry_run: bool,
    confirm_timeout: int,
    check_timeout: float,
    batch_size: int | None,
    one_plane_at_a_time: bool,
    diff: bool,
    from_dir: Path | None,
    wait_seconds: float,
    changed_from: str | None,
    audit_log: Path | None,
) -> int:
    """Push the rendered configuration to the switches, one failure domain of a plane at a time.

    \b
    First every targeted switch is read at once: load the candidate (replace), diff, discard. A
    switch that cannot be reached or read fails the push before anything changes; one without a
    diff is done. Each diff is printed then, once, before any switch changes. Then only the
    switches that change go out: a canary first (one that changes), then the failure domains,
    leaves first; a batch takes the next domain of each data plane (their
    switches share no link), the OOB plane goes last and alone. Per switch: load and diff again,
    commit with a revert timer armed on the switch (NX-OS: a configuration replace commit-timeout),
    wait for its BGP sessions and ports that were up to come back, then confirm the batch; or roll
    back. The first failing batch is rolled back whole (switches already confirmed too, when a
    confirm fails) and stops the rollout. A second identical push changes nothing and says so.

    \b
    Targets the real switches, with the password from the variable the intent names; the local
    lab (`gpufabric lab up`) only with --lab. One push per fabric at a time (a lock on this
    machine), and none while another push's change awaits confirmation on a targeted switch
    (asked of every switch first; each push's id is in its output and on the switches it
    changes); --confirm-timeout must outlive the checks of a whole batch (it is checked).
    Secrets are resolved in memory and never printed or shown in a diff.

    \b
    Every switch the push touches gets one JSON line in the audit log (who, from where, when, the
    switch, the push id, the SHA-256 of its masked diff, how it ended), dry runs and refused pushes
    too; a push that cannot append to the log stops before it reads a switch.

    Exit codes: 0 every targeted switch converged; 1 a switch failed or was rolled back, or an
    audit record could not be written; 2 bad intent, options, timeouts that cannot protect a
    batch, missing credentials, an audit log that cannot be written, or another push of the
    fabric running.
    """
    started = time.perf_counter()
    push = new_push_id()
    asked = Asked(
        as_json, dry_run, confirm_timeout, check_timeout, batch_size, one_plane_at_a_time, diff, from_dir, wait_seconds
    )
    # Opened before anything is read: a push that cannot leave its trail changes nothing.
    with AuditLog(audit_log or _default_trail(fleet_args)) as trail_file:
        return _push(trail_file, push, started, fleet_args, asked=asked, changed_from=changed_from)


def _default_trail(fleet_args: FleetArgs) -> Path:
    """A push to a lab that is up keeps its trail in the lab's state folder, which `lab down` removes
    with the lab; any other push, the system's or the account's trail."""
    if fleet_args.lab or fleet_args.state_dir is not None:
        state_dir = fleet_args.state_dir or lab_state.DEFAULT_DIR
        if lab_state.LabState.load(state_dir) is not None:
            return state_dir / lab_state.AUDIT_FILE
    return default_path()


def _push(
    trail_file: AuditLog, push: PushId, started: float, fleet_args: FleetArgs, *, asked: Asked, changed_from: str | None
) -> int:
    if changed_from is not None:
        narrowed = _changed_since(fleet_args, changed_from)
        if narrowed is None:
            err.print(shown(f"no switch's configuration differs from {changed_from}: nothing to push"))
            return 0
        fleet_args = narrowed
    fleet = open_fleet(fleet_args)
    show_notes(fleet.access)
    tag(fleet.nr.inventory, push)  # every driver learns the push id (after open_fleet set their options)
    names = [d.name for d in fleet.targets]
    trail = Trail(
        trail_file,
        push.id,
        push.started,
        fleet.plan.intent.fabric.name,
        Who.now(fleet.access.username, push.controller),
        asked.dry_run,
        "lab" if fleet.access.lab else "switches",
        {d.name: SwitchFacts(d.platform, d.plane) for d in fleet.targets},
    )
    try:
        rollout, plan_batches = _guarded(fleet, push, trail, fleet_args, asked)
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
    if rollout.converged and not asked.dry_run and asked.wait_seconds > 0:
        sessions = fabric_sessions(fleet.plan, fleet.index, names)
        with err.status(f"waiting up to {asked.wait_seconds:g} s for {sum(map(len, sessions.values()))} BGP sessions"):
            settled = wait_converged(fleet.nr, sessions, asked.wait_seconds)
    fleet.nr.close_connections()
    elapsed = time.perf_counter() - started
    code = _report(
        fleet,
        rollout,
        push=push,
        plan_batches=plan_batches,
        dry_run=asked.dry_run,
        as_json=asked.as_json,
        elapsed=elapsed,
        settled=settled,
    )
    if trail.error is not None:
        err.print(shown(f"error: {trail.error}; this push's trail is incomplete"))
        code = 1
    return code if settled is None or settled.converged else 1


def _guarded(
    fleet: Fleet, push: PushId, trail: Trail, fleet_args: FleetArgs, asked: Asked
) -> tuple[Rollout, list[Batch]]:
    """Everything of a push that may refuse it before a change (PushRefusedError), then the rollout."""
    names = [d.name for d in fleet.targets]
    candidates = {n: candidate(fleet.plan, fleet.index, n, fleet.access.secrets, asked.from_dir) for n in names}
    expects = expectations(fleet.plan, fleet.index, names)
    plan_batches = batches(
        fleet.plan, fleet.targets, asked.batch_size, width=WORKERS, one_plane_at_a_time=asked.one_plane_at_a_time
    )
    opts = PushOptions(
        dry_run=asked.dry_run,
        confirm_timeout=asked.confirm_timeout,
        check_timeout=asked.check_timeout,
        masked=secret_values(fleet.plan.intent, fleet.access.secrets),
        push_id=push.id,
    )
    check_timing(
        confirm_timeout=asked.confirm_timeout,
        check_timeout=asked.check_timeout,
        settle=opts.settle,
        connect_timeout=fleet_args.timeout,
        largest_batch=max(len(b.devices) for b in plan_batches),
        workers=WORKERS,
    )
    if not fleet.access.lab:  # the lab's switches all run FRR, whatever the plan says
        check_platform_timers(asked.confirm_timeout, (platform(d.platform) for d in fleet.targets))
    if not asked.as_json:
        err.print(shown(f"push {push.id} from {push.controller}"))
    with ExitStack() as stack:
        if not asked.dry_run:
            stack.enter_context(fabric_lock(fleet.plan.intent.fabric.name))
        rollout = _rollout(
            fleet,
            plan_batches=plan_batches,
            candidates=candidates,
            expects=expects,
            opts=opts,
            total=len(names),
            show_diff=asked.diff and not asked.as_json,
            trail=trail,
        )
    return rollout, plan_batches


def _rollout(
    fleet: Fleet,
    *,
    plan_batches: list[Batch],
    candidates: dict[str, str],
    expects: dict[str, Expectation],
    opts: PushOptions,
    total: int,
    show_diff: bool,
    trail: Trail,
) -> Rollout:
    """Run the push under a progress bar (a terminal only), printing each diff once all are read,
    before the first batch goes out, and a line per batch as it ends; each switch's audit record is
    written as soon as its outcome is final, before anything about it is printed: a report that
    cannot be printed must not cost the trail a batch's real outcome (a failed rollback above all)."""
    where = "the lab" if fleet.access.lab else "the switches"
    with PushProgress(where, total, show_diff=show_diff, dry_run=opts.dry_run) as progress:

        def on_preview(read: Rollout) -> None:
            # A dry run ends here; otherwise the switches that would change end with their batch (or skipped).
            _audit(trail, [o for o in read.outcomes.values() if opts.dry_run or o.status != Status.WOULD_CHANGE])
            progress.on_preview(read)

        def on_batch(b: Batch, done: dict[str, DeviceOutcome]) -> None:
            _audit(trail, list(done.values()))
            progress.on_batch(b, done)

        return run(
            fleet.nr.with_processors([progress]),
            plan_batches=plan_batches,
            candidates=candidates,
            expects=expects,
            opts=opts,
            on_preview=on_preview,
            on_batch=on_batch,
            processes=cores(),
        )


def _audit(trail: Trail, outcomes: list[DeviceOutcome]) -> None:
    for o in outcomes:
        trail.record(o.device, o.status, o.reason, digest=digest(o.diff), batch=o.batch)


def _report(
    fleet: Fleet,
    rollout: Rollout,
    *,
    push: PushId,
    plan_batches: list[Batch],
    dry_run: bool,
    as_json: bool,
    elapsed: float,
    settled: Convergence | None,
) -> int:
    # The switches that went out (or would have), in batch order; then the others, in plan order.
    batched = [n for b in rollout.batches for n in b.devices]
    ordered = [rollout.outcomes[n] for n in batched]
    ordered += [rollout.outcomes[n] for b in plan_batches for n in b.devices if rollout.outcomes[n].batch == 0]
    if settled is not None and not as_json:
        if settled.converged:
            err.print(
                f"converged: all {settled.sessions} BGP sessions between pushed switches up ({settled.seconds:.1f} s)"
            )
        else:
            for name, down in sorted(settled.down.items()):
                # What is down may carry a switch's own words (why it could not be asked): text, not markup.
                head = Text(f"not converged after {settled.seconds:.0f} s", "red")
                err.print(Text.assemble(head, ": ", shown(f"{name}: {', '.join(down)}")))
    if as_json:
        # Written as is (strict JSON: no NaN or Infinity, every control character and non-ASCII escaped).
        write_stdout(
            json_dumps(
                {
                    "push_id": push.id,
                    "started": push.started,
                    "controller": push.controller,
                    "converged": rollout.converged,
                    "dry_run": dry_run,
                    "target": "lab" if fleet.access.lab else "switches",
                    "seconds": round(elapsed, 2),
                    "batches": [asdict(b) for b in rollout.batches],
                    "devices": [asdict(o) for o in ordered],
                    "sessions": None if settled is None else asdict(settled),
                },
                indent=2,
            )
            + "\n"
        )
    else:
        _print_human(ordered)
        changed = sum(o.status in (Status.CHANGED, Status.WOULD_CHANGE) for o in ordered)
        if changed == 0 and rollout.converged:
            err.print(
                f"no changes: all {len(ordered)} switches already run the planned configuration ({elapsed:.1f} s)"
            )
        else:
            verb = "would change" if dry_run else "changed"
            err.print(
                f"push {push.id}: {changed} of {len(ordered)} switches {verb} in {len(rollout.batches)} batches, "
                f"{elapsed:.1f} s"
            )
    return 0 if rollout.converged else 1


def _print_human(ordered: list[DeviceOutcome]) -> None:
    table = Table(title="push")
    for column in ("batch", "switch", "result", "seconds", "reason"):
        table.add_column(column)
    for o in ordered:
        # The reason is the switch's own words (an error it gave): shown as text, never read as markup.
        status = Text(str(o.status), STYLE.get(o.status, ""))
        table.add_row(str(o.batch), shown(o.device), status, f"{o.seconds:.1f}", shown(o.reason))
    out.print(table)
