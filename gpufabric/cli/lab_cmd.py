"""`gpufabric lab up|down|status`: the plan's switches as network namespaces on this machine."""

from __future__ import annotations

import importlib
import time
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from gpufabric.cli.errors import EXIT_FINDINGS, outcome
from gpufabric.cli.options import file_arg, lab_name_callback
from gpufabric.cli.output import err, out, shown
from gpufabric.cli.privileges import require_root
from gpufabric.fleet.lab import registry
from gpufabric.fleet.lab.names import DEFAULT_LAB, LabNames
from gpufabric.fleet.lab.state import DEFAULT_DIR, LabState
from gpufabric.fleet.lab.topology import topology
from gpufabric.ib import lab as ib_lab
from gpufabric.intent import load_intent
from gpufabric.lab import netlink
from gpufabric.lab.control import down, infiniband_dir, up
from gpufabric.lab.daemons import daemon_status
from gpufabric.lab.hosts.apt_mirror import MirrorError
from gpufabric.lab.hosts.rootfs import RootfsError
from gpufabric.outputs import json_dumps

state_dir_option = click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the lab records what it made (names, PIDs, keys). [default: the default lab's "
    f"{DEFAULT_DIR}; a named lab's {LabNames('n').state_dir.parent}/NAME, or the folder it was brought up with]",
)
name_option = click.option(
    "--name",
    "name",
    metavar="NAME",
    callback=lab_name_callback,
    help="The lab's name: labs of different names run side by side, each with its own namespaces "
    f"(NAME_switch), bridge, processes and state folder. [default: {DEFAULT_LAB}, whose names are the "
    "switches' own]",
)


def _which(name: str | None, state_dir: Path | None) -> tuple[str, Path]:
    return registry.resolve(name, state_dir)


# Subcommands in modules of their own, imported only when used (no command module imports another's).
LAZY = {"hosts": ("gpufabric.cli.lab_hosts_cmd", "hosts_cmd"), "ztp": ("gpufabric.cli.lab_ztp_cmd", "lab_ztp_cmd")}


class LabGroup(click.Group):
    """`lab`, with the subcommands of LAZY registered by name."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY:
            module, attribute = LAZY[cmd_name]
            command: click.Command = getattr(importlib.import_module(module), attribute)
            return command
        return super().get_command(ctx, cmd_name)


@click.group("lab", cls=LabGroup)
def lab_cmd() -> None:
    """A local lab: every planned switch as a network namespace, cabled as planned, on an OOB bridge.

    Every platform runs as frr in the lab (no vendor images run here); `status` says so.
    """


@lab_cmd.command("up")
@file_arg
@name_option
@state_dir_option
@click.option(
    "--hosts/--no-hosts",
    default=True,
    show_default=True,
    help="Also boot the plan's servers as Debian containers cabled into their leaf ports (the first run "
    "builds their image, about a minute); --no-hosts leaves a stub on each server port.",
)
def lab_up(file: str | None, name: str | None, state_dir: Path | None, hosts: bool) -> int:
    """Create the namespaces, cables and management plane, and the hosts (idempotent).

    A second lab of another --name comes up beside the first unless their OOB subnets overlap (both
    would hold it in the root namespace): that is refused, exit 2, naming the other lab."""
    require_root("the lab creates network namespaces and links")
    started = time.perf_counter()
    name, state_dir = _which(name, state_dir)
    topo = topology(load_intent(file), name)
    try:
        state = up(topo, state_dir, hosts=hosts, say=err.print)
    except (MirrorError, RootfsError) as exc:
        raise click.ClickException(str(exc)) from None
    except netlink.LabCommandError as exc:
        raise click.ClickException(f"{exc}\n(`gpufabric lab down{_named(name)}` removes what was made)") from None
    servers = len({s.server for s in topo.stubs if s.server}) if hosts else 0
    err.print(
        f"lab {name} ({topo.fabric}): {len(state.namespaces)} switches running FRR, sshd and lldpd, {servers} hosts "
        f"booted, {len(topo.cables)} cables, OOB bridge {topo.names.bridge} ({topo.gateway}), up in "
        f"{time.perf_counter() - started:.1f} s (state in {state_dir}); the switches are empty until `nornir push`, "
        "the hosts until `ansible-playbook site.yml`"
    )
    return 0


def _named(name: str) -> str:
    return "" if name == DEFAULT_LAB else f" --name {name}"


@lab_cmd.command("down")
@name_option
@state_dir_option
def lab_down(name: str | None, state_dir: Path | None) -> int:
    """Remove exactly what `up` recorded; works after a crash. Only this lab's: another lab's namespaces,
    links, routes and processes stay."""
    require_root("the lab creates network namespaces and links")
    name, state_dir = _which(name, state_dir)
    done = down(state_dir)
    if done is None:
        err.print(f"no lab {name} is up (state dir {state_dir})")
        return 0
    for problem in done.problems:
        err.print(Text.assemble(("could not remove", "red"), " ", shown(problem)))
    if done.problems:
        err.print(
            f"lab {done.state.name} ({done.state.fabric}): not all removed; run `gpufabric lab down"
            f"{_named(done.state.name)}` again (state kept in {state_dir})"
        )
        return EXIT_FINDINGS
    err.print(f"lab {done.state.name} ({done.state.fabric}): removed {done.summary()}")
    return 0


@lab_cmd.command("status")
@file_arg
@name_option
@state_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON on stdout.")
def lab_status(file: str | None, name: str | None, state_dir: Path | None, as_json: bool) -> int:
    """Each planned switch of the lab (--name): whether its namespace is up, its platform, what it runs as; and
    every lab up on this machine. Exit 4 when not all of the lab's switches are up."""
    name, state_dir = _which(name, state_dir)
    topo = topology(load_intent(file), name)
    state = LabState.load(state_dir)
    if state is not None and state.fabric != topo.fabric:
        raise click.UsageError(
            f"lab {name} runs fabric '{state.fabric}', not this intent's '{topo.fabric}': give its intent file"
        )
    present = netlink.namespaces()
    made = set(state.namespaces) if state else set()
    labs = [{"name": r.name, "fabric": r.fabric, "state_dir": r.state_dir, "oob": r.oob} for r in registry.labs()]
    rows: list[dict[str, object]] = []
    for n in topo.nodes:
        wired = n.netns in made and n.netns in present
        running = daemon_status(n.netns, state) if state and wired else {"frr": False, "sshd": False, "lldpd": False}
        rows.append(
            {
                "switch": n.name,
                "planned_platform": n.platform,
                "runs_as": "frr",
                "mgmt_ip": n.mgmt_ip,
                "daemons": running,
                "up": wired and all(running.values()),
            }
        )
    # The InfiniBand compute plane: the simulator and the two subnet managers, each running or not.
    ib = ib_lab.status(infiniband_dir(state_dir)) if topo.plan.infiniband is not None else None
    ib_up = ib is None or (bool(ib) and all(ib.values()))
    if as_json:
        doc: dict[str, object] = {"name": name, "fabric": topo.fabric, "switches": rows, "labs": labs}
        if ib is not None:
            doc["infiniband"] = {"processes": ib, "up": ib_up}
        out.print_json(json_dumps(doc))
    else:
        table = Table(title=f"lab {name} ({topo.fabric}): every platform runs as frr")
        for column in ("switch", "planned platform", "runs as", "management", "frr / sshd / lldpd", "up"):
            table.add_column(column)
        for r in rows:
            table.add_row(
                str(r["switch"]),
                str(r["planned_platform"]),
                "frr",
                str(r["mgmt_ip"] or "-"),
                " / ".join("yes" if ok else "no" for ok in r["daemons"].values()),  # type: ignore[attr-defined]
                "yes" if r["up"] else "no",
            )
        out.print(table)
        if ib is not None:
            ib_text = ", ".join(f"{name} {'running' if ok else 'gone'}" for name, ok in ib.items()) or "not started"
            out.print(f"InfiniBand compute plane (ibsim, OpenSM): {ib_text}", markup=False)
        out.print(
            "labs up on this machine: "
            + (", ".join(f"{lab['name']} ({lab['fabric']}, OOB {lab['oob']})" for lab in labs) or "none"),
            markup=False,
        )
    return outcome(all(r["up"] for r in rows) and ib_up)
