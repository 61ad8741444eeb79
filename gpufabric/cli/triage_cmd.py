"""`gpufabric triage nccl`: what a job's NCCL and PyTorch errors name, on the plan (docs/jobs.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gpufabric.cli.errors import EXIT_FINDINGS, EXIT_OK
from gpufabric.cli.options import lab_name_callback, load_plan
from gpufabric.cli.output import err, out, shown, write_stdout
from gpufabric.jobs.nccl_log import read_logs
from gpufabric.jobs.triage import End, Event, Suspect, Triage, triage
from gpufabric.outputs import json_dumps

if TYPE_CHECKING:
    from gpufabric.fleet.lab.names import LabNames
    from gpufabric.jobs.footprint import Footprint
    from gpufabric.jobs.job_triage import JobTriage
    from gpufabric.plan.model import Plan

SHOWN_EVENTS = 20  # errors listed in the text report (--json has them all)


@click.group("triage")
def triage_cmd() -> None:
    """Why a job failed, from its own words: the parts of the fabric its errors name."""


@triage_cmd.command("nccl")
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--intent",
    "file",
    type=click.Path(dir_okay=False),
    help="The intent file. [default: ./inventory/fabric.yml, else the default fabric shipped with gpufabric]",
)
@click.option("--json", "as_json", is_flag=True, help="Everything read, resolved and concluded, as one JSON object.")
def nccl_cmd(logs: tuple[Path, ...], file: str | None, as_json: bool) -> int:
    """Map every address, GID, host name and rank the NCCL and PyTorch errors in LOGS name onto the plan's
    NICs, rails, leaf ports and cables, and name the part they all have in common.

    \b
    Read: NCCL WARN lines of NCCL 2.18-2.27 (NET/IB completion errors and async events, failing ibv_* calls,
    socket errors), NCCL INFO init lines (which host each rank ran on), PyTorch's watchdog timeouts. A WARN or
    watchdog line in no known layout is listed as unread; nothing is guessed from it.

    \b
    JSON keys: suspects[] {kind, name, events, plane, rail, cable, leaf, leaf_port, confirm}, common[],
    most_named[], events[] {kind, layout, file, line, host, rank, detail, ends[] {said, via, server, nic,
    note}}, evidence, weighed, layouts, errors_not_kept, ranks_placed, unread[] {file, line, text}, unread_count,
    notes.

    Exit codes: 0 nothing points anywhere; 4 a suspect (the most specific part every error names: a NIC and
    its cable, a leaf, a server); 2 a log that cannot be read (not a regular file, not UTF-8, a line over
    64 KiB, a file over 1 GiB).
    """
    plan = load_plan(file)
    found = triage(plan, read_logs(logs))
    if as_json:
        write_stdout(json_dumps(found.as_dict(), indent=2) + "\n")
    else:
        _print(found)
    return EXIT_FINDINGS if found.suspects else EXIT_OK


def _print(t: Triage) -> None:
    r = t.reading
    layouts = ", ".join(f"{name} {count}" for name, count in sorted(r.layouts.items())) or "none"
    err.print(
        shown(f"read {len(r.files)} file(s), {r.lines} line(s): errors {layouts}; {t.ranks_placed} rank(s) placed")
    )
    for where, text in r.unread[:SHOWN_EVENTS]:
        err.print(shown(f"unread: {where.file}:{where.line}: {text}"))
    if r.unread_count > SHOWN_EVENTS:
        err.print(shown(f"unread: {r.unread_count - SHOWN_EVENTS} more line(s) (--json lists {len(r.unread)})"))
    for event in t.events[:SHOWN_EVENTS]:
        out.print(shown(_event(event)), soft_wrap=True)  # one error a line, however long, for grep
    if len(t.events) > SHOWN_EVENTS:
        out.print(shown(f"... {len(t.events) - SHOWN_EVENTS} more error(s) (--json lists them all)"))
    for note in t.notes:
        err.print(shown(f"note: {note}"))
    if not t.suspects:
        out.print(shown(f"no part common to the {t.weighed} error(s) weighed ({t.evidence})"))
        for (kind, name), count in t.counts[:5]:
            out.print(shown(f"  named in {count}: {kind} {name}"))
        return
    which = "suspect" if len(t.suspects) == 1 else f"suspects (one of {len(t.suspects)})"
    out.print(shown(f"{which}, common to all {t.weighed} error(s) weighed ({t.evidence}):"), style="bold")
    for s in t.suspects:
        out.print(shown(f"  {_suspect(s)}"))
        for command in s.confirm:
            out.print(shown(f"    look: {command}"), soft_wrap=True)


def _suspect(s: Suspect) -> str:
    if s.nic is None:
        return f"{s.kind} {s.name} (in {s.events})"
    n = s.nic
    rail = f", rail {n.rail}" if n.rail is not None else ""
    return f"NIC {s.name} ({n.plane}{rail}, {n.address}): cable {n.cable} to {n.leaf} {n.leaf_port} (in {s.events})"


def _event(e: Event) -> str:
    s = e.said
    what = s.detail.get("status_name") or s.detail.get("call") or s.detail.get("error") or s.detail.get("op") or ""
    ends = "; ".join(_end(end) for end in e.ends) or "nothing the plan holds"
    return f"{s.where.file}:{s.where.line} {s.kind} {what}: {ends}"


def _end(end: End) -> str:
    if end.nic is not None:
        return f"{end.via} {end.said} = {end.nic.node} {end.nic.interface} ({end.nic.leaf} {end.nic.leaf_port})"
    said = end.said if end.via == "rank" else f"{end.via} {end.said}"  # "rank 8", not "rank rank 8"
    if end.server is not None:
        return f"{said} = {end.server}" + (f" ({end.note})" if end.note else "")
    return f"{said}: {end.note}"


WINDOW = re.compile(r"[1-9][0-9]{0,4}[smh]")


@triage_cmd.command("job")
@click.argument("job", required=False)
@click.option("--nodes", metavar="LIST", help="The job's nodes, as a Slurm hostlist: gpu[01-04],gpu07.")
@click.option(
    "--intent",
    "file",
    type=click.Path(dir_okay=False),
    help="The intent file. [default: ./inventory/fabric.yml, else the default fabric shipped with gpufabric]",
)
@click.option(
    "--slurm-conf",
    type=click.Path(dir_okay=False, path_type=Path),
    help="slurm.conf for squeue (JOB only). [default: the intent's scheduler.slurm.conf, else Slurm's own]",
)
@click.option("--prometheus", metavar="URL", help="Prometheus holding gpufabric's exporter and the probe mesh.")
@click.option("--window", default="5m", show_default=True, help="How far back counters and the mesh are read.")
@click.option("--lab", is_flag=True, help="The lab (root): probe from the hosts' namespaces, read the switches' paths.")
@click.option(
    "--lab-name",
    metavar="NAME",
    callback=lab_name_callback,
    help="The lab brought up with `gpufabric lab up --name NAME` (its switches' and hosts' namespaces carry the "
    "name); naming it implies --lab.",
)
@click.option("--count", type=click.IntRange(5, 400), default=40, show_default=True, help="Active probes per peer.")
@click.option("--nccl", "logs", multiple=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The job's NCCL/PyTorch output (repeatable): its errors' suspects are evidence too.")  # fmt: skip
@click.option("--timeline", type=click.Path(dir_okay=False, path_type=Path),
              help="`gpufabric job timeline JOB --json`'s output: the job's events, as evidence.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="The suspects, their evidence and what was read, as JSON.")
def job_cmd(
    *,
    job: str | None,
    nodes: str | None,
    file: str | None,
    slurm_conf: Path | None,
    prometheus: str | None,
    window: str,
    lab: bool,
    lab_name: str | None,
    count: int,
    logs: tuple[Path, ...],
    timeline: Path | None,
    as_json: bool,
) -> int:
    """Rank the suspect parts of JOB's footprint (a running Slurm job) or of --nodes: links, NICs, switches and
    BGP sessions, from the exporter's counters and BGP sessions (--prometheus), latency and loss between the
    job's NICs (the probe mesh's results; where there are none, or to localise what they show, a short active
    probe with --lab), the job's timeline (--timeline) and its NCCL errors (--nccl).

    \b
    Each suspect comes with its evidence and the read-only command that confirms it.
    JSON keys: job, nodes, suspects[] {kind, device, port, peer, peer_port, cable (a link or BGP session);
    node, interface, leaf, leaf_port, cable (a NIC); name, strength, evidence[] {source, said, time},
    confirm[]}, probe {source, flows, sent, lost, median_rtt, paths_known, paths_moved},
    sources, notes.

    Exit codes: 0 nothing points anywhere; 4 a suspect; 2 bad input (a node the plan does not hold, a job not
    running, an unreadable log, timeline or Prometheus answer).
    """
    if (job is None) == (nodes is None):
        raise click.UsageError("give a JOB id or --nodes LIST (one of them)")
    if not WINDOW.fullmatch(window):
        raise click.BadParameter("a duration such as 90s, 5m or 1h", param_hint="--window")
    names = _lab_names(lab, lab_name)
    found, plan = _footprint(job, nodes, file, slurm_conf, names)
    result = _triage_job(
        found, plan, prometheus=prometheus, window=window, lab=names, count=count, logs=logs, timeline=timeline
    )
    if as_json:
        write_stdout(json_dumps(result.as_dict(), indent=2) + "\n")
    else:
        _print_job(result)
    return EXIT_FINDINGS if result.suspects else EXIT_OK


def _lab_names(lab: bool, lab_name: str | None) -> LabNames | None:
    """The lab to read (--lab, --lab-name), or None for none."""
    if not lab and lab_name is None:
        return None
    from gpufabric.fleet.lab.names import DEFAULT_LAB, LabNames

    return LabNames(lab_name or DEFAULT_LAB)


def _footprint(
    job: str | None, nodes: str | None, file: str | None, slurm_conf: Path | None, lab: LabNames | None
) -> tuple[Footprint, Plan]:
    from gpufabric.cli.scheduler_options import nodes_option, slurm_conf_of
    from gpufabric.jobs.footprint import FootprintError, footprint, slurm_job_nodes
    from gpufabric.scheduler.slurm import Slurm

    if lab is not None:
        from gpufabric.fleet.lab.topology import topology
        from gpufabric.intent import load_intent

        plan = topology(load_intent(file, embedded=False), lab.name).plan  # the lab's own plan: every switch as frr
    else:
        plan = load_plan(file, reaches=job is not None)
    if nodes is not None:
        names = nodes_option(nodes)
    else:
        assert job is not None
        names = slurm_job_nodes(job, Slurm(slurm_conf_of(plan, slurm_conf)))
    try:
        return footprint(plan, names, job), plan
    except FootprintError as exc:
        if nodes is not None:
            raise click.BadParameter(str(exc), param_hint="--nodes") from None
        raise


def _triage_job(
    found: Footprint,
    plan: Plan,
    *,
    prometheus: str | None,
    window: str,
    lab: LabNames | None,
    count: int,
    logs: tuple[Path, ...],
    timeline: Path | None,
) -> JobTriage:
    from gpufabric.jobs.job_triage import Readers, nccl_evidence, read_timeline, triage_job
    from gpufabric.jobs.triage_readers import LabPaths, LabProbe, Prometheus

    readers = Readers()
    if prometheus is not None:
        readers.counters = Prometheus(prometheus)
    if lab is not None:
        from gpufabric.jobs.job_triage import Parts
        from gpufabric.lab.hosts.spec import netns_of

        prefix = lab.host_prefix
        readers.probe = LabProbe(lambda host: netns_of(host, prefix))
        readers.paths = LabPaths(found, Parts(found), netns=lab.netns)
    if logs:
        readers.nccl = nccl_evidence(triage(plan, read_logs(logs)).suspects, found)
    if timeline is not None:
        readers.events = read_timeline(timeline)
    compute = plan.planes.get("compute")
    profile = plan.intent.qos_profiles.get(compute.qos) if compute is not None and compute.qos else None
    dscp = profile.roce_dscp if profile is not None else 0
    return triage_job(found, readers, intent=plan.source, dscp=dscp, window=window, count=count)


def _print_job(t: JobTriage) -> None:
    err.print(shown(f"{'job ' + t.job + ': ' if t.job else ''}{len(t.nodes)} node(s)"))
    for source, said in t.sources.items():
        err.print(shown(f"{source}: {said}"))
    for note in t.notes:
        err.print(shown(f"note: {note}"))
    if not t.suspects:
        out.print(shown("no suspect: nothing the evidence read points at"))
        return
    for i, s in enumerate(t.suspects, 1):
        out.print(shown(f"{i}. {s.part.kind} {s.part.name} (strength {s.strength:.1f})"), style="bold", soft_wrap=True)
        for e in s.evidence:
            when = f" at {e.time}" if e.time else ""
            out.print(shown(f"   {e.source}{when}: {e.said}"), soft_wrap=True)
        for command in s.confirm:
            out.print(shown(f"   look: {command}"), soft_wrap=True)
