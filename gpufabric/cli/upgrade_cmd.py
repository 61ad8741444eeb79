"""`nornir upgrade`: install an OS release on switches one failure domain at a time
(gpufabric.upgrade.service.upgrade)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gpufabric.cli.fleet_options import fleet_options_planes
from gpufabric.cli.options import FiniteFloat
from gpufabric.cli.roll_output import Progress, report
from gpufabric.cli.scheduler_options import audit_log_option, change_options, reach_of
from gpufabric.fleet.args import FleetArgs
from gpufabric.upgrade.service import UpgradeRequest, upgrade


@click.command("upgrade")
@fleet_options_planes
@click.option("--release", required=True, metavar="R", help="The release the image holds (as the intent pins it).")
@click.option("--image", "image_url", required=True, metavar="URL", help="Where the switches fetch the image from.")
@click.option("--sha512", required=True, metavar="HEX", help="The image's SHA-512, as its vendor publishes it.")
@click.option("--image-name", metavar="FILE", help="The image's file name on the switch. [default: the URL's end]")
@click.option(
    "--mode",
    type=click.Choice(("warm", "fast", "cold")),
    help="How to reboot into the image. [default: each platform's least disruptive]",
)
@click.option(
    "--drain",
    type=click.Choice(["always", "never"]),
    default="always",
    show_default=True,
    help="Drain each switch before its install and reboot, undrain it after.",
)
@click.option(
    "--boot-timeout",
    type=FiniteFloat(10, 14400),
    default=1800.0,
    show_default=True,
    help="Seconds from a switch's reboot until it must be back on the release, with every session and port.",
)
@click.option(
    "--fallback-timeout",
    type=FiniteFloat(0, 14400),
    default=1800.0,
    show_default=True,
    help="Seconds more a switch that did not come back is waited for (on its previous image).",
)
@click.option(
    "--poll",
    type=FiniteFloat(0.1, 60),
    default=5.0,
    show_default=True,
    help="Seconds between two looks at a switch while waiting for it to come back.",
)
@click.option("--batch", "batch_size", type=click.IntRange(1), help="At most this many switches at once.")
@change_options
@audit_log_option
@click.option("--dry-run", is_flag=True, help="Show the batches; touch nothing.")
def upgrade_cmd(
    *,
    fleet_args: FleetArgs,
    planes: tuple[str, ...],
    as_json: bool,
    release: str,
    image_url: str,
    sha512: str,
    image_name: str | None,
    mode: str | None,
    drain: str,
    boot_timeout: float,
    fallback_timeout: float,
    poll: float,
    batch_size: int | None,
    dry_run: bool,
    audit_log: Path | None,
    **change_opts: Any,
) -> int:
    """Install release R on switches one failure domain at a time, with each vendor's own procedure.

    \b
    Per batch (push's batches: a canary alone, then one failure domain of a plane at a time): each
    switch that does not already run R fetches the image and checks its SHA-512, is drained, installs
    it as its next boot (Cumulus: the other partition; EOS: boot system flash:; NX-OS: install all,
    after its compatibility check; SONiC: sonic-installer, booted once with the previous image kept
    the default), reboots into it, must come back within --boot-timeout running R with every session
    and port it had and no validate check failing that passed before, and is undrained. A switch that
    does not hold boots its previous image and the rollout stops there: later batches are not touched.
    One platform per run (an image is one platform's). Not for the lab: its switches run the machine's
    FRR.

    Exit codes: 0 every switch runs R; 4 the rollout stopped (a switch failed or fell back); 2 bad
    intent, options, image URL or checksum, a release gpufabric does not render for, another push running.
    """
    request = UpgradeRequest(
        fleet_args,
        release=release,
        image_url=image_url,
        sha512=sha512,
        image_name=image_name,
        planes=planes,
        mode=mode,
        drain=drain == "always",
        boot_timeout=boot_timeout,
        fallback_timeout=fallback_timeout,
        batch_size=batch_size,
        dry_run=dry_run,
        poll=poll,
        schedulers=reach_of(change_opts),
        force=change_opts["force"],
        drain_timeout=change_opts["drain_timeout"],
        audit_log=audit_log,
    )
    return report(upgrade(request, Progress(quiet=as_json)), as_json=as_json)
