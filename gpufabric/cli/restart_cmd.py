"""`nornir restart`: reboot switches one failure domain at a time (gpufabric.upgrade.service.restart)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gpufabric.cli.fleet_options import fleet_options_planes
from gpufabric.cli.options import FiniteFloat
from gpufabric.cli.roll_output import Progress, report
from gpufabric.cli.scheduler_options import audit_log_option, change_options, reach_of
from gpufabric.fleet.args import FleetArgs
from gpufabric.upgrade.service import RestartRequest, restart

MODES = ("warm", "fast", "cold", "daemons")


@click.command("restart")
@fleet_options_planes
@click.option(
    "--mode",
    type=click.Choice(MODES),
    help="How to reboot: warm, fast, cold, or daemons (only the routing daemons: the lab's FRR). [default: each "
    "platform's least disruptive, as its platform page and docs/upgrade.md list them]",
)
@click.option(
    "--drain",
    type=click.Choice(["always", "never"]),
    default="always",
    show_default=True,
    help="Drain each switch before its reboot and undrain it after (never: its flows lose what it held).",
)
@click.option(
    "--boot-timeout",
    type=FiniteFloat(10, 7200),
    default=900.0,
    show_default=True,
    help="Seconds from a switch's reboot until it must be back, with every session and port it had up.",
)
@click.option(
    "--poll",
    type=FiniteFloat(0.1, 60),
    default=2.0,
    show_default=True,
    help="Seconds between two looks at a switch while waiting for it to come back.",
)
@click.option("--batch", "batch_size", type=click.IntRange(1), help="At most this many switches at once.")
@change_options
@audit_log_option
@click.option("--dry-run", is_flag=True, help="Show the batches and each switch's reboot mode; touch nothing.")
def restart_cmd(
    *,
    fleet_args: FleetArgs,
    planes: tuple[str, ...],
    as_json: bool,
    mode: str | None,
    drain: str,
    boot_timeout: float,
    poll: float,
    batch_size: int | None,
    dry_run: bool,
    audit_log: Path | None,
    **change_opts: Any,
) -> int:
    """Reboot switches one failure domain at a time: drain, reboot, wait until back, validate, undrain.

    \b
    The batches are push's: a canary alone, then one failure domain of each plane at a time (the data
    planes side by side), leaves first. Per batch: each switch is read (its BGP sessions and ports up,
    the validate checks it passes), drained, rebooted the least disruptive way its platform offers
    (--mode), waited for until it has rebooted and has every session and port back (--boot-timeout),
    held to the validate checks it passed before, and undrained. A switch that does not come back as
    it was stops the rollout after its batch and stays drained; later batches are not touched. In the
    lab (--lab) a switch's reboot is a restart of its FRR daemons.

    \b
    Before a switch that is the only path of some server's NIC (a rail leaf, a storage leaf without
    an MLAG pair) is drained, those servers are drained in the schedulers the intent's `scheduler:`
    section or the options name, and their jobs waited for (--job-wait): when jobs still run then,
    that switch is not touched and the restart stops (exit 4) unless --force. A drained switch is
    rebooted once its traffic has left (--drain-timeout). After the switch is back and undrained,
    only the nodes gpufabric drained are resumed. Every step is in the audit log.

    Exit codes: 0 every switch rebooted and back; 4 the rollout stopped (a switch named, left drained);
    2 bad intent or options, no switch selected, a reboot mode a platform lacks, another push running.
    """
    request = RestartRequest(
        fleet_args,
        planes=planes,
        mode=mode,
        drain=drain == "always",
        boot_timeout=boot_timeout,
        batch_size=batch_size,
        dry_run=dry_run,
        poll=poll,
        schedulers=reach_of(change_opts),
        force=change_opts["force"],
        drain_timeout=change_opts["drain_timeout"],
        audit_log=audit_log,
    )
    return report(restart(request, Progress(quiet=as_json)), as_json=as_json)
