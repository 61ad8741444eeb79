"""`nornir validate`: prove, read-only, that the running network equals the plan."""

from __future__ import annotations

import time
from contextlib import nullcontext

import click

from gpufabric.cli.errors import show_notes
from gpufabric.cli.fleet_options import fleet_options
from gpufabric.cli.output import err, out, write_stdout
from gpufabric.config.secrets import secret_values
from gpufabric.fleet.args import FleetArgs
from gpufabric.fleet.candidates import candidate
from gpufabric.fleet.errors import NoLabError
from gpufabric.fleet.runner import FORK_FROM, run_per_host_forked
from gpufabric.fleet.target import READ_WORKERS, open_fleet
from gpufabric.ib import lab as ib_lab
from gpufabric.ib.errors import IbError
from gpufabric.intent import load_intent
from gpufabric.intent.errors import printable
from gpufabric.lab.control import infiniband_dir
from gpufabric.lab.state import DEFAULT_DIR
from gpufabric.parallel import cores
from gpufabric.plan import build_plan
from gpufabric.plan.infiniband import IbPlan
from gpufabric.validate import infiniband, report
from gpufabric.validate.counters import Limits
from gpufabric.validate.planned import planned
from gpufabric.validate.results import CheckResult
from nornir_tasks.validate import validate_device


@click.command("validate")
@fleet_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "junit"]),
    default="table",
    show_default=True,
    help="Output format.",
)
@click.option("--all", "show_all", is_flag=True, help="Table: list passing results too.")
@click.option("--no-drift", is_flag=True, help="Skip the config-drift check (it renders each switch's candidate).")
@click.option("--counter-window", type=click.FloatRange(0, 3600), default=0.0, show_default=True, metavar="SECONDS",
              help="Read each planned port's counters twice this far apart and judge what happened between: "
              "link flaps, error, discard and PFC pause rates (0: no counter checks).")  # fmt: skip
@click.option("--max-error-rate", type=click.FloatRange(0), default=0.0, show_default=True, metavar="PER_S",
              help="Errored frames per second a port may show in the window.")  # fmt: skip
@click.option("--max-discard-rate", type=click.FloatRange(0), default=1000.0, show_default=True, metavar="PER_S",
              help="Frames dropped per second a port may show in the window.")  # fmt: skip
@click.option("--max-pause-rate", type=click.FloatRange(0), default=10000.0, show_default=True, metavar="PER_S",
              help="PFC pause frames received per second (where the switch exposes them).")  # fmt: skip
def validate_cmd(
    *,
    fleet_args: FleetArgs,
    as_json: bool,
    fmt: str,
    show_all: bool,
    no_drift: bool,
    counter_window: float,
    max_error_rate: float,
    max_discard_rate: float,
    max_pause_rate: float,
) -> int:
    """Check the running switches against the plan. Changes nothing.

    \b
    Checks, per switch: reachable; config-drift (the running config equals the rendered one);
    bgp-session (each planned peer Established with its planned ASN); lldp-neighbor (each fabric
    port sees the planned peer and port); interface (planned ports up with the planned MTU);
    ecmp-width (the planned number of paths to every remote loopback); qos-contract (RoCE and
    CNP DSCP classified to their priorities in the running config); oob-isolation (no data route
    into the management subnet, none out of the management port). With --counter-window:
    link-flaps, port-errors, port-discards and pfc-pause over that window, per planned port.

    Each result has a check id, device, item, expected, observed and verdict.
    Exit codes: 0 every check passed; 1 a check failed; 2 bad intent or options.
    """
    started = time.perf_counter()
    if fleet_args.plane == "compute":
        ib = build_plan(load_intent(fleet_args.file)).infiniband
        if ib is not None:
            return _validate_infiniband(ib, fleet_args, "json" if as_json else fmt, show_all, started)
    fleet = open_fleet(fleet_args, workers=READ_WORKERS)  # validate only reads
    show_notes(fleet.access)
    if fleet_args.plane is None and fleet.plan.infiniband is not None:
        err.print("note: the InfiniBand compute plane is not among these switches: `--plane compute` checks it")
    names = [d.name for d in fleet.targets]
    expected = planned(fleet.plan, fleet.index, names, fleet_args.plane, processes=cores())  # no thread runs yet
    candidates = {n: None if no_drift else candidate(fleet.plan, fleet.index, n, fleet.access.secrets) for n in names}

    limits = dict.fromkeys(names, Limits(counter_window, max_error_rate, max_discard_rate, max_pause_rate))
    masked = dict.fromkeys(names, secret_values(fleet.plan.intent, fleet.access.secrets))
    # A large fleet is read from a process per core; no spinner then (its thread would not survive a fork).
    processes = cores() if len(names) >= FORK_FROM else 1
    reading = nullcontext() if processes > 1 else err.status(f"validating {len(names)} switches ...")
    if processes > 1:
        err.print(f"validating {len(names)} switches from {processes} processes ...")
    with reading:
        results = run_per_host_forked(
            fleet.nr,
            names,
            validate_device,
            processes,
            planned=expected,
            candidate=candidates,
            limits=limits,
            masked=masked,
        )
    fleet.nr.close_connections()
    found: list[CheckResult] = [r for name in names for r in results[name]]
    seconds = time.perf_counter() - started
    return _report(found, "json" if as_json else fmt, show_all, seconds, f"{len(names)} switches")


def _validate_infiniband(ib: IbPlan, args: FleetArgs, fmt: str, show_all: bool, started: float) -> int:
    """The InfiniBand compute plane, read with infiniband-diags: on the lab's ibsim fabric with --lab (or
    --state-dir), else on this host, which must have a port on the fabric (the subnet manager's host)."""
    if args.devices or args.role:
        raise click.UsageError("--device and --role select Ethernet switches; the InfiniBand plane is checked whole")
    wants_lab = args.lab or args.state_dir is not None
    lab_state = infiniband_dir(args.state_dir or DEFAULT_DIR)
    running = ib_lab.status(lab_state)
    if wants_lab and not (running and all(running.values())):
        raise NoLabError(f"the lab's InfiniBand compute plane is not up (state {lab_state}): run `gpufabric lab up`")
    run = infiniband.lab_runner(lab_state) if wants_lab else infiniband.local_runner
    with err.status(f"validating the InfiniBand compute plane ({len(ib.fabric.nodes)} nodes) ..."):
        try:
            # ibsim reports its own link speeds: in the lab the widths are compared, not the rates.
            found = infiniband.check_plane(ib, run, rates=not wants_lab)
        except IbError as exc:
            # The tools' own words may be in it: escaped, as everything outside shown to the user.
            raise click.ClickException(printable(f"InfiniBand compute plane: {exc}")) from None
    return _report(
        found, fmt, show_all, time.perf_counter() - started, f"{len(ib.fabric.switches)} InfiniBand switches"
    )


def _report(found: list[CheckResult], fmt: str, show_all: bool, seconds: float, what: str) -> int:
    if fmt == "json":
        # Written as is: rich would split the text into segments first (a quarter of a 200-switch run).
        write_stdout(report.as_json(found, seconds) + "\n")
    elif fmt == "junit":
        write_stdout(report.as_junit(found, seconds) + "\n")
    else:
        report.print_table(out, found, show_all)
        failed = sum(not r.ok for r in found)
        err.print(f"{what}, {len(found)} checks, {failed} failed, {seconds:.1f} s")
    return 0 if all(r.ok for r in found) else 1
