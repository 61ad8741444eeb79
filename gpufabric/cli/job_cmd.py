"""`gpufabric job show`: a job's footprint on the plan (docs/jobs.md)."""

from __future__ import annotations

from pathlib import Path

import click

from gpufabric.cli.options import load_plan
from gpufabric.cli.output import err, out, shown, write_stdout
from gpufabric.export.hostlist import compress
from gpufabric.jobs.footprint import Crossing, Footprint, FootprintError, footprint, slurm_job_nodes
from gpufabric.outputs import json_dumps
from gpufabric.scheduler.model import SchedulerOutputError
from gpufabric.scheduler.slurm import Slurm, expand_hostlist

intent_option = click.option(
    "--intent",
    "file",
    type=click.Path(dir_okay=False),
    help="The intent file. [default: ./inventory/fabric.yml, else the default fabric shipped with gpufabric]",
)


@click.group("job")
def job_cmd() -> None:
    """A job as the fabric sees it: its nodes, their NICs, leaf ports, cables and the switches between them."""


@job_cmd.command("show")
@click.argument("job", required=False)
@click.option("--nodes", metavar="LIST", help="The job's nodes, as a Slurm hostlist: gpu[01-04],gpu07.")
@intent_option
@click.option(
    "--slurm-conf",
    type=click.Path(dir_okay=False, path_type=Path),
    help="slurm.conf for squeue (JOB only). [default: the intent's scheduler.slurm.conf, else Slurm's own]",
)
@click.option("--json", "as_json", is_flag=True, help="The footprint as one JSON object on stdout.")
def show_cmd(job: str | None, nodes: str | None, file: str | None, slurm_conf: Path | None, as_json: bool) -> int:
    """The footprint of JOB (a running Slurm job, read with squeue --json) or of --nodes, from the plan: each
    node's NICs per plane and rail with their leaf port and cable, the spines and superspines the plan's ECMP
    paths between the job's leaves cross (rail by rail; none when each rail's nodes share one leaf), and its
    storage path (the storage servers' leaves and the switches between).

    \b
    JSON keys: nodes, nics[] {node, plane, rail, interface, address, leaf, leaf_port, cable, bond},
    planes[] and storage[] {plane, leaves, spines, superspines, cables, servers, toward}, notes.

    Exit codes: 0 shown; 2 a node the plan does not hold, an unreadable hostlist, a job Slurm does not
    show running, or JOB and --nodes both or neither given.
    """
    if (job is None) == (nodes is None):
        raise click.UsageError("give a JOB id or --nodes LIST (one of them)")
    plan = load_plan(file, reaches=job is not None)  # Slurm's nodes are only ever placed on a real intent
    if nodes is not None:
        try:
            names = expand_hostlist(nodes)
        except SchedulerOutputError as exc:
            raise click.BadParameter(f"{exc}: a Slurm hostlist, e.g. gpu[01-04],gpu07", param_hint="--nodes") from None
    else:
        assert job is not None
        settings = plan.intent.scheduler
        conf = slurm_conf
        if conf is None and settings is not None and settings.slurm is not None and settings.slurm.conf:
            conf = Path(settings.slurm.conf)
        names = slurm_job_nodes(job, Slurm(conf))
    try:
        found = footprint(plan, names, job)
    except FootprintError as exc:
        if nodes is not None:
            raise click.BadParameter(str(exc), param_hint="--nodes") from None
        raise
    if as_json:
        write_stdout(json_dumps(found.as_dict(), indent=2) + "\n")
    else:
        _print(found)
    return 0


def _print(found: Footprint) -> None:
    from rich.table import Table  # the table only: --json does without it

    title = f"job {found.job}: " if found.job else ""
    err.print(shown(f"{title}{len(found.nodes)} node(s): {compress(list(found.nodes))}"))
    table = Table(title="NICs", title_justify="left")
    for column in ("node", "plane", "rail", "interface", "address", "leaf", "leaf port", "cable"):
        table.add_column(column)
    for nic in found.nics:
        rail = "" if nic.rail is None else str(nic.rail)
        table.add_row(nic.node, nic.plane, rail, nic.interface, nic.address, nic.leaf, nic.leaf_port, nic.cable)
    out.print(table)
    for crossing in found.planes:
        out.print(shown(_line(crossing, "job traffic")))
    for crossing in found.storage:
        out.print(shown(_line(crossing, f"storage ({', '.join(crossing.servers)})")))
    for note in found.notes:
        err.print(shown(f"note: {note}"))


def _line(c: Crossing, what: str) -> str:
    leaves = f"leaves {', '.join(c.leaves)}" + (f" -> {', '.join(c.toward)}" if c.toward else "")
    if not c.spines and not c.superspines:
        return f"{c.plane} {what}: {leaves}; no spine (each rail's nodes under one leaf)"
    parts = [f"spines {', '.join(c.spines)}"]
    if c.superspines:
        parts.append(f"superspines {', '.join(c.superspines)}")
    return f"{c.plane} {what}: {leaves}; {'; '.join(parts)}; {len(c.cables)} fabric cable(s)"
