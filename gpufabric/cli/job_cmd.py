"""`gpufabric job show`: a job's footprint on the plan (docs/jobs.md)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gpufabric.cli.options import load_plan
from gpufabric.cli.output import err, out, shown, write_stdout
from gpufabric.cli.scheduler_options import K8S_LOGIN_OPTIONS, nodes_option, slurm_conf_of
from gpufabric.export.hostlist import compress
from gpufabric.jobs.footprint import Crossing, Footprint, FootprintError, footprint, slurm_job_nodes
from gpufabric.outputs import json_dumps
from gpufabric.scheduler.model import SchedulerError, SchedulerOutputError
from gpufabric.scheduler.slurm import JOB_ID, AccountedJob, Slurm, expand_hostlist

if TYPE_CHECKING:
    from gpufabric.jobs.k8s_pods import PodNodes
    from gpufabric.jobs.timeline import Timeline, Window
    from gpufabric.plan.model import Plan

intent_option = click.option(
    "--intent",
    "file",
    type=click.Path(dir_okay=False),
    help="The intent file. [default: ./inventory/fabric.yml, else the default fabric shipped with gpufabric]",
)


def k8s_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A Kubernetes job's pods, and how to reach the API server (each overriding the intent's
    scheduler.kubernetes)."""
    options = (
        click.option(
            "--k8s-job",
            metavar="NAMESPACE/NAME",
            help="A Kubernetes batch/v1 Job: the nodes its pods run on (label batch.kubernetes.io/job-name).",
        ),
        click.option(
            "--selector", metavar="SELECTOR", help="Pods by label (app=trainer,tier!=test), with --namespace."
        ),
        click.option("--namespace", metavar="NAME", help="The pods' namespace (with --selector)."),
        *K8S_LOGIN_OPTIONS,
    )
    for option in reversed(options):
        fn = option(fn)
    return fn


def _one_source(job: str | None, nodes: str | None, k8s: dict[str, Any]) -> None:
    given = [job is not None, nodes is not None, k8s["k8s_job"] is not None, k8s["selector"] is not None]
    if sum(given) != 1:
        raise click.UsageError("give a JOB id or --nodes LIST, or --k8s-job NAMESPACE/NAME or --selector (one of them)")
    if (k8s["selector"] is None) != (k8s["namespace"] is None):
        raise click.UsageError("--selector and --namespace go together")


def _k8s_pods(plan: Plan, k8s: dict[str, Any]) -> PodNodes:
    """The nodes of --k8s-job's or --selector's pods, through the Kubernetes client the intent (or the
    options) name."""
    from gpufabric.jobs.k8s_pods import checked_selector, job_selector, k8s_pod_nodes
    from gpufabric.scheduler import Reach, schedulers
    from gpufabric.scheduler.kubernetes import Kubernetes

    if k8s["k8s_job"] is not None:
        namespace, selector = job_selector(k8s["k8s_job"])
    else:
        namespace, selector = checked_selector(k8s["selector"], k8s["namespace"])
    reach = Reach(
        slurm=False,
        k8s_api=k8s["k8s_api"],
        k8s_token_env=k8s["k8s_token_env"],
        k8s_ca_file=k8s["k8s_ca_file"],
        k8s_kubeconfig=k8s["k8s_kubeconfig"],
        k8s_context=k8s["k8s_context"],
        kubernetes=True,  # a Kubernetes job was named: its API server is asked, whatever the intent says
    )
    client = next((s for s in schedulers(plan, reach) if isinstance(s, Kubernetes)), None)
    if client is None:
        raise click.UsageError("no Kubernetes API server: --kubeconfig, the intent's scheduler.kubernetes or --k8s-api")
    return k8s_pod_nodes(client, namespace, selector)


K8S_KEYS = (
    *("k8s_job", "selector", "namespace"),
    *("k8s_api", "k8s_token_env", "k8s_ca_file", "k8s_kubeconfig", "k8s_context"),
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
    help="slurm.conf for squeue and sacct (JOB only). [default: the intent's scheduler.slurm.conf, else Slurm's own]",
)
@k8s_options
@click.option("--json", "as_json", is_flag=True, help="The footprint as one JSON object on stdout.")
def show_cmd(
    job: str | None, nodes: str | None, file: str | None, slurm_conf: Path | None, as_json: bool, **k8s: Any
) -> int:
    """The footprint of JOB (a Slurm job: its nodes from squeue --json while it runs, from Slurm's accounting,
    sacct --json, once it ended), of --nodes, or of a Kubernetes job's pods (--k8s-job, or --selector with
    --namespace: the nodes they run on), from the plan: each node's NICs per plane and rail with their leaf
    port and cable, the spines and superspines the plan's ECMP paths between the job's leaves cross (rail by
    rail; none when each rail's nodes share one leaf), and its storage path (the storage servers' leaves and
    the switches between).

    \b
    JSON keys: nodes, nics[] {node, plane, rail, interface, address, leaf, leaf_port, cable, bond},
    planes[] and storage[] {plane, leaves, spines, superspines, cables, servers, toward}, notes.

    Exit codes: 0 shown; 2 a node the plan does not hold, an unreadable hostlist, a job neither squeue nor
    sacct shows on nodes (or an answer of theirs that is not Slurm's layout), pods none of which runs on a
    node, or not exactly one of JOB, --nodes, --k8s-job, --selector.
    """
    _one_source(job, nodes, k8s)
    plan = load_plan(file, reaches=nodes is None)  # a scheduler's nodes are only ever placed on a real intent
    ended: str | None = None  # a Slurm job no longer running: what sacct said of it
    if k8s["k8s_job"] is not None or k8s["selector"] is not None:
        names = list(_k8s_pods(plan, k8s).nodes)
    elif nodes is not None:
        names = nodes_option(nodes)
    else:
        assert job is not None
        names, ended = _slurm_job(job, _Said(Slurm(slurm_conf_of(plan, slurm_conf))))
    try:
        found = footprint(plan, names, job)
    except FootprintError as exc:
        if nodes is not None:
            raise click.BadParameter(str(exc), param_hint="--nodes") from None
        raise
    if job is not None and ended is not None:
        found = dataclasses.replace(found, notes=(*found.notes, ended))
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


def _time(_ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    from gpufabric.jobs.timeline import parse_time

    try:
        return parse_time(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not an ISO 8601 time with its zone (2026-11-27T08:00:00Z)", param=param
        ) from None


@job_cmd.command("timeline")
@click.argument("job", required=False)
@click.option("--nodes", metavar="LIST", help="The job's nodes, as a Slurm hostlist (with --since, --until).")
@click.option("--since", callback=_time, metavar="ISO", help="With --nodes: the job's start (UTC unless it says).")
@click.option("--until", callback=_time, metavar="ISO", help="With --nodes: its end. [default: now, still running]")
@intent_option
@click.option(
    "--slurm-conf",
    type=click.Path(dir_okay=False, path_type=Path),
    help="slurm.conf for squeue and sacct (JOB only). [default: the intent's scheduler.slurm.conf, else Slurm's own]",
)
@click.option(
    "--audit-log",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="GPUFABRIC_AUDIT_LOG",
    help="The push audit trail. [env: GPUFABRIC_AUDIT_LOG; default: where `push` writes it]",
)
@click.option(
    "--remediation-log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The remediation loop's trail. [default: ~/.local/state/gpufabric/remediate.jsonl]",
)
@click.option("--alertmanager", metavar="URL", help="Alertmanager's base URL (http://127.0.0.1:9093): its alerts.")
@click.option(
    "--prometheus",
    metavar="URL",
    help="Prometheus's base URL (http://127.0.0.1:9090): the footprint ports' counter jumps, from its history of "
    "the exporter's counters.",
)
@click.option(
    "--counter-step",
    type=click.IntRange(1, 86_400),
    default=60,
    show_default=True,
    metavar="SECONDS",
    help="With --prometheus: a counter's increase is taken over each step of this many seconds.",
)
@click.option(
    "--counter-threshold",
    "counter_thresholds",
    multiple=True,
    metavar="NAME=N",
    help="With --prometheus: an event when NAME's increase within a step is over N (repeatable). NAME: errors "
    "(default 0), discards (100), pauses and ecn (10,000 a second times the step), flaps (0), watchdog (0).",
)
@click.option(
    "--switch-log",
    "switch_logs",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A switch's syslog file, a folder of them (<switch>.log, <switch>/...), or a lab's nodes/ folder "
    "(repeatable): FRR's BGP and link lines.",
)
@click.option(
    "--log-zone",
    metavar="ZONE",
    help="The switches' time zone (UTC, Europe/Berlin), for FRR's own log files, which write local time "
    "without it. [default: such lines are unread]",
)
@k8s_options
@click.option("--json", "as_json", is_flag=True, help="The timeline as one JSON object on stdout.")
def timeline_cmd(
    *,
    job: str | None,
    nodes: str | None,
    since: datetime | None,
    until: datetime | None,
    file: str | None,
    slurm_conf: Path | None,
    audit_log: Path | None,
    remediation_log: Path | None,
    alertmanager: str | None,
    prometheus: str | None,
    counter_step: int,
    counter_thresholds: tuple[str, ...],
    switch_logs: tuple[Path, ...],
    log_zone: str | None,
    as_json: bool,
    **k8s: Any,
) -> int:
    """What touched JOB's footprint (a Slurm job: from its start to now while squeue shows it running, else from
    its start to its end as sacct --json shows them), --nodes' between --since and --until, or a Kubernetes
    job's (--k8s-job, --selector: from its pods' first start, or --since) in time order: pushes, drains,
    restarts and upgrades from the push audit trail, the remediation loop's actions, Alertmanager's alerts,
    FRR's BGP session and link changes from the switches' logs, and, with --prometheus, each step in which a
    footprint port's counter (errors, discards, PFC pauses, ECN marks, link flaps, PFC watchdog) rose by more
    than its threshold (Prometheus's increase() over the step). Only what names a switch the job's traffic
    crosses (its leaves, spines, superspines, storage leaves, and for counters their footprint ports) or one
    of its nodes.

    \b
    JSON keys: job, nodes, since, until (null: still running), events[] {time, kind (push, drain, restart,
    upgrade, remediation, alert, bgp, link, counter), device, port, node, summary, source}, unread[] {source,
    line, why}: log lines that name an FRR message and could not be read, never guessed.

    Exit codes: 0 shown (unread lines included); 2 bad input: an unknown node, a job neither squeue nor sacct
    shows on nodes, a missing or unreadable trail or log, an Alertmanager answer that is no alert list, a Prometheus
    answer that is no range query's matrix (or larger than its bounds).
    """
    from gpufabric.jobs.counters import reader
    from gpufabric.jobs.timeline import Sources, Window, timeline, zone_of
    from gpufabric.push.audit import default_path

    _one_source(job, nodes, k8s)
    if job is not None and (since is not None or until is not None):
        raise click.UsageError("JOB's window is Slurm's: --since and --until go with --nodes")
    if nodes is not None and since is None:
        raise click.UsageError("--nodes needs --since (the job's start; sacct -j JOB -o Start,End)")
    plan = load_plan(file, reaches=nodes is None)
    if k8s["k8s_job"] is not None or k8s["selector"] is not None:
        pods = _k8s_pods(plan, k8s)
        names = list(pods.nodes)
        start = since or pods.started
        if start is None:
            raise click.UsageError("the pods say no start time (status.startTime): give --since")
        window = Window(start, until)
    elif nodes is not None:
        assert since is not None
        try:
            names = expand_hostlist(nodes)
        except SchedulerOutputError as exc:
            raise click.BadParameter(f"{exc}: a Slurm hostlist, e.g. gpu[01-04],gpu07", param_hint="--nodes") from None
        window = Window(since, until)
    else:
        assert job is not None
        said = _Said(Slurm(slurm_conf_of(plan, slurm_conf)))
        names, ended = _slurm_job(job, said)
        window = _slurm_window(job, said) if ended is None else Window(*_accounted_window(said))
    try:
        found = footprint(plan, names, job)
    except FootprintError as exc:
        if nodes is not None:
            raise click.BadParameter(str(exc), param_hint="--nodes") from None
        raise
    sources = Sources(
        audit_log=audit_log or default_path(),
        remediation_log=remediation_log or Path.home() / ".local/state/gpufabric/remediate.jsonl",
        alertmanager=alertmanager,
        counters=None if prometheus is None else reader(prometheus, counter_step, _thresholds(counter_thresholds)),
        switch_logs=switch_logs,
        zone=zone_of(log_zone) if log_zone else None,
    )
    tl = timeline(found, (d.name for d in plan.devices()), window, sources)  # TimelineError: exit 2, named
    if job is not None and ended is not None:
        tl.notes.insert(0, ended)
    if as_json:
        write_stdout(json_dumps(tl.as_dict(), indent=2) + "\n")
    else:
        _print_timeline(tl)
    for note in tl.notes:
        err.print(shown(f"note: {note}"))
    return 0


def _thresholds(given: tuple[str, ...]) -> dict[str, float]:
    from gpufabric.jobs.counters import COUNTERS

    out: dict[str, float] = {}
    for text in given:
        name, _, number = text.partition("=")
        try:
            value = float(number)
        except ValueError:
            value = math.nan
        if name not in COUNTERS or not math.isfinite(value) or value < 0:
            raise click.BadParameter(
                f"{text[:60]!r} is not NAME=N with NAME one of {', '.join(COUNTERS)} and N a number, 0 or more",
                param_hint="--counter-threshold",
            )
        out[name] = value
    return out


class _Said:
    """The Slurm reader's squeue, asked once: its text kept for the job's start time; and sacct's record of a
    job squeue does not show running."""

    def __init__(self, slurm: Slurm) -> None:
        self.slurm = slurm
        self.text: str | None = None
        self.accounted: AccountedJob | None = None

    def squeue(self) -> str:
        if self.text is None:
            self.text = self.slurm.squeue()
        return self.text


def _slurm_job(job: str, said: _Said) -> tuple[list[str], str | None]:
    """A Slurm job's nodes: squeue's while it runs; once it no longer holds them (ended, or pending again after
    a requeue), sacct's (Slurm's accounting), with a note saying so (None while it runs)."""
    try:
        return slurm_job_nodes(job, said), None  # type: ignore[arg-type]
    except FootprintError as exc:
        if not JOB_ID.fullmatch(job):
            raise
        try:
            said.accounted = record = said.slurm.sacct(job)
        except SchedulerOutputError:
            raise
        except SchedulerError as why:
            raise FootprintError(f"{exc}; and Slurm's accounting cannot say what it held: {why}") from None
    if record.start is None or not record.nodes:
        raise FootprintError(
            f"Slurm job {job} never ran (sacct: {record.state.lower()}, no start time or no node): it has no footprint"
        )
    from gpufabric.jobs.timeline import iso

    start = iso(datetime.fromtimestamp(record.start, UTC))
    until = "still running" if record.end is None else f"to {iso(datetime.fromtimestamp(record.end, UTC))}"
    return (
        list(record.nodes),
        f"job {job} is not running (sacct: {record.state.lower()}, {start} {until}): "
        "its nodes as Slurm's accounting keeps them",
    )


def _slurm_window(job: str, said: _Said) -> Window:
    from gpufabric.jobs.timeline import Window, slurm_start

    return Window(slurm_start(job, said.text or ""), None)


def _accounted_window(said: _Said) -> tuple[datetime, datetime | None]:
    record = said.accounted
    assert record is not None and record.start is not None
    end = None if record.end is None else datetime.fromtimestamp(record.end, UTC)
    return datetime.fromtimestamp(record.start, UTC), end


def _print_timeline(tl: Timeline) -> None:
    from rich.table import Table
    from rich.text import Text

    from gpufabric.jobs.timeline import iso

    until = "now (running)" if tl.window.until is None else iso(tl.window.until)
    title = f"job {tl.job}: " if tl.job else ""
    err.print(shown(f"{title}{len(tl.nodes)} node(s) {compress(list(tl.nodes))}, {iso(tl.window.since)} to {until}"))
    table = Table(title=f"{len(tl.events)} event(s)", title_justify="left")
    for column in ("time", "kind", "device", "port", "node", "summary", "source"):
        table.add_column(column)
    for e in tl.events:
        cells = (iso(e.time), e.kind, e.device or "", e.port or "", e.node or "", e.summary, e.source)
        table.add_row(*(Text(c) for c in cells))  # text read from files and servers: never markup
    out.print(table)
    for u in tl.unread:
        err.print(Text(f"unread {u.source}: {u.why}: {u.line}"))
