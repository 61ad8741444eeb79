"""`nornir push`: put the rendered configuration on the switches, safely (gpufabric.push.service)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from gpufabric.cli.errors import outcome, show_notes
from gpufabric.cli.fleet_options import fleet_options
from gpufabric.cli.options import FiniteFloat
from gpufabric.cli.output import err, out, shown, write_stdout
from gpufabric.cli.push_progress import PushProgress
from gpufabric.cli.scheduler_options import Lines, change_options, reach_of
from gpufabric.fleet.access import Access
from gpufabric.fleet.args import FleetArgs
from gpufabric.fleet.push_id import PushId
from gpufabric.fleet.status import Status
from gpufabric.maintenance.around import push_drainer
from gpufabric.maintenance.service import Settle
from gpufabric.outputs import json_dumps
from gpufabric.push.audit import ENV as AUDIT_ENV
from gpufabric.push.budget import BudgetError, parse_budget
from gpufabric.push.drain import DrainPolicy
from gpufabric.push.service import PushRequest, PushResult, PushWatcher, RolloutView, push
from nornir_tasks.push import DeviceOutcome

STYLE = {
    Status.UNCHANGED: "dim",
    Status.CHANGED: "green",
    Status.WOULD_CHANGE: "yellow",
    Status.ROLLED_BACK: "red",
    Status.FAILED: "bold red",
    Status.SKIPPED: "yellow",
}


@click.command("push")
@fleet_options
@click.option("--dry-run", is_flag=True, help="Show each switch's diff and which would be drained; change nothing.")
@click.option(
    "--drain",
    type=click.Choice([p.value for p in DrainPolicy]),
    default=DrainPolicy.AUTO.value,
    show_default=True,
    help="Drain switches around their change: auto, those whose change is disruptive as their platform reads "
    "the diff (a BGP reset, an agent restart, buffers, a port's speed or MTU, a reboot, or a change not known "
    "to be hitless); always, every switch that changes; never, none.",
)
@click.option(
    "--confirm-timeout",
    type=click.IntRange(10, 3600),
    default=120,
    show_default=True,
    help="Seconds after which a switch reverts a commit by itself unless the push confirms it.",
)
@click.option(
    "--check-timeout",
    type=FiniteFloat(1, 600),
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
    "--max-capacity-loss",
    "max_capacity_loss",
    metavar="PCT",
    callback=lambda _ctx, _param, value: _budget(value),
    help="A capacity budget (such as 12.5%): a batch may hold several failure domains of a plane while every "
    "ECMP group keeps at least the rest of its members, no server loses more than one rail of a plane, and the "
    "out-of-band plane keeps the rest of its ports reachable; the whole batch is staged at once. "
    "[default: none: one failure domain of a plane per batch]",
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
    type=FiniteFloat(0, 3600),
    default=60.0,
    show_default=True,
    help="After a converged push, wait up to this long for every BGP session between pushed switches to be "
    "established (0: do not wait). Exit 4 if they are not.",
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
@change_options
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
    drain: str,
    max_capacity_loss: float | None,
    **change_opts: Any,
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

    \b
    A switch drained around its change (--drain) is drained with its OS's own mechanism, and its
    change waits until the traffic has left it (--drain-timeout). Before a switch that is the only
    path of some server's NIC (a rail leaf, a storage leaf without an MLAG pair) is drained, those
    servers are drained in the schedulers the intent's `scheduler:` section or the options name,
    and their jobs waited for (--job-wait; then refused, or --force); they are resumed once the
    switch is back, only the nodes gpufabric drained. Each of these steps is in the audit log.

    Exit codes: 0 every targeted switch converged; 4 a switch failed or was rolled back, or an
    audit record could not be written; 2 bad intent, options, timeouts that cannot protect a
    batch, missing credentials, an audit log that cannot be written, or another push of the
    fabric running.
    """
    request = PushRequest(
        fleet_args,
        dry_run=dry_run,
        confirm_timeout=confirm_timeout,
        check_timeout=check_timeout,
        batch_size=batch_size,
        one_plane_at_a_time=one_plane_at_a_time,
        from_dir=from_dir,
        wait_seconds=wait_seconds,
        changed_from=changed_from,
        audit_log=audit_log,
        drain=DrainPolicy(drain),
        drainer_for=push_drainer(
            reach_of(change_opts),
            force=change_opts["force"],
            settle=Settle(wait=change_opts["drain_timeout"] > 0, timeout=change_opts["drain_timeout"]),
            watcher=Lines(),
        ),
        max_capacity_loss=max_capacity_loss,
    )
    if max_capacity_loss is not None and one_plane_at_a_time:
        raise click.UsageError("--max-capacity-loss and --one-plane-at-a-time: choose one")
    result = push(request, Shown(as_json=as_json, show_diff=diff and not as_json))
    if result.nothing_differs_from is not None:
        err.print(shown(f"no switch's configuration differs from {result.nothing_differs_from}: nothing to push"))
        return 0
    _report(result, as_json=as_json)
    if result.trail_error is not None:
        err.print(shown(f"error: {result.trail_error}; this push's trail is incomplete"))
    return outcome(result.ok)


def _budget(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_budget(value)
    except BudgetError as exc:
        raise click.BadParameter(str(exc)) from None


class Shown(PushWatcher):
    """The push as it happens, on the terminal: its notes, its id, the progress bar, diffs and batches."""

    def __init__(self, *, as_json: bool, show_diff: bool) -> None:
        self.as_json, self.show_diff = as_json, show_diff

    def narrowed(self, old: str, changed: list[str]) -> None:
        err.print(shown(f"{len(changed)} switches differ from {old}: {', '.join(changed[:10])}"
                        + (", ..." if len(changed) > 10 else "")))  # fmt: skip

    def reached(self, access: Access) -> None:
        show_notes(access)

    def starting(self, push: PushId) -> None:
        if not self.as_json:
            err.print(shown(f"push {push.id} from {push.controller}"))

    def rolling_out(self, where: str, total: int, dry_run: bool) -> AbstractContextManager[RolloutView | None]:
        return PushProgress(where, total, show_diff=self.show_diff, dry_run=dry_run)

    @contextmanager
    def waiting(self, sessions: int, seconds: float) -> Iterator[None]:
        with err.status(f"waiting up to {seconds:g} s for {sessions} BGP sessions"):
            yield


def _report(result: PushResult, *, as_json: bool) -> None:
    settled = result.sessions
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
        write_stdout(json_dumps(result.as_dict(), indent=2) + "\n")
        return
    _print_human(list(result.devices))
    _print_drains(result)
    if result.changed == 0 and result.converged:
        err.print(
            f"no changes: all {len(result.devices)} switches already run the planned configuration "
            f"({result.seconds:.1f} s)"
        )
    else:
        verb = "would change" if result.dry_run else "changed"
        err.print(
            f"push {result.push.id}: {result.changed} of {len(result.devices)} switches {verb} in "
            f"{len(result.batches)} batches, {result.seconds:.1f} s"
        )
    costs = [(b.number, b.cost) for b in result.batches if b.cost is not None]
    if costs:
        share, worst = min((float(str(c["worst_ecmp_share"])), n) for n, c in costs)
        rails = max(int(str(c["max_rails_lost"])) for _, c in costs)
        reach = min(float(str(c["reach_share"])) for _, c in costs)
        err.print(
            f"capacity: the worst ECMP group kept {share:.1%} of its members (batch {worst}), a server lost at most "
            f"{rails} rail(s) of a plane at once, the out-of-band plane kept {reach:.1%} of its ports"
        )


def _print_human(ordered: list[DeviceOutcome]) -> None:
    table = Table(title="push")
    for column in ("batch", "switch", "result", "drain", "seconds", "reason"):
        table.add_column(column)
    for o in ordered:
        # The reason is the switch's own words (an error it gave): shown as text, never read as markup.
        status = Text(str(o.status), STYLE.get(o.status, ""))
        table.add_row(str(o.batch), shown(o.device), status, _drain_cell(o), f"{o.seconds:.1f}", shown(o.reason))
    out.print(table)


def _drain_cell(o: DeviceOutcome) -> str:
    """Drained (or would be) and why, in the reasons' words; or nothing."""
    if not o.drain:
        return ""
    return ", ".join(dict.fromkeys(str(d.reason) for d in o.disruptions)) or "yes"


def _print_drains(result: PushResult) -> None:
    """Which switches were (or would be) drained around their change, and what in their diff says why."""
    drained = result.drained
    if not drained:
        if result.dry_run and result.changed:
            out.print(f"no switch would be drained (--drain {result.drain})")
        return
    verb = "would be drained" if result.dry_run else "drained around their change"
    out.print(f"{len(drained)} switches {verb} (--drain {result.drain}):")
    for o in drained:
        details = [d.detail for d in o.disruptions] or [f"--drain {result.drain}"]
        for i, detail in enumerate(details):
            head = o.device if i == 0 else " " * len(o.device)
            reason = str(o.disruptions[i].reason) if o.disruptions else "always"
            # The detail quotes the switch's own diff: text, never markup.
            out.print(Text.assemble("  ", shown(head), "  ", shown(reason), ": ", shown(detail)))
