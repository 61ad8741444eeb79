"""`gpufabric demo`: the whole cluster brought up in the lab, proven fact by fact, and reported."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

import click

from gpufabric.cli.errors import outcome
from gpufabric.cli.options import file_arg
from gpufabric.cli.output import err, out
from gpufabric.cli.privileges import require_root
from gpufabric.demo import chaos as chaos_step
from gpufabric.demo import flow
from gpufabric.demo.render import as_json, show
from gpufabric.demo.runner import DemoStepError, Runner
from gpufabric.files import write_atomic
from gpufabric.fleet.lab.state import DEFAULT_DIR
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

PROJECT = Path(__file__).resolve().parents[2]


@click.command("demo")
@file_arg
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the report as JSON.")
@click.option("--chaos", is_flag=True, help="After the bring-up, cut a spine, show the findings, restore it.")
@click.option("--keep", is_flag=True, help="Leave the lab up afterwards (`gpufabric lab down` removes it).")
@click.option(
    "--build",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("build"),
    show_default=True,
    help="Where exports, JUnit results and step logs go.",
)
def demo_cmd(file: str | None, json_path: Path | None, chaos: bool, keep: bool, build: Path) -> int:
    """(root) Bring the plan up in the lab and prove it: switches pushed, hosts configured, facts measured.

    Steps: lab up (switches and hosts); then the switches' team (nornir push of every plane, nornir
    validate until converged, the end-to-end facts: jumbo frames per rail, DSCP at the far leaf, ECMP
    width, OOB reach and isolation; the acceptance pairs; a second push; the exports) beside the
    hosts' team (ansible-playbook site.yml, then again: it must change nothing, and it ends by reading
    every setting back); lab down unless --keep. Exit 0 only when every fact passed.
    """
    require_root("the demo brings up the lab (namespaces, links, containers)")
    if not (PROJECT / "site.yml").is_file():
        raise click.UsageError(f"the demo runs the repository's site.yml and roles; none at {PROJECT}")
    loaded = load_intent(file)
    plan = build_plan(loaded)
    intent = Path(loaded.file).resolve()
    started = time.perf_counter()
    runner = Runner(PROJECT, (build if build.is_absolute() else Path.cwd() / build).resolve(), err.print)
    report = flow.Report(plan.intent.fabric.name)
    flow.prepare(runner, intent, DEFAULT_DIR)
    try:
        flow.bring_up(runner, plan, intent, DEFAULT_DIR, report)
        if chaos:
            chaos_step.run(runner, plan, intent, DEFAULT_DIR, report)
    except DemoStepError as exc:
        raise click.ClickException(f"{exc}\n(the lab is left up to look at; `gpufabric lab down` removes it)") from None
    except Exception:
        err.print("the demo stopped on an error of its own; the lab is left up (`gpufabric lab down` removes it)")
        raise
    if not keep:
        runner.run("lab down", [runner.tool("gpufabric"), "lab", "down"], check=False)
    report.seconds = time.perf_counter() - started
    report.steps = [asdict(s) for s in runner.steps]
    if json_path:
        write_atomic(json_path, as_json(report) + "\n")
    show(out, report)
    return outcome(report.passed)
