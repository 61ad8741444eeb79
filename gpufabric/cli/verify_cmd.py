"""`gpufabric verify` / `nornir verify`: prove rendered configs equal the plan, offline."""

from __future__ import annotations

import time
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from gpufabric.cli.errors import outcome
from gpufabric.cli.options import file_arg, load_plan, print_warnings, strict_option, warnings_exit
from gpufabric.cli.output import err, out, shown
from gpufabric.intent.types import ALL_PLANES
from gpufabric.outputs import json_dumps
from gpufabric.verify import vendor
from gpufabric.verify.runner import verify


@click.command("verify")
@file_arg
@click.option("--plane", type=click.Choice(ALL_PLANES), help="Only this plane's switches.")
@click.option(
    "--configs",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("build/configs"),
    show_default=True,
    help="Folder that `render` wrote.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON on stdout.")
@click.option(
    "--vendor/--no-vendor",
    "vendor_judges",
    default=True,
    show_default=True,
    help="Also judge each file with its vendor's model where installed (NVUE: nvueschema; EOS: pyavd).",
)
@strict_option
def verify_cmd(
    file: str | None, plane: str | None, configs: Path, *, as_json: bool, vendor_judges: bool, strict: bool
) -> int:
    """Read the rendered configs back and check them against the plan, without any device.

    Checks per switch: hostname; BGP ASN, every planned neighbour with the peer's ASN and no
    other, ECMP width and multipath-relax; MTU and /31 of every port; on planes that carry
    RoCE the DSCP map, PFC priority, CNP strict queue, ECN thresholds, PFC watchdog and the
    policy on every fabric and host port; a converged plane's carried planes (each subinterface's
    VRF, tag and address, each VRF session, each class's DSCP values and share); no OOB route or
    session toward a data plane;
    passwords hashed and communities referenced. Per link: both ends agree on MTU, /31 and ASN.
    Where installed, the vendors' own models judge every line too: NVIDIA's NVUE object model
    (nvueschema) each Cumulus file, Arista's AVD (pyavd) each EOS file; the summary says which
    judges ran and how to install one that was skipped.

    Exit 0 when nothing is found, 4 with findings, 2 when the folder or intent is unusable, 3 with
    --strict when nothing is found but the intent or the plan has warnings.
    """
    if not configs.is_dir():
        raise click.BadParameter(
            f"{configs} is not a folder; run `nornir render -o {configs}` first", param_hint="--configs"
        )
    started = time.perf_counter()
    plan = load_plan(file)
    print_warnings(plan)
    report = verify(plan, configs, plane, vendor_judges=vendor_judges)
    if as_json:
        doc = {
            "switches": report.switches,
            "files": report.files,
            "passed": not report.findings,
            "findings": [f.as_dict() for f in report.findings],
            "vendor_judges": {"judged": report.judged, "skipped": report.skipped},
        }
        out.print_json(json_dumps(doc))
    elif report.findings:
        table = Table(title=f"{len(report.findings)} findings")
        for column in ("device", "check", "where", "expected", "found"):
            table.add_column(column)
        for f in report.findings:
            # Text cells: a vendor's message may hold `[...]`, which rich would read as markup.
            table.add_row(*(Text(c) for c in (f.device, f.check, f"{f.file}:{f.line}", f.expected, f.found)))
        out.print(table)
    for name, count in sorted(report.judged.items()):
        err.print(f"vendor judge for {name}: {vendor.title(name)} judged {count} files")
    for name, why in report.skipped.items():
        err.print(shown(f"vendor judge for {name} skipped: {why}"))
    err.print(
        f"verified {report.switches} switches ({report.files} files) in {configs} "
        f"in {time.perf_counter() - started:.2f} s: {len(report.findings)} findings"
    )
    return warnings_exit(plan, strict, outcome(not report.findings))
