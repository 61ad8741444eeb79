"""The switches a push or a validate talks to: the plan, the selection, and a Nornir over them.

When a lab of this fabric is up (its state in `state_dir`), the fleet is the lab: every switch
is reached as `frr` with the lab's login, and the plan is the lab's (every platform as frr).
Otherwise it is the real network, with the credentials the intent references.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click
from nornir.core import Nornir
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir.plugins.runners import ThreadedRunner
from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

from gpufabric.config.context import LinkIndex
from gpufabric.config.secrets import PasswordHasher
from gpufabric.intent import load_intent
from gpufabric.lab.state import DEFAULT_DIR
from gpufabric.lab.topology import topology
from gpufabric.plan import build_plan
from gpufabric.plan.model import Device, Plan
from gpufabric.push import access as access_mod
from gpufabric.push.access import Access
from gpufabric.push.targets import select
from nornir_tasks.inventory import inventory_from_plan

WORKERS = 32  # SSH sessions in flight; each spends its time waiting on the device


@dataclass
class Fleet:
    plan: Plan
    index: LinkIndex
    targets: list[Device]
    access: Access
    nr: Nornir


@dataclass(frozen=True)
class FleetArgs:
    """Which switches, and how to reach them: what `push` and `validate` share on the command line."""

    file: str | None = None
    plane: str | None = None
    devices: tuple[str, ...] = ()
    role: str | None = None
    lab: bool | None = None  # None: the lab when one of this fabric is up
    state_dir: Path = DEFAULT_DIR
    timeout: int = access_mod.CONNECT_TIMEOUT


def open_fleet(args: FleetArgs, workers: int = WORKERS) -> Fleet:
    loaded = load_intent(args.file)
    intent = loaded.intent
    lab_login = access_mod.lab_access(args.state_dir, intent) if args.lab is not False else None
    if args.lab and lab_login is None:
        raise click.UsageError(
            f"no lab of fabric '{intent.fabric.name}' is up (state dir {args.state_dir}): run `gpufabric lab up`"
        )
    if lab_login is not None:
        plan = topology(loaded).plan
        chosen = lab_login
    else:
        plan = build_plan(loaded)
        chosen = access_mod.env_access(intent)
    index = LinkIndex(plan, PasswordHasher(intent.fabric.name, chosen.secrets))
    unknown = [d for d in args.devices if d not in index.devices]
    if unknown:
        raise click.BadParameter(f"no switch named {', '.join(unknown)} in the plan", param_hint="--device")
    targets = select(plan, args.plane, args.devices, args.role)
    if not targets:
        raise click.UsageError("no switch matches the selection (--plane/--device/--role)")
    inventory = inventory_from_plan(plan)
    wanted = {d.name for d in targets}
    for name in list(inventory.hosts):
        if name not in wanted:
            del inventory.hosts[name]
    access_mod.apply(inventory, chosen, args.timeout)
    if CONNECTION_NAME not in ConnectionPluginRegister.available:
        ConnectionPluginRegister.register(CONNECTION_NAME, Napalm)
    nr = Nornir(inventory=inventory, runner=ThreadedRunner(num_workers=workers))
    return Fleet(plan, index, targets, chosen, nr)
