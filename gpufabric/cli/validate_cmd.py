"""`nornir validate`: prove, read-only, that the running network equals the plan (gpufabric.validate.service)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from gpufabric.cli.errors import outcome, show_notes
from gpufabric.cli.fleet_options import fleet_options
from gpufabric.cli.options import FiniteFloat
from gpufabric.cli.output import err, out, write_stdout
from gpufabric.fleet.access import Access
from gpufabric.fleet.args import FleetArgs
from gpufabric.intent.errors import printable
from gpufabric.validate import report
from gpufabric.validate.service import PlaneUnreadableError, ValidateReport, ValidateRequest, ValidateWatcher, validate


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
@click.option("--counter-window", type=FiniteFloat(0, 3600), default=0.0, show_default=True, metavar="SECONDS",
              help="Read each planned port's counters twice this far apart and judge what happened between: "
              "link flaps, error, discard and PFC pause rates (0: no counter checks).")  # fmt: skip
@click.option("--max-error-rate", type=FiniteFloat(0), default=0.0, show_default=True, metavar="PER_S",
              help="Errored frames per second a port may show in the window.")  # fmt: skip
@click.option("--max-discard-rate", type=FiniteFloat(0), default=1000.0, show_default=True, metavar="PER_S",
              help="Frames dropped per second a port may show in the window.")  # fmt: skip
@click.option("--max-pause-rate", type=FiniteFloat(0), default=10000.0, show_default=True, metavar="PER_S",
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
    ecmp-width (the planned number of paths to every remote loopback); oob-isolation (no data
    route into the management subnet, none out of the management port); carried-bgp-session (each
    carried plane's VRF session Established). The running configuration is held to the plan by
    verify's checks, under verify's names (qos-dscp-map, load-balancing, bfd, bgp-timers,
    bgp-max-med, qos-cable-length, qos-headroom, carried-port, carried-bgp, carried-class, carried-share), where
    the platform's running reader returns their facts. With --counter-window:
    link-flaps, port-errors, port-discards and pfc-pause over that window, per planned port.

    Each result has a check id, device, item, expected, observed and verdict.
    Exit codes: 0 every check passed; 4 a check failed; 2 bad intent or options.
    """
    request = ValidateRequest(
        fleet_args,
        drift=not no_drift,
        counter_window=counter_window,
        max_error_rate=max_error_rate,
        max_discard_rate=max_discard_rate,
        max_pause_rate=max_pause_rate,
    )
    try:
        found = validate(request, Shown())
    except PlaneUnreadableError as exc:
        # The tools' own words may be in it: escaped, as everything outside shown to the user.
        raise click.ClickException(printable(str(exc))) from None
    return _report(found, "json" if as_json else fmt, show_all)


class Shown(ValidateWatcher):
    """Validate as it happens, on the terminal: its notes, and a spinner while the switches are read."""

    def reached(self, access: Access) -> None:
        show_notes(access)

    def note(self, text: str) -> None:
        err.print(text)

    @contextmanager
    def reading(self, what: str, processes: int) -> Iterator[None]:
        if processes > 1:  # no spinner: its thread would not survive a fork
            err.print(f"validating {what} from {processes} processes ...")
            yield
            return
        with err.status(f"validating {what} ..."):
            yield


def _report(found: ValidateReport, fmt: str, show_all: bool) -> int:
    results = list(found.results)
    if fmt == "json":
        # Written as is: rich would split the text into segments first (a quarter of a 200-switch run).
        write_stdout(report.as_json(results, found.seconds) + "\n")
    elif fmt == "junit":
        write_stdout(report.as_junit(results, found.seconds) + "\n")
    else:
        report.print_table(out, results, show_all)
        err.print(f"{found.what}, {len(results)} checks, {found.failed} failed, {found.seconds:.1f} s")
    return outcome(found.ok)
