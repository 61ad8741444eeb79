"""`gpufabric render` / `nornir render`: one config per switch, written into a folder."""

from __future__ import annotations

import time
from pathlib import Path

import click
from nornir.core import Nornir
from nornir.plugins.runners import SerialRunner

from gpufabric.cli.output import err
from gpufabric.cli.plan_cmd import file_arg, load_plan
from gpufabric.config.context import LinkIndex
from gpufabric.config.render import gc_paused
from gpufabric.intent.types import ALL_PLANES
from gpufabric.push.targets import select
from nornir_tasks.inventory import inventory_from_plan
from nornir_tasks.render import render_config


@click.command("render")
@file_arg
@click.option("--plane", type=click.Choice(ALL_PLANES), help="Only this plane's switches.")
@click.option("--device", "devices", multiple=True, metavar="NAME", help="Only this switch (repeatable).")
@click.option("--role", type=click.Choice(["leaf", "spine", "superspine", "border", "mgmt"]), help="Only this role.")
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("build/configs"),
    show_default=True,
    help="Folder for the rendered files.",
)
def render_cmd(file: str | None, plane: str | None, devices: tuple[str, ...], role: str | None, output: Path) -> int:
    """Render the configuration of every planned switch (or the ones selected) into a folder.

    Each file is written whole or not at all: NAME.cfg for eos and nxos, NAME.yaml (an NVUE startup
    document) for cumulus, and for frr NAME.frr.conf, NAME.interfaces (addresses, MTU), NAME.nft
    (QoS classification, ACLs) and NAME.system.yaml (users, NTP, syslog, SNMP).

    The switch password is read from the variable the intent names and written only as a salted
    SHA-crypt hash; an SNMP community stays a reference token that `push` resolves in memory.
    """
    started = time.perf_counter()
    plan = load_plan(file)
    index = LinkIndex(plan)
    index.hasher.require(plan.intent.credentials.switches.password, "credentials.switches.password")
    unknown = [d for d in devices if d not in index.devices]
    if unknown:
        raise click.BadParameter(f"no switch named {', '.join(unknown)} in the plan", param_hint="--device")

    wanted = {d.name for d in select(plan, plane, devices, role)}
    # Rendering is CPU-bound: threads would only contend for the GIL.
    nr = Nornir(inventory=inventory_from_plan(plan), runner=SerialRunner()).filter(
        filter_func=lambda host: host.name in wanted
    )
    with gc_paused():
        results = nr.run(task=render_config, plan=plan, index=index, out_dir=output)
    failed = {h: r for h, r in results.items() if r.failed}
    for host, r in failed.items():
        exc = r[0].exception
        err.print(f"error: {host}: {type(exc).__name__}: {exc}", markup=False)
    files = sum(len(r[0].result) for r in results.values() if not r.failed)
    err.print(
        f"rendered {files} files for {len(results) - len(failed)} switches into {output} "
        f"in {time.perf_counter() - started:.2f} s"
    )
    return 1 if failed else 0
