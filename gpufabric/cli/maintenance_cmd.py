"""`gpufabric maintenance on|off|status`: drain a switch, put it back, or say which are drained
(gpufabric.maintenance.service)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from gpufabric.cli.errors import outcome, show_notes
from gpufabric.cli.fleet_options import fleet_options
from gpufabric.cli.options import FiniteFloat
from gpufabric.cli.output import err, out, write_stdout
from gpufabric.cli.scheduler_options import audit_log_option
from gpufabric.fleet.access import Access
from gpufabric.fleet.args import FleetArgs
from gpufabric.intent.errors import printable
from gpufabric.maintenance import service
from gpufabric.maintenance.service import DRAIN_TIMEOUT, MAX_RATE, MaintenanceRequest, MaintenanceResult
from gpufabric.outputs import json_dumps

EXIT = "Exit codes: 0 done (and the fabric settled, when waited for); 4 a switch failed, or the wait ran out; 2 bad " \
    "intent or options, or refused (no lab up, unknown switch)."  # fmt: skip


@click.group("maintenance")
def maintenance_cmd() -> None:
    """Take switches out of service before work on them, and put them back.

    \b
    Each OS's own mechanism: Cumulus maintenance units (5.13+) or the maintenance action
    (before), EOS maintenance mode (unit System, quiesce), NX-OS GIR (system mode
    maintenance), SONiC TSA/TSB, FRR graceful shutdown with an outbound AS-path prepend.
    The drain is recorded on the switch (who, when, why, how) and in the audit trail, so
    `maintenance status` finds it from any controller, after a crash too.

    \b
    At 3 a.m.:
      gpufabric maintenance on --device cmp-spine1 --reason "replace PSU"
      gpufabric maintenance status --device cmp-spine1
      gpufabric maintenance off --device cmp-spine1
    """


class Shown(service.MaintenanceWatcher):
    def reached(self, access: Access) -> None:
        show_notes(access)

    def waiting(self, what: str, timeout: float) -> None:
        err.print(f"waiting for {what} (at most {timeout:.0f} s) ...", markup=False)


@maintenance_cmd.command("on")
@fleet_options
@click.option("--reason", default="", metavar="TEXT", help="Why (one line, at most 200 characters): kept on the "
              "switch and in the audit trail.")  # fmt: skip
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="Wait until the traffic has left: the neighbours' ECMP no longer holds the switch and its "
              "fabric ports carry almost nothing.")  # fmt: skip
@click.option("--drain-timeout", type=FiniteFloat(1, 3600), default=DRAIN_TIMEOUT, show_default=True,
              metavar="SECONDS", help="How long to wait for the traffic to leave.")  # fmt: skip
@click.option("--max-rate", type=FiniteFloat(0), default=MAX_RATE, show_default=True, metavar="BITS_S",
              help="What a drained switch's fabric port may still receive (routing protocols, LLDP).")  # fmt: skip
@audit_log_option
def on_cmd(*, fleet_args: FleetArgs, as_json: bool, reason: str, wait: bool, drain_timeout: float,
           max_rate: float, audit_log: Path | None) -> int:  # fmt: skip
    """Drain the switches named by --device: the traffic moves to the other paths.

    A switch already drained stays drained by whoever drained it first. A switch that is
    the only path for some servers (a rail leaf) still carries their traffic: drain those
    servers in the scheduler first.
    """
    if not reason.isprintable() or len(reason) > 200:
        raise click.BadParameter("one printable line of at most 200 characters", param_hint="--reason")
    request = MaintenanceRequest(fleet_args, reason=reason, wait=wait, timeout=drain_timeout, max_rate=max_rate,
                                 audit_log=audit_log)  # fmt: skip
    return _report(service.drain(request, Shown()), as_json)


on_cmd.help = (on_cmd.help or "") + "\n\n" + EXIT


@maintenance_cmd.command("off")
@fleet_options
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="Wait until the neighbours route over as many paths as the plan expects.")  # fmt: skip
@click.option("--drain-timeout", type=FiniteFloat(1, 3600), default=DRAIN_TIMEOUT, show_default=True,
              metavar="SECONDS", help="How long to wait for the planned ECMP widths.")  # fmt: skip
@audit_log_option
def off_cmd(*, fleet_args: FleetArgs, as_json: bool, wait: bool, drain_timeout: float, audit_log: Path | None) -> int:
    """Put the switches named by --device back into service, whoever drained them."""
    request = MaintenanceRequest(fleet_args, wait=wait, timeout=drain_timeout, force=True, audit_log=audit_log)
    return _report(service.undrain(request, Shown()), as_json)


off_cmd.help = (off_cmd.help or "") + "\n\n" + EXIT


@maintenance_cmd.command("status")
@fleet_options
def status_cmd(*, fleet_args: FleetArgs, as_json: bool) -> int:
    """Which switches are drained, since when, by whom (push id or person) and how, as each switch
    records it. Changes nothing.

    Exit codes: 0 read (drained or not); 4 a switch could not be read; 2 bad intent or options.
    """
    return _report(service.status(MaintenanceRequest(fleet_args), Shown()), as_json)


def _report(result: MaintenanceResult, as_json: bool) -> int:
    if as_json:
        write_stdout(json_dumps(result.as_dict()) + "\n")
        return outcome(result.ok)
    table = Table(title=Text(f"maintenance {result.action} ({result.target})"))
    for column in ("switch", "drained", "since", "by", "mechanism", "reason", "note"):
        table.add_column(column)
    for s in result.switches:
        st = s.state
        drained = "?" if not st else ("yes" if st.get("drained") else "no")
        if st.get("drained") and st.get("applied") is False:
            drained = "marked, not applied"
        note = s.error or str(st.get("note") or "") or s.diff
        cells = [s.device, drained, *(str(st.get(k) or "") for k in ("since", "by", "mechanism", "reason")), note]
        table.add_row(*(Text(printable(c)) for c in cells))
    out.print(table)
    if result.wait is not None:
        w = result.wait
        if w.done:
            err.print(f"settled in {w.seconds:.1f} s")
        else:
            err.print(f"not settled after {w.seconds:.1f} s; still:", markup=False)
            for line in w.waiting_for[:20]:
                err.print(f"  {printable(line)}", markup=False)
    if result.trail_error is not None:
        err.print(f"audit trail incomplete: {printable(str(result.trail_error))}", markup=False)
    if result.push_id:
        err.print(f"{result.action} {result.push_id}: {'ok' if result.ok else 'NOT OK'}, {result.seconds:.1f} s")
    return outcome(result.ok)
