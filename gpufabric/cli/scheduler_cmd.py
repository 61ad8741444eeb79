"""`gpufabric scheduler`: the servers behind a switch, and their drains in Slurm and Kubernetes."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from gpufabric.cli.errors import outcome
from gpufabric.cli.options import FiniteFloat, file_arg, load_plan
from gpufabric.cli.output import err, out
from gpufabric.cli.scheduler_options import Lines, reach_options, reach_with_wait
from gpufabric.drivers.push_id import new_push_id
from gpufabric.errors import printable
from gpufabric.outputs import json_dumps
from gpufabric.scheduler import (
    Behind,
    SchedulerDrain,
    drain_for,
    resume,
    resume_owner,
    schedulers,
    status,
)
from gpufabric.scheduler import job_wait as wait_of
from gpufabric.scheduler.model import OWNER

NONE_NAMED = "no scheduler named: the intent has no `scheduler:` section and no option names one"


def _owner(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not OWNER.fullmatch(value):
        raise click.BadParameter(f"{value!r}: letters, digits, '.', '_', '-' (a push id: gf-YYYYmmddTHHMMSSZ-xxxxxx)")
    return value


@click.group("scheduler")
def scheduler_cmd() -> None:
    """The servers that depend on a switch alone, drained in Slurm and Kubernetes before it changes.

    A server is behind a switch when one of its NICs has no other path: a rail leaf, a storage leaf
    without an MLAG pair, a spine that is some leaf's only way up. Which scheduler, and how to reach it,
    comes from the intent's `scheduler:` section or the options below.
    """


@scheduler_cmd.command("behind")
@file_arg
@click.option("--device", "devices", multiple=True, required=True, metavar="NAME", help="The switch (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="A JSON object: switch -> its servers and their NICs.")
def behind_cmd(file: str | None, devices: tuple[str, ...], as_json: bool) -> int:
    """The servers with a NIC whose only path is the switch, read from the plan (no scheduler is asked).

    Exit codes: 0 listed; 2 a switch the plan does not hold.
    """
    plan = load_plan(file)
    known = {d.name for d in plan.devices()}
    for name in devices:
        if name not in known:
            raise click.BadParameter(f"{name!r} is not a switch of the plan", param_hint="--device")
    behind = Behind(plan)
    found = {name: [asdict(s) for s in behind(name)] for name in devices}
    if as_json:
        out.print_json(json_dumps(found))
        return 0
    table = Table(title="servers behind")
    for column in ("switch", "server", "plane", "NICs", "leaves"):
        table.add_column(column)
    for name in devices:
        for server in behind(name):
            for nic in server.nics:
                table.add_row(name, server.name, nic.plane, " ".join(nic.interfaces), " ".join(nic.leaves))
    out.print(table)
    err.print(f"{sum(len(v) for v in found.values())} server(s) behind {len(devices)} switch(es)")
    return 0


@scheduler_cmd.command("status")
@file_arg
@reach_options
@click.option("--json", "as_json", is_flag=True, help="The marked nodes as a JSON list.")
def status_cmd(file: str | None, as_json: bool, **opts: Any) -> int:
    """Every node that carries a gpufabric mark in the schedulers: the drains a push (or a crashed
    controller) left. A node a person drained carries no mark and is not listed.

    Exit codes: 0 read (none found is not an error); 2 a scheduler cannot be reached or read.
    """
    plan = load_plan(file)
    rows = []
    found = schedulers(plan, reach_with_wait(opts))
    if not found:
        err.print(NONE_NAMED)
    for scheduler in found:
        for state, mark in status(scheduler):
            rows.append(
                {
                    "scheduler": scheduler.kind,
                    "node": state.name,
                    "owner": mark.owner,
                    "subject": mark.subject,
                    "set_by": state.set_by,
                    "holders": list(state.holders),
                }
            )
    if as_json:
        out.print_json(json_dumps(rows))
        return 0
    table = Table(title="nodes gpufabric took out")
    for column in ("scheduler", "node", "owner", "for", "set by", "still running"):
        table.add_column(column)
    for row in rows:
        cells = (row["scheduler"], row["node"], row["owner"], row["subject"], row["set_by"], ", ".join(row["holders"]))
        table.add_row(*(Text(printable(str(c))) for c in cells))
    out.print(table)
    err.print(f"{len(rows)} node(s) marked by gpufabric")
    return 0


@scheduler_cmd.command("drain")
@file_arg
@click.option("--device", "devices", multiple=True, required=True, metavar="NAME", help="The switch (repeatable).")
@click.option(
    "--owner",
    callback=_owner,
    metavar="ID",
    help="The id the drain is recorded under. [default: a new push id]",
)
@click.option("--job-wait", type=FiniteFloat(min=0), help="Seconds to wait for jobs. [default: the intent's]")
@click.option("--force", is_flag=True, help="Go on when the wait runs out, with jobs still running (said loudly).")
@reach_options
@click.option("--json", "as_json", is_flag=True, help="What was drained, per scheduler, as JSON.")
def drain_cmd(
    file: str | None,
    devices: tuple[str, ...],
    *,
    owner: str | None,
    job_wait: float | None,
    force: bool,
    as_json: bool,
    **opts: Any,
) -> int:
    """Take the servers behind the switches out of the schedulers and wait for their jobs to end, as a
    push does before a disruptive change; `scheduler resume --owner ID` puts them back.

    Exit codes: 0 the nodes are free (or --force); 4 refused: the wait ran out, and the nodes gpufabric
    took out were put back; 2 bad input or a scheduler that cannot be reached.
    """
    plan = load_plan(file, reaches=True)
    known = {d.name for d in plan.devices()}
    for name in devices:
        if name not in known:
            raise click.BadParameter(f"{name!r} is not a switch of the plan", param_hint="--device")
    reach = reach_with_wait(opts, job_wait)
    wait = wait_of(plan, reach)
    ident = owner or new_push_id()
    drains: list[SchedulerDrain] = []
    found = schedulers(plan, reach)
    if not found:
        err.print(NONE_NAMED)
    for number, scheduler in enumerate(found):
        drain = drain_for(scheduler, plan, list(devices), ident, wait, force=force, watcher=Lines())
        drains.append(drain)
        if drain.refused:
            for earlier, drained in zip(found[:number], drains[:-1], strict=True):
                resume(earlier, drained, Lines())  # what another scheduler took out goes back too: nothing changed
            break
    if as_json:
        out.print_json(json_dumps([_jsonable(d) for d in drains]))
    else:
        err.print(f"owner {ident}: {sum(len(d.ours) for d in drains)} node(s) taken out")
    return outcome(not any(d.refused for d in drains))


def _jsonable(drain: SchedulerDrain) -> dict[str, Any]:
    data = asdict(drain)
    data["mark"] = drain.mark.text
    data["holding"] = {k: list(v) for k, v in drain.holding.items()}
    return data


@scheduler_cmd.command("resume")
@file_arg
@click.option(
    "--owner",
    callback=_owner,
    required=True,
    metavar="ID",
    help="The push id (or owner) whose drains to undo.",
)
@reach_options
def resume_cmd(file: str | None, owner: str, **opts: Any) -> int:
    """Put back every node carrying the owner's mark; a node a person drained (another reason) stays out.

    Exit codes: 0 done; 2 a scheduler cannot be reached.
    """
    plan = load_plan(file, reaches=True)
    count = 0
    for scheduler in schedulers(plan, reach_with_wait(opts)):
        for drain in resume_owner(scheduler, owner, Lines()):
            count += len(drain.resumed)
    err.print(f"{count} node(s) put back")
    return 0
