"""`gpufabric lab hosts up|down`: plan servers as booted systemd-nspawn containers, reachable over SSH."""

from __future__ import annotations

import re
import time
from pathlib import Path

import click

from gpufabric.cli.options import file_arg, load_plan
from gpufabric.cli.output import err, out
from gpufabric.cli.privileges import require_root
from gpufabric.lab import netlink
from gpufabric.lab.hosts import fleet
from gpufabric.lab.hosts.apt_mirror import MirrorError
from gpufabric.lab.hosts.from_plan import UnknownHostError, standin_specs
from gpufabric.lab.hosts.rootfs import RootfsError
from gpufabric.lab.hosts.spec import LAB_PREFIX
from gpufabric.outputs import json_dumps

PREFIX = re.compile(r"[a-z0-9]{1,4}-")

state_dir_option = click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Where the hosts' roots, keys and record of what was made are kept.",
)


@click.group("hosts")
def hosts_cmd() -> None:
    """Plan servers as booted Debian containers (systemd-nspawn), for Molecule and the lab.

    Each container runs systemd and sshd in its own network namespace, with its management NIC on a
    bridge and each planned data NIC a veth. /proc/sys is read-only inside except for net, so what
    the roles do never changes this machine's kernel settings.
    """


def _check_prefix(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    if not PREFIX.fullmatch(value):
        raise click.BadParameter(f"{value!r}: 1-4 lower-case letters or digits, then a dash (like m-)")
    return value


@hosts_cmd.command("up")
@file_arg
@state_dir_option
@click.option("--host", "names", multiple=True, help="A plan server to start (repeat); default: every server.")
@click.option(
    "--router",
    required=True,
    help="Namespace standing in for the leaves: every data NIC ends there, on its planned gateway address.",
)
@click.option("--bridge", required=True, help="Management bridge (made if missing, removed by `down` if made).")
@click.option("--gateway", required=True, help="The bridge's address, a.b.c.d/len; hosts get the next addresses.")
@click.option(
    "--prefix",
    default=LAB_PREFIX,
    show_default=True,
    callback=_check_prefix,
    help="Namespace name prefix of the hosts (1-4 lower-case letters or digits and a dash): another one "
    "lets these hosts run beside the lab's hosts of the same plan.",
)
@click.option("--json", "as_json", is_flag=True, help="Print Molecule instance configs (address, user, key) as JSON.")
def hosts_up(
    *,
    file: str | None,
    state_dir: Path,
    names: tuple[str, ...],
    router: str,
    bridge: str,
    gateway: str,
    prefix: str,
    as_json: bool,
) -> int:
    """Build (or reuse) the cached image, wire and boot the hosts, wait until each answers on SSH."""
    require_root("host containers need network namespaces and systemd-nspawn")
    started = time.perf_counter()
    try:
        specs = standin_specs(load_plan(file), list(names), router, gateway, prefix)
        state = fleet.up(specs, state_dir, bridge=bridge, gateway=gateway, routers=(router,), say=err.print)
    except (UnknownHostError, MirrorError, RootfsError) as exc:
        raise click.UsageError(str(exc)) from None
    except netlink.LabCommandError as exc:
        raise click.ClickException(f"{exc}\n(`gpufabric lab hosts down --state-dir {state_dir}` cleans up)") from None
    err.print(f"{len(specs)} hosts up in {time.perf_counter() - started:.1f} s (state in {state_dir})")
    if as_json:
        instances = [
            {
                "instance": s.name,
                "address": s.mgmt_ip,
                "user": state.user,
                "port": 22,
                "identity_file": state.key_file,
            }
            for s in specs
        ]
        out.print_json(json_dumps(instances))
    return 0


@hosts_cmd.command("down")
@state_dir_option
def hosts_down(state_dir: Path) -> int:
    """Stop the containers (orderly shutdown), remove their namespaces, links and roots; only what `up` made."""
    require_root("host containers need network namespaces and systemd-nspawn")
    started = time.perf_counter()
    state = fleet.down(state_dir)
    if state is None:
        err.print(f"no hosts recorded in {state_dir}")
    else:
        err.print(f"removed {len(state.hosts)} hosts in {time.perf_counter() - started:.1f} s")
    return 0
