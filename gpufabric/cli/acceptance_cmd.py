"""`gpufabric acceptance plan|scripts|report`: the acceptance suite of the plan, and its verdict."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from gpufabric.cli.output import err, out, write_stdout
from gpufabric.cli.plan_cmd import file_arg, load_plan

EXIT_FAILED = 1


@click.group("acceptance")
def acceptance_cmd() -> None:
    """Acceptance tests derived from the plan: perftest pairs across every leaf and spine of every
    rail, nccl-tests per scalable unit and for the cluster, each with its expected figure.

    \b
      gpufabric acceptance plan              the jobs, expected figures and thresholds
      gpufabric acceptance scripts -o DIR    Slurm batch scripts (results/<job>.txt)
      gpufabric acceptance report --results DIR [--junit F]   expected vs observed
    """


def _suite(file: str | None):  # noqa: ANN202 (the suite type loads with the command)
    from gpufabric.acceptance.suite import build_suite

    return build_suite(load_plan(file))


@acceptance_cmd.command("plan")
@file_arg
@click.option("--json", "as_json", is_flag=True, help="Every job with its commands, figures and path as JSON.")
def plan_cmd(file: str | None, as_json: bool) -> int:
    """List the acceptance jobs of the plan."""
    from gpufabric.acceptance.export import suite_dict

    suite = _suite(file)
    if as_json:
        write_stdout(json.dumps(suite_dict(suite), indent=2) + "\n")
        return 0
    t = Table(title=f"{suite.fabric}: {len(suite.perf)} perftest jobs, {len(suite.nccl)} nccl-tests jobs",
              title_justify="left")  # fmt: skip
    for col in ("job", "between", "expected", "fails below/above"):
        t.add_column(col)
    for j in suite.perf:
        relation = "above" if j.tool == "ib_write_lat" else "below"
        t.add_row(j.id, f"{j.client.server}:{j.client.hca} -> {j.server.server}:{j.server.hca}",
                  f"{j.expected} {j.unit}", f"{relation} {j.threshold}")  # fmt: skip
    for n in suite.nccl:
        t.add_row(n.id, f"{len(n.servers)} servers x {n.gpus_per_server} GPUs", f"{n.expected} GB/s busbw",
                  f"below {n.threshold}")  # fmt: skip
    out.print(t)
    return 0


@acceptance_cmd.command("scripts")
@file_arg
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for the batch scripts and submit.sh.")  # fmt: skip
def scripts_cmd(file: str | None, output: Path) -> int:
    """Write a Slurm batch script per job (run from a login node: `sh submit.sh`)."""
    from gpufabric.acceptance.slurm import scripts
    from gpufabric.export.atomic import write_atomic

    files = scripts(_suite(file))
    output.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        write_atomic(output / name, text)
    err.print(f"wrote {len(files)} files into {output}")
    return 0


@acceptance_cmd.command("report")
@file_arg
@click.option("--results", type=click.Path(file_okay=False, exists=True, path_type=Path), required=True,
              help="Folder of the tools' outputs, one <job id>.txt per job.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Verdicts and suspects as JSON on stdout.")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Also write JUnit XML here.")
def report_cmd(file: str | None, results: Path, as_json: bool, junit: Path | None) -> int:
    """Judge the outputs: expected vs observed per job, and the switches and cables that failing jobs
    share. Exit 0 when every job passed, 1 when any failed or has no readable result."""
    from gpufabric.acceptance import report as r
    from gpufabric.export.atomic import write_atomic

    report = r.judge(_suite(file), results)
    if junit is not None:
        write_atomic(junit, r.junit(report))
    if as_json:
        write_stdout(json.dumps(r.as_dict(report), indent=2) + "\n")
    else:
        out.print(_report_table(report))
        for part, failing, passing in report.suspects():
            err.print(f"suspect: {part}: in {failing} failing jobs, {passing} passing", markup=False)
    return EXIT_FAILED if report.failed else 0


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
