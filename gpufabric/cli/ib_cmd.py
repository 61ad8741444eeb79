"""`gpufabric ib ...`: an InfiniBand compute fabric from its YAML file (docs/infiniband.md).

plan, export-topology (ibnetdiscover's format), discover (names -> GUIDs from ibnetdiscover's
output, refusing names the plan does not have), configs (OpenSM's files), diff (cabling),
validate (the live fabric through infiniband-diags, read-only).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from gpufabric.cli.errors import outcome
from gpufabric.cli.output import emit, err, out, shown, shown_lines, write_files, write_stdout
from gpufabric.ib import acceptance, counters, discovery, lab, opensm, topology, validate
from gpufabric.ib.design_file import IbIntent, load
from gpufabric.ib.errors import IbError
from gpufabric.inputs import decode_text, read_stream, read_text
from gpufabric.intent.errors import IntentError, printable
from gpufabric.intent.errors import Problem as IntentProblem
from gpufabric.intent.loader import load_intent_text, read_intent_file
from gpufabric.outputs import json_dumps
from gpufabric.plan.planner import build_plan

FILE = click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
OUTPUT = click.option("-o", "--output", type=click.Path(path_type=Path), help="File to write (stdout when omitted).")


@click.group("ib")
def ib_cmd() -> None:
    """InfiniBand compute fabrics: plan, topology, discovery, OpenSM files, cabling diff."""


# An InfiniBand fabric file starts with this key; anything else is read as a cluster intent.
_FABRIC_FILE = re.compile(r"^infiniband:", re.MULTILINE)


def _intent(file: Path) -> IbIntent:
    """An InfiniBand fabric file (`infiniband:` at the top), or a cluster intent whose compute plane is
    InfiniBand (`transport: infiniband`)."""
    text = read_intent_file(str(file))
    if _FABRIC_FILE.search(text):
        return load(text, str(file))
    loaded = load_intent_text(text, str(file))
    plan = build_plan(loaded)
    if plan.infiniband is None:
        raise loaded.error(
            [
                IntentProblem(
                    ("planes", "compute"),
                    "the compute plane is not InfiniBand",
                    "give planes.compute transport: infiniband, or use the Ethernet commands (nornir validate, ...)",
                )
            ]
        )
    return IbIntent(plan.infiniband.fabric, plan.infiniband.settings)


def _no_guid(discovered: Path | None, missing: KeyError) -> IntentError:
    """A node of the design the discovery file has no GUID for: the fabric changed since it was read."""
    return IntentError(str(discovered), [IntentProblem((), f"no GUID for {missing}", "discover the fabric again")])


def _as_input_error(exc: IbError) -> IntentError:
    """A file the tools wrote (topology, discovery) that does not fit: exit 2 with where and fix."""
    first = exc.problems[0].where.split(":")[0] if exc.problems else "input"
    return IntentError(first, [IntentProblem((), f"{p.where}: {p.message}", p.fix) for p in exc.problems])


@ib_cmd.command("plan")
@FILE
@click.option("--json", "as_json", is_flag=True, help="Counts as JSON.")
def plan_cmd(file: Path, as_json: bool) -> int:
    """Switches, nodes and cables per tier."""
    intent = _intent(file)
    counts = {"tiers": intent.fabric.tiers, **intent.fabric.counts()}
    if as_json:
        write_stdout(json_dumps(counts, indent=2) + "\n")
    else:
        for key, value in counts.items():
            out.print(f"{key:18} {value}")
    return 0


@ib_cmd.command("export-topology")
@FILE
@click.option("--discovery", "disc", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Write GUIDs.")
@OUTPUT
def export_topology_cmd(file: Path, disc: Path | None, output: Path | None) -> int:
    """The planned fabric in ibnetdiscover's format (what ibsim reads; what to diff against)."""
    intent = _intent(file)
    try:
        guids = discovery.load(disc, intent.fabric).node_guids() if disc else None
        emit(topology.render(intent.fabric, guids), output)
    except IbError as exc:
        raise _as_input_error(exc) from None
    except KeyError as exc:
        raise _no_guid(disc, exc) from None
    return 0


TOPOLOGY = "ibnetdiscover's output (a file of it, '-' for standard input, or 'live')"


def _live_or_file(source: str) -> tuple[str, str]:
    """ibnetdiscover's output, read the one way outside input is read: a regular file (no FIFO or
    device), at most topology.MAX_BYTES, UTF-8, each failure located (exit 2)."""
    if source == "live":  # the real ibnetdiscover on this machine's fabric
        return _run_tool(["ibnetdiscover"]), "ibnetdiscover"
    if source == "-":
        return read_stream(sys.stdin.buffer, name="<stdin>", what=TOPOLOGY, max_bytes=topology.MAX_BYTES), "<stdin>"
    return read_text(source, what=TOPOLOGY, max_bytes=topology.MAX_BYTES), source


FROM = click.option("--from", "source", required=True, help="ibnetdiscover's output: a file, '-' for stdin, or 'live'.")


@ib_cmd.command("discover")
@FILE
@FROM
@OUTPUT
def discover_cmd(file: Path, source: str, output: Path | None) -> int:
    """Record planned name -> GUID; refuses a fabric whose node descriptions are not the plan's."""
    intent = _intent(file)
    text, name = _live_or_file(source)
    try:
        found = discovery.discover(intent.fabric, topology.parse(text, name), name)
    except IbError as exc:
        raise _as_input_error(exc) from None
    emit(found.dumps(), output)
    return 0


@ib_cmd.command("configs")
@FILE
@click.option("--discovery", "disc", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder.")
@click.option("--role", type=click.Choice(["primary", "standby"]), default="primary", show_default=True)
@click.option("--sm-dir", type=click.Path(path_type=Path), help="Where OpenSM will find the files (default: -o).")
def configs_cmd(file: Path, disc: Path, output: Path, role: str, sm_dir: Path | None) -> int:
    """opensm.conf, partitions.conf, qos-policy.conf, root/CN GUID files, the node-name map; with SHARP sharp_am.cfg."""
    intent = _intent(file)
    try:
        found = discovery.load(disc, intent.fabric)
        files = opensm.render(intent.fabric, found, intent.settings, (sm_dir or output).absolute(), role)  # type: ignore[arg-type]
    except IbError as exc:
        raise _as_input_error(exc) from None
    except KeyError as exc:
        raise _no_guid(disc, exc) from None
    err.print(shown(f"wrote {write_files(output, files)} OpenSM file(s) to {output}"))
    return 0


@ib_cmd.command("diff")
@FILE
@FROM
def diff_cmd(file: Path, source: str) -> int:
    """Every planned cable port for port and nothing else; exit 4 when the fabric differs."""
    intent = _intent(file)
    text, name = _live_or_file(source)
    try:
        diff = discovery.compare(intent.fabric, topology.parse(text, name))
    except IbError as exc:
        raise _as_input_error(exc) from None
    for line in diff.lines():  # node descriptions as the fabric (or the file) gave them: text, escaped
        out.print(shown(line))
    if diff.clean:
        err.print(f"{len(intent.fabric.cables)} cables as planned")
    return outcome(diff.clean)


TOOL_SECONDS = 300.0  # one diagnostic, whole: ibnetdiscover sweeps the largest subnet in well under this


def _run_tool(args: Sequence[str]) -> str:
    """One of infiniband-diags on this machine's fabric; a failure is the input's (exit 2), and so is
    output that is not UTF-8 text or larger than ibnetdiscover's for the largest subnet."""
    try:
        done = subprocess.run(list(args), capture_output=True, check=False, timeout=TOOL_SECONDS)
    except FileNotFoundError:
        raise click.ClickException(f"{args[0]} not found: install infiniband-diags") from None
    except subprocess.TimeoutExpired:  # subprocess.run has killed it
        raise click.ClickException(
            f"{printable(' '.join(args))} did not answer within {TOOL_SECONDS:g} s: stopped (check the subnet manager)"
        ) from None
    if done.returncode != 0:
        said = printable(done.stderr.decode("utf-8", "replace").strip()[-300:])
        raise click.ClickException(f"{' '.join(args)} exited {done.returncode}: {said}")
    if len(done.stdout) > topology.MAX_BYTES:
        raise IntentError(args[0], [IntentProblem((), "printed more than any fabric's output can be")])
    return decode_text(done.stdout, args[0], f"{args[0]}'s output")


@ib_cmd.command("validate")
@FILE
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--all", "show_all", is_flag=True, help="Table: passed results too.")
@click.option("--check", "checks", multiple=True, type=click.Choice(validate.CHECKS), help="Only these (repeat).")
@click.option("--no-rates", is_flag=True, help="Compare link widths, not speeds (ibsim runs its own).")
@click.option("--lab", "lab_dir", type=click.Path(file_okay=False, path_type=Path), help="The lab's state folder.")
def validate_cmd(  # click passes every option by name
    file: Path, *, fmt: str, show_all: bool, checks: tuple[str, ...], no_rates: bool, lab_dir: Path | None
) -> int:
    """Read-only: the live fabric (infiniband-diags on this host, or the lab's) against the plan;
    exit 4 on a failure."""
    intent = _intent(file)
    try:
        run = lab.runner(lab_dir) if lab_dir else _run_tool
        results = validate.validate(
            intent.fabric, intent.settings, run, rates=not no_rates, checks=checks or validate.CHECKS
        )
    except IbError as exc:
        raise click.ClickException(printable(str(exc))) from None
    if fmt == "json":
        rows = [
            {"check": r.check, "item": r.item, "expected": r.expected, "observed": r.observed, "ok": r.ok}
            for r in results
        ]
        write_stdout(json_dumps(rows, indent=2) + "\n")
    else:
        write_stdout(shown_lines(validate.render_table(results, show_all)).plain)  # what the tools answered
    return outcome(all(r.ok for r in results))


@ib_cmd.command("metrics")
@FILE
@click.option("--lab", "lab_dir", type=click.Path(file_okay=False, path_type=Path), help="The lab's state folder.")
def metrics_cmd(file: Path, lab_dir: Path | None) -> int:
    """Every planned switch port's counters (perfquery) as Prometheus text, labelled with the plan."""
    intent = _intent(file)
    try:
        run = lab.runner(lab_dir) if lab_dir else _run_tool
        seen = topology.parse(run(["ibnetdiscover"]), "ibnetdiscover")
        write_stdout(counters.metrics(intent.fabric, counters.read(intent.fabric, seen, run)))
    except IbError as exc:
        raise click.ClickException(printable(str(exc))) from None
    return 0


@ib_cmd.command("acceptance")
@FILE
@click.option("--tool", type=click.Choice(acceptance.PERFTEST), default="ib_write_bw", show_default=True)
@click.option("--json", "as_json", is_flag=True)
def acceptance_cmd(file: Path, tool: str, as_json: bool) -> int:
    """perftest pairs per rail (same leaf, across SUs) and NCCL's IB environment; no GID options."""
    intent = _intent(file)
    pairs = acceptance.pairs(intent.fabric, tool, intent.settings.partitions)
    env = acceptance.nccl_env(intent.fabric)
    if as_json:
        body = {"pairs": [_pair(p) for p in pairs], "nccl_env": env}
        write_stdout(json_dumps(body, indent=2) + "\n")
        return 0
    for p in pairs:
        out.print(f"rail {p.rail} {p.path:5} {p.server}: {p.server_command}", markup=False)
        out.print(f"{'':13} {p.client}: {p.client_command}", markup=False)
    out.print(" ".join(f"{k}={v}" for k, v in env.items()), markup=False)
    return 0


def _pair(p: acceptance.Pair) -> dict[str, object]:
    return {f: getattr(p, f) for f in p.__slots__}


STATE_DIR = click.option(
    "--state-dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="The lab's own folder."
)


@ib_cmd.group("lab")
def lab_cmd() -> None:
    """The planned fabric in ibsim with the real OpenSM (primary and standby), left running."""


@lab_cmd.command("up")
@FILE
@STATE_DIR
def lab_up_cmd(file: Path, state_dir: Path) -> int:
    """Export, start ibsim, discover, render OpenSM's files, start the SMs; record what runs."""
    intent = _intent(file)
    try:
        done = lab.up(intent, state_dir)
    except IbError as exc:
        raise click.ClickException(printable(str(exc))) from None
    pids = ", ".join(f"{name} {pid}" for name, pid in done.processes.items())
    timing = f"ibsim ready in {done.ibsim_seconds:.2f} s, SUBNET UP in {done.subnet_up_seconds:.2f} s"
    err.print(f"{done.fabric}: {timing} ({pids}){done.restarted}")
    return 0


@lab_cmd.command("down")
@STATE_DIR
def lab_down_cmd(state_dir: Path) -> int:
    """Stop exactly what `up` started (by PID) and remove its files."""
    stopped = lab.down(state_dir)
    err.print(f"stopped {', '.join(stopped) or 'nothing (no lab recorded here)'}")
    return 0


@lab_cmd.command("status")
@STATE_DIR
def lab_status_cmd(state_dir: Path) -> int:
    """Each recorded process: running or gone; exit 4 unless all run."""
    states = lab.status(state_dir)
    for name, running in states.items():
        out.print(f"{name:8} {'running' if running else 'gone'}")
    return outcome(bool(states) and all(states.values()))


@lab_cmd.command("console")
@STATE_DIR
@click.argument("command")
def lab_console_cmd(state_dir: Path, command: str) -> int:
    """One command for ibsim's console, e.g. 'unlink "S-su1-leaf1"[33]' or 'relink "S-su1-leaf1"[33]'."""
    try:
        lab.console(state_dir, command)
    except IbError as exc:
        raise click.ClickException(printable(str(exc))) from None
    return 0
