"""`gpufabric lab ztp`: provision one emptied lab switch through DHCP (with option 82) and HTTP."""

from __future__ import annotations

from pathlib import Path

import click

from gpufabric.cli.errors import EXIT_FINDINGS
from gpufabric.cli.options import file_arg, lab_name_callback
from gpufabric.cli.output import err, out
from gpufabric.cli.privileges import require_root
from gpufabric.export import ztp
from gpufabric.fleet.lab import registry
from gpufabric.fleet.lab.names import DEFAULT_LAB, LabNames
from gpufabric.fleet.lab.state import DEFAULT_DIR
from gpufabric.fleet.lab.topology import topology
from gpufabric.intent import load_intent
from gpufabric.lab import ztp as lab_ztp
from gpufabric.outputs import json_dumps


@click.command("ztp")
@file_arg
@click.option("--device", required=True, help="The lab switch to empty and provision.")
@click.option(
    "--from",
    "export",
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The folder `gpufabric export ztp -o` wrote for this intent (its dhcp/ and http/).",
)
@click.option(
    "--dhcp",
    type=click.Choice(lab_ztp.SERVERS),
    default="kea",
    show_default=True,
    help="The DHCP server that answers, with the exported configuration.",
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=f"The lab's state dir. [default: the default lab's {DEFAULT_DIR}; a named lab's "
    f"{LabNames('n').state_dir.parent}/NAME, or the folder it was brought up with]",
)
@click.option(
    "--name",
    metavar="NAME",
    callback=lab_name_callback,
    help=f"The lab's name (its switches' namespaces and FRR pathspaces are NAME_switch). [default: {DEFAULT_LAB}]",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON on stdout.")
def lab_ztp_cmd(
    file: str | None, *, device: str, export: Path, dhcp: str, state_dir: Path | None, name: str | None, as_json: bool
) -> int:
    """Empty a lab switch (no management address, its cable moved to its planned OOB port, where a relay adds
    option 82), then let the DHCP server and HTTP provision it; the servers stop once it is done.

    `nornir push --lab --device NAME --dry-run` afterwards shows what a push would still change: nothing.

    Exit codes: 0 provisioned; 4 the switch did not come out of the run provisioned (the logs are named);
    2 bad intent or options, a switch the lab does not hold, a DHCP server or package missing.
    """
    require_root("the lab's ZTP run moves links between network namespaces")
    name, state_dir = registry.resolve(name, state_dir)
    loaded = load_intent(file)
    topo = topology(loaded, name)
    http = (str(ztp.server(topo.plan)), topo.plan.intent.planes.oob.ztp.port if topo.plan.intent.planes.oob else 80)
    try:
        run = lab_ztp.provision(topo, state_dir, export, device, server=dhcp, http=http)
    except lab_ztp.NotProvisionedError as exc:  # anything else the run refuses is the input's or the machine's: exit 2
        err.print(f"error: {exc}")
        return EXIT_FINDINGS
    run.stop()
    result = {"device": device, "dhcp": dhcp, "address": run.address, "bootfile": run.bootfile, "seconds": run.seconds}
    if as_json:
        out.print_json(json_dumps(result))
    else:
        err.print(
            f"{device}: {run.address} from {dhcp} through the relay on its OOB port, {run.bootfile} run, "
            f"provisioned in {run.seconds:.1f} s (logs in {run.folder})"
        )
    return 0
