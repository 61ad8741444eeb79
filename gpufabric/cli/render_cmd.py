"""`gpufabric render` / `nornir render`: one config per switch, written into a folder."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from gpufabric.cli.errors import outcome
from gpufabric.cli.options import (
    file_arg,
    lab_name_callback,
    load_plan,
    print_warnings,
    selection_options,
    strict_option,
    warnings_exit,
)
from gpufabric.cli.output import err, shown
from gpufabric.config.batch import PARALLEL_FROM, render_all
from gpufabric.config.context import LinkIndex
from gpufabric.fleet.args import FleetArgs
from gpufabric.fleet.select import select
from gpufabric.plan.model import Plan


@click.command("render")
@file_arg
@selection_options
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("build/configs"),
    show_default=True,
    help="Folder for the rendered files.",
)
@click.option(
    "--lab",
    is_flag=True,
    help="Render for the local lab as `nornir push --lab` does (every switch as frr, the lab's login and the "
    "secrets `gpufabric lab up` keeps, unless exported): what `nornir push --lab --from DIR` loads.",
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The lab's state dir; naming it renders for that lab. [default: /var/lib/gpufabric/lab]",
)
@click.option(
    "--lab-name",
    metavar="NAME",
    callback=lab_name_callback,
    help="Render for the lab brought up with `gpufabric lab up --name NAME`; naming it renders for that lab.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    help="Worker processes (default: every core this process may use; fabrics under 64 switches use one).",
)
@strict_option
def render_cmd(
    file: str | None,
    *,
    plane: str | None,
    devices: tuple[str, ...],
    role: str | None,
    output: Path,
    lab: bool,
    state_dir: Path | None,
    lab_name: str | None,
    jobs: int | None,
    strict: bool,
) -> int:
    """Render the configuration of every planned switch (or the ones selected) into a folder.

    Each file is written whole or not at all, the files each platform's switch gets (`gpufabric docs
    platforms` lists them per platform): NAME.cfg on eos and nxos, an NVUE startup document NAME.yaml on
    cumulus, NAME.frr.conf with its host files on frr, and so on for every registered platform.

    The switch password is read from the variable the intent names and written only as a salted
    SHA-crypt hash; an SNMP community stays a reference token that `push` resolves in memory.
    """
    started = time.perf_counter()
    target = FleetArgs(file=file, lab=lab, state_dir=state_dir, lab_name=lab_name)
    if target.wants_lab:
        plan, index = _for_lab(target)
    else:
        plan = load_plan(file)
        index = LinkIndex(plan)
    print_warnings(plan)
    index.hasher.require(plan.intent.credentials.switches.password, "credentials.switches.password")
    unknown = [d for d in devices if d not in index.devices]
    if unknown:
        raise click.BadParameter(f"no switch named {', '.join(unknown)} in the plan", param_hint="--device")

    names = [d.name for d in select(plan, plane, devices, role)]
    try:
        with _progress(len(names)) as advance:
            result = render_all(plan, names, index, output, workers=jobs, progress=advance)
    except OSError as exc:  # the folder cannot be made or written: nothing was renamed into place
        where = exc.filename or output
        raise click.ClickException(f"cannot write {where}: {exc.strerror}; choose another --output") from None
    for name in sorted(result.errors):
        err.print(shown(f"error: {name}: {result.errors[name]}"))
    err.print(
        f"rendered {result.files} files for {result.switches} switches into {output} "
        f"in {time.perf_counter() - started:.2f} s"
    )
    return warnings_exit(plan, strict, outcome(not result.errors))


def _for_lab(target: FleetArgs) -> tuple[Plan, LinkIndex]:
    """The lab's plan and secrets, exactly as a push to the lab renders them."""
    from gpufabric.cli.errors import refusals
    from gpufabric.config.secrets import PasswordHasher
    from gpufabric.fleet.target import reach  # Nornir and NAPALM: loaded only for the lab

    with refusals():  # no lab up: exit 2, as a usage error
        plan, access = reach(dataclasses.replace(target, lab=True))
    return plan, LinkIndex(plan, PasswordHasher.for_intent(plan.intent, access.secrets))


@contextmanager
def _progress(total: int) -> Iterator[Callable[[int], None] | None]:
    """A bar on a terminal for large fabrics; nothing in logs and pipes."""
    if total < PARALLEL_FROM or not err.is_terminal:
        yield None
        return
    # No refresh thread (auto_refresh off): the render forks its workers, and a fork should not copy a
    # thread that may hold a lock; the bar is redrawn as chunks finish instead.
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn  # a terminal only: 50 ms

    columns = (TextColumn("render"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=err, transient=True, auto_refresh=False) as bar:
        task = bar.add_task("render", total=total)
        yield lambda done: bar.update(task, completed=done, refresh=True)
