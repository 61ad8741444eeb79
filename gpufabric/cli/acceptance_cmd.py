"""`gpufabric acceptance plan|scripts|run|counters|report|screen`: the acceptance suite of the plan, its
verdict, and the slow-node screen."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import click
from rich.table import Table

from gpufabric.cli.errors import EXIT_FINDINGS, EXIT_OK
from gpufabric.cli.fleet_options import fleet_options
from gpufabric.cli.options import FiniteFloat, file_arg, load_plan
from gpufabric.cli.output import err, out, shown, write_files, write_stdout
from gpufabric.fleet.args import FleetArgs
from gpufabric.outputs import json_dumps


@click.group("acceptance")
def acceptance_cmd() -> None:
    """Acceptance tests derived from the plan: perftest pairs across every leaf and spine of every
    rail, nccl-tests per scalable unit and for the cluster, N-to-1 incasts per leaf and across the
    spines judged by the switch and NIC counters (no drop; PFC pauses and ECN marks that rise), each
    with its expected figure; DCGM's level-3 diagnostic on every GPU node (`dcgmi diag -r 3 -j`, judged
    from its JSON); and fio and gdsio on the storage plane's file systems (listed by `plan`).

    \b
      gpufabric acceptance plan              the jobs, expected figures and thresholds
      gpufabric acceptance scripts -o DIR    Slurm batch scripts (results/<job>.txt or .json, results/<incast>/)
      gpufabric acceptance run --results DIR  the pair jobs over SSH (--lab --stand-in in the lab)
      gpufabric acceptance counters --job ID --phase before|after --results DIR   an incast's switch counters
      gpufabric acceptance report --results DIR [--junit F]   expected vs observed
      gpufabric acceptance screen plan|scripts|report   slow nodes on a schedule, against the median
    """


def _suite(file: str | None, stand_in: bool = False):  # noqa: ANN202 (the suite type loads with the command)
    from gpufabric.acceptance.suite import build_suite
    from gpufabric.acceptance.suite import stand_in as lab_version

    suite = build_suite(load_plan(file))
    return lab_version(suite) if stand_in else suite


stand_in_option = click.option(
    "--stand-in",
    is_flag=True,
    help="The lab's version: iperf3 and ping in place of perftest between the same pairs, the lab's own "
    "figures, no collectives (the lab has no RDMA NIC and no GPU).",
)


@acceptance_cmd.command("plan")
@file_arg
@click.option("--json", "as_json", is_flag=True, help="Every job with its commands, figures and path as JSON.")
@stand_in_option
def plan_cmd(file: str | None, as_json: bool, stand_in: bool) -> int:
    """List the acceptance jobs of the plan."""
    from gpufabric.acceptance.export import suite_dict

    suite = _suite(file, stand_in)
    if as_json:
        write_stdout(json_dumps(suite_dict(suite), indent=2) + "\n")
        return 0
    t = Table(title=f"{suite.fabric}: {len(suite.perf)} pair jobs, {len(suite.nccl)} nccl-tests jobs, "
              f"{len(suite.incast)} incast jobs, {len(suite.gpu)} GPU diagnostics, {len(suite.storage)} storage jobs",
              title_justify="left")  # fmt: skip
    for col in ("job", "between", "expected", "fails below/above"):
        t.add_column(col)
    for j in suite.perf:
        relation = "above" if j.tool in ("ib_write_lat", "ping") else "below"
        t.add_row(j.id, f"{j.client.server}:{j.client.hca} -> {j.server.server}:{j.server.hca}",
                  f"{j.expected} {j.unit}", f"{relation} {j.threshold}")  # fmt: skip
    for n in suite.nccl:
        t.add_row(n.id, f"{len(n.servers)} servers x {n.gpus_per_server} GPUs", f"{n.expected} GB/s busbw",
                  f"below {n.threshold}")  # fmt: skip
    for i in suite.incast:
        t.add_row(i.id, f"{i.why} -> {i.receiver.server}:{i.receiver.hca}", f"{i.expected} Gb/s in all, no drop, "
                  f"PFC prio {i.priority} and ECN rise", f"below {i.threshold}")  # fmt: skip
    for g in suite.gpu:
        t.add_row(g.id, f"{g.server}: {g.gpus} GPUs, dcgmi diag -r {g.level}", "every test passes",
                  "any failed test")  # fmt: skip
    for s in suite.storage:
        who = s.servers[0] if s.scope == "server" else f"{len(s.servers)} servers at once"
        t.add_row(s.id, f"{who} -> {s.mount}", f"{s.expected} {s.unit} ({s.limited_by})" + (f"; {s.note}" if s.note
                  else ""), f"below {s.threshold}")  # fmt: skip
    out.print(t)
    return 0


@acceptance_cmd.command("scripts")
@file_arg
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for the batch scripts and submit.sh.")  # fmt: skip
def scripts_cmd(file: str | None, output: Path) -> int:
    """Write a Slurm batch script per job (run from a login node: `sh submit.sh`)."""
    from gpufabric.acceptance.slurm import scripts

    files = scripts(_suite(file))
    output.mkdir(parents=True, exist_ok=True)
    err.print(shown(f"wrote {write_files(output, files)} files into {output}"))
    return 0


@acceptance_cmd.command("run")
@fleet_options
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for the tools' outputs, one <job id>.txt per job.")  # fmt: skip
@stand_in_option
def run_cmd(fleet_args: FleetArgs, as_json: bool, results: Path, stand_in: bool) -> int:
    """Run the pair jobs over SSH (the servers' logins: the lab's with --lab, else the intent's host
    key), one pair at a time, and write their outputs for `report`. Collectives run through Slurm
    (`acceptance scripts`). Exit 0 when every job produced output, 4 when one did not."""
    from gpufabric.acceptance.run import run_suite
    from gpufabric.cli.errors import show_notes
    from gpufabric.fleet.connect import host_shell
    from gpufabric.fleet.target import reach

    plan, access = reach(fleet_args)
    show_notes(access)
    shell = host_shell(plan, access, fleet_args.lab_dir if access.lab else None, fleet_args.known_hosts)
    if shell is None:
        raise click.UsageError(
            "no way to log in to the servers: the lab has no host containers (gpufabric lab up), or the intent "
            "names no credentials.hosts.ssh_key"
        )
    suite = _suite(fleet_args.file, stand_in)
    done = run_suite(suite, shell, results, lambda job: err.print(f"running {job.id}", markup=False))
    if as_json:
        write_stdout(json_dumps({"jobs": len(suite.perf), "with_output": done, "results": str(results)}) + "\n")
    then = f"next: gpufabric acceptance report --results {results}{' --stand-in' if stand_in else ''}"
    err.print(shown(f"{done} of {len(suite.perf)} jobs produced output in {results}; {then}"))
    return EXIT_OK if done == len(suite.perf) else EXIT_FINDINGS


@acceptance_cmd.command("counters")
@fleet_options
@click.option("--job", "job_id", required=True, metavar="ID", help="The incast job (`acceptance plan`).")
@click.option("--phase", type=click.Choice(["before", "after"]), required=True, help="Before or after the job.")
@click.option("--results", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder of the tools' outputs; writes <job id>/switches.<phase>.json.")  # fmt: skip
def counters_cmd(fleet_args: FleetArgs, as_json: bool, job_id: str, phase: str, results: Path) -> int:
    """Read the lossless counters (PFC pauses, ECN marks, queue drops, discards) of every switch port
    an incast job crosses, for `report` to compare before and after. The incast's Slurm script runs it
    around the job. Exit 4 when a switch could not be read (recorded in the snapshot)."""
    from gpufabric.acceptance.counters import dump, snapshot_switches
    from gpufabric.cli.errors import show_notes
    from gpufabric.files import write_atomic
    from gpufabric.fleet.connect import switch_connector
    from gpufabric.fleet.select import base_plane
    from gpufabric.fleet.target import reach
    from gpufabric.telemetry.targets import switch_targets

    job = next((j for j in _suite(fleet_args.file).incast if j.id == job_id), None)
    if job is None:  # before any login: a wrong id is bad input
        raise click.BadParameter(f"no incast job {job_id!r} in the plan (see `gpufabric acceptance plan`)",
                                 param_hint="--job")  # fmt: skip
    plan, access = reach(fleet_args)
    show_notes(access)
    # A multi-plane compute plane's job names its plane (compute-p2); its switches are the compute plane's.
    targets = {t.device: t for t in switch_targets(plan, base_plane(job.plane)) if t.device in job.crosses}
    connect = switch_connector(access)
    snapshot = snapshot_switches(job, {n: t.platform for n, t in targets.items()}, lambda n: connect(targets[n]))
    path = results / job.id / f"switches.{phase}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, dump(snapshot))
    errors = {n: s["error"] for n, s in snapshot.items() if "error" in s}
    if as_json:
        write_stdout(json_dumps({"job": job.id, "phase": phase, "path": str(path), "errors": errors}) + "\n")
    for name, error in sorted(errors.items()):
        err.print(shown(f"{name}: not read: {error}"))  # the switch's own words
    err.print(shown(f"wrote {path}"))
    return EXIT_FINDINGS if errors else EXIT_OK


@acceptance_cmd.command("report")
@file_arg
@click.option("--results", type=click.Path(file_okay=False, exists=True, path_type=Path), required=True,
              help="Folder of the tools' outputs, one <job id>.txt per job (DCGM's: <job id>.json).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Verdicts and suspects as JSON on stdout.")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Also write JUnit XML here.")
@stand_in_option
def report_cmd(file: str | None, results: Path, as_json: bool, junit: Path | None, stand_in: bool) -> int:
    """Judge the outputs: expected vs observed per job, and the switches and cables that failing jobs
    share. An incast passes on its counters: no drop anywhere, PFC pauses and ECN marks or CNPs that
    rose; one that raised neither congested nothing and is `unstressed`, not a pass. A GPU node passes
    DCGM's diagnostic when no test failed in its JSON output. Exit 0 when every
    job passed, 4 when any failed or has no verdict (`missing`, `unreadable`, `invalid`, `unknown`). A
    result file that is no regular file, is larger than 4 MiB or is not UTF-8 is bad input (exit 2)."""
    from gpufabric.acceptance import report as r
    from gpufabric.files import write_atomic

    report = r.judge(_suite(file, stand_in), results)
    if junit is not None:
        write_atomic(junit, r.junit(report))
    if as_json:
        write_stdout(json_dumps(r.as_dict(report), indent=2) + "\n")
    else:
        out.print(_report_table(report))
        for part, failing, passing in report.suspects():
            err.print(shown(f"suspect: {part}: in {failing} failing jobs, {passing} passing"))
        for v in report.failed:  # what was wrong: the table shows figures, not why a job has none
            err.print(shown(f"{v.job.id}: {v.status}: {v.detail}"))  # read from the tools' outputs
    return EXIT_FINDINGS if report.failed else EXIT_OK


def _report_table(report) -> Table:  # noqa: ANN001
    t = Table(title=f"{len(report.verdicts) - len(report.failed)} of {len(report.verdicts)} jobs passed",
              title_justify="left")  # fmt: skip
    for col in ("job", "status", "expected", "threshold", "observed"):
        t.add_column(col)
    for v in report.verdicts:
        seen = "-" if v.observed is None else f"{v.observed} {v.job.unit}"
        t.add_row(v.job.id, v.status if v.passed else f"[bold red]{v.status}[/]", f"{v.job.expected} {v.job.unit}",
                  str(v.job.threshold), seen)  # fmt: skip
    return t


@acceptance_cmd.group("screen")
def screen_cmd() -> None:
    """Find slow nodes on a schedule: ib_write_bw around a ring of each rail's NICs (every NIC in two
    pairs), all_reduce_perf on each GPU server alone and per unit; each result against the median of
    its like; the part behind slow results named; a signal record for the remediation loop.

    \b
      gpufabric acceptance screen plan                      the screen's jobs
      gpufabric acceptance screen scripts -o DIR [--schedule CRON] [--image I --driver-image D]
                                                            Slurm batch script and scrontab; Kubernetes CronJob
      gpufabric acceptance screen report --results DIR [--signal FILE]   slow results, the part, the signal
    """


@screen_cmd.command("plan")
@file_arg
@click.option("--json", "as_json", is_flag=True, help="Every job with its commands as JSON.")
def screen_plan_cmd(file: str | None, as_json: bool) -> int:
    """List the screen's jobs."""
    from gpufabric.acceptance.export import suite_dict
    from gpufabric.acceptance.suite import screen_suite

    suite = screen_suite(load_plan(file))
    if as_json:
        write_stdout(json_dumps(suite_dict(suite), indent=2) + "\n")
        return 0
    t = Table(title=f"{suite.fabric}: {len(suite.perf)} pairs, {len(suite.nccl)} nccl-tests runs", title_justify="left")
    for col in ("job", "between"):
        t.add_column(col)
    for j in suite.perf:
        t.add_row(j.id, f"{j.client.server} {j.client.interface} -> {j.server.server} {j.server.interface}")
    for n in suite.nccl:
        t.add_row(n.id, f"{len(n.servers)} servers x {n.gpus_per_server} GPUs")
    out.print(t)
    return 0


@screen_cmd.command("scripts")
@file_arg
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for screen.sbatch, screen.scrontab and (with --image) screen-cronjob.yaml.")  # fmt: skip
@click.option("--schedule", default="0 3 * * 0", show_default=True, metavar="CRON",
              help="When the screen runs: five cron fields (minute hour day month weekday).")  # fmt: skip
@click.option("--image", help="Kubernetes: the image with perftest and nccl-tests the screen's pods run.")
@click.option("--driver-image", help="Kubernetes: the image with kubectl and gpufabric the CronJob's pod runs.")
def screen_scripts_cmd(file: str | None, output: Path, schedule: str, image: str | None,
                       driver_image: str | None) -> int:  # fmt: skip
    """Write the screen for Slurm (a batch script, and a scrontab entry that runs it on the schedule) and,
    given both images, for Kubernetes (a CronJob from the k8s-network export's rails; nccl-tests across
    servers needs MPI and stays with Slurm)."""
    from gpufabric.acceptance import cronjob, slurm
    from gpufabric.acceptance.suite import screen_suite
    from gpufabric.intent.loader import default_fabric_text, read_intent_file

    if (image is None) != (driver_image is None):
        raise click.UsageError(
            "the CronJob needs both --image (perftest, nccl-tests) and --driver-image (kubectl, gpufabric)"
        )
    slurm.cron_schedule(schedule)  # before anything is written: a bad schedule is bad input
    plan = load_plan(file)
    suite = screen_suite(plan)
    output.mkdir(parents=True, exist_ok=True)
    script = (output / "screen.sbatch").resolve()
    files = {
        "screen.sbatch": slurm.screen_script(suite),
        "screen.scrontab": slurm.screen_scrontab(suite, schedule, str(script)),
    }
    if image is not None and driver_image is not None:
        text = read_intent_file(file) if file is not None else default_fabric_text()[0]
        files["screen-cronjob.yaml"] = cronjob.documents(plan, text, schedule=schedule, image=image,
                                                         driver_image=driver_image)  # fmt: skip
    else:
        err.print("no Kubernetes CronJob written: give --image and --driver-image for one", markup=False)
    err.print(shown(f"wrote {write_files(output, files)} files into {output}"))
    return 0


def _duration(text: str) -> timedelta:
    found = re.fullmatch(r"([0-9]{1,6})([smh])", text)
    if found is None:
        raise click.BadParameter(f"a number with s, m or h (2h, 90m), not {text!r}", param_hint="--alert-for")
    return timedelta(seconds=int(found[1]) * {"s": 1, "m": 60, "h": 3600}[found[2]])


@screen_cmd.command("report")
@file_arg
@click.option("--results", type=click.Path(file_okay=False, exists=True, path_type=Path), required=True,
              help="Folder of the screen's outputs, one <job id>.txt per job.")  # fmt: skip
@click.option("--factor", type=FiniteFloat(), default=1.5, show_default=True,
              help="A result is slow below the median of its like divided by this.")  # fmt: skip
@click.option("--min-peers", type=int, default=3, show_default=True,
              help="Results of one kind needed to judge them against their median.")  # fmt: skip
@click.option("--signal", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the signal record (JSON) here, for the remediation loop.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="The signal record on stdout.")
@click.option("--alertmanager", metavar="URL",
              help="Alertmanager's base URL (http://127.0.0.1:9093): post each signal there as a GpufabricSlowPart "
                   "alert, which routes it to `gpufabric remediate serve`.")  # fmt: skip
@click.option("--alert-for", default="2h", show_default=True, metavar="DURATION",
              help="How long a posted signal fires unless the next screen posts it again (s, m or h).")  # fmt: skip
def screen_report_cmd(file: str | None, results: Path, *, factor: float, min_peers: int, signal: Path | None,
                      as_json: bool, alertmanager: str | None, alert_for: str) -> int:  # fmt: skip
    """Compare each result with the median of its like (perftest pairs of one line rate; nccl-tests runs
    over as many servers): below the median divided by --factor is slow, and so is an output that shows
    wrong data. Name the part slow results share (a NIC with its cable and leaf port, a node, a switch),
    with the nodes behind it. Exit 0 when nothing is slow, 4 when something is (a signal), 2 on bad input or
    when Alertmanager does not take the signals."""
    from gpufabric.acceptance.screen import screen, signal_record
    from gpufabric.acceptance.suite import screen_suite
    from gpufabric.files import write_atomic

    valid_for = _duration(alert_for)
    plan = load_plan(file)
    found = screen(screen_suite(plan), plan, results, factor=factor, min_peers=min_peers)
    record = signal_record(found, results)
    if alertmanager is not None:
        from datetime import UTC, datetime

        from gpufabric.acceptance.screen import slow_alerts
        from gpufabric.telemetry.alert_post import post_alerts

        alerts = slow_alerts(record, datetime.now(UTC), valid_for)
        post_alerts(alertmanager, alerts)  # AlertPostError: exit 2, the signal record is written already
        err.print(shown(f"posted {len(alerts)} signals to {alertmanager} as {alerts[0]['labels']['alertname']}"
                        if alerts else "no signal to post"))  # fmt: skip
    if signal is not None:
        write_atomic(signal, json_dumps(record, indent=2) + "\n")
    if as_json:
        write_stdout(json_dumps(record, indent=2) + "\n")
    else:
        err.print(shown(f"{len(found.compared)} results compared, {len(found.slow)} slow, {len(found.unjudged)} "
                        f"not judged (factor {factor:g})"))  # fmt: skip
        for sig in found.signals:
            nodes = sorted({n for p in (sig.part, *sig.together) for n in p.nodes})
            also = f" with {', '.join(p.name for p in sig.together)}" if sig.together else ""
            behind = ", ".join(nodes) or "none: a fabric part"
            err.print(shown(f"slow: {sig.part.name} ({sig.part.kind}; nodes {behind}){also}: "
                            f"{len(sig.evidence)} slow results, {sig.normal} normal"))  # fmt: skip
            for c in sig.evidence:
                seen = "no figure" if c.result.value is None else f"{c.result.value:g} {c.result.job.unit}"
                err.print(shown(f"  {c.result.job.id}: {seen}, median {c.median:g}, slow below {c.threshold:.4g}"))
    return EXIT_FINDINGS if found.signals else EXIT_OK
