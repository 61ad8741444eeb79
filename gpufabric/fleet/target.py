"""The switches a push or a validate talks to: the plan, the selection, and a Nornir over them.

Asked for the lab (`--lab`, or `--state-dir` naming one), the fleet is the lab: every switch is
reached as `frr` with the lab's login, and the plan is the lab's (every platform as frr).
Otherwise it is the real network, with the credentials the intent references, even when a lab of
the same fabric is up: leftover lab state must never decide where a change goes.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path

from nornir.core import Nornir
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir.plugins.runners import ThreadedRunner
from nornir_napalm.plugins.connections import CONNECTION_NAME

from gpufabric.config.context import LinkIndex
from gpufabric.config.secrets import PasswordHasher
from gpufabric.config.vault import open_vault
from gpufabric.fleet import access as access_mod
from gpufabric.fleet import args as args_mod
from gpufabric.fleet.access import Access
from gpufabric.fleet.args import FleetArgs
from gpufabric.fleet.context import SwitchContexts
from gpufabric.fleet.errors import EmptySelectionError, NoLabError, UnknownSwitchError
from gpufabric.fleet.inventory import inventory_from_plan
from gpufabric.fleet.lab.state import AUDIT_FILE, LabState
from gpufabric.fleet.lab.topology import topology
from gpufabric.fleet.select import select
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from gpufabric.plan.model import Device, Plan

log = logging.getLogger(__name__)

WORKERS = 32  # SSH sessions in flight while a batch changes; each spends its time waiting on the device
# Sessions in flight while every switch is only read (the pending-push check, the diffs, validate): a
# switch's read is seconds of waiting on NVUE for tens of milliseconds of the controller's CPU. By
# measurement (bench/rollout_scale.py, 655 switches, docs/benchmarks.md): 64 at once 76 s for the dry
# run, 128 56 s, 256 46 s. The threads wait on sockets; shared between the reading processes.
READ_WORKERS = 256


@dataclass
class Fleet:
    plan: Plan
    index: LinkIndex
    targets: list[Device]
    access: Access
    nr: Nornir
    contexts: SwitchContexts  # each switch's configuration context, built once for the whole command

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.targets]


def reach(args: FleetArgs) -> tuple[Plan, Access]:
    """The plan to work from and how to log in: the lab's (every switch as frr) only when asked for,
    else the real switches' with the intent's credentials."""
    wants_lab = args.wants_lab
    state_dir = args.lab_dir
    # A lab named and no file: the intent that lab was brought up with (another lab's fabric would not match).
    file = args.file if args.file is not None or not wants_lab else lab_intent(state_dir)
    loaded = load_intent(file, embedded=False)  # an example fabric is never a target
    intent = loaded.intent
    lab_login = access_mod.lab_access(state_dir, intent) if wants_lab else None
    if wants_lab and lab_login is None:
        raise NoLabError(
            f"no lab of fabric '{intent.fabric.name}' is up (state dir {state_dir}): run `gpufabric lab up`"
        )
    jump = access_mod.jump_settings(args.known_hosts, args.jump_host, args.ssh_config, lab=lab_login is not None)
    if lab_login is not None:
        log.info("target: the lab of fabric %s (state dir %s)", intent.fabric.name, state_dir)
        return topology(loaded).plan, dataclasses.replace(lab_login, jump=jump)
    plan = build_plan(loaded)
    vault = open_vault(args.vault_file, args.vault_password_file) if args.vault_file else None
    chosen = access_mod.env_access(
        intent, args.known_hosts, args.accept_new, vault, ca_file=args.ca_file, tls_known_hosts=args.tls_known_hosts
    )
    chosen = dataclasses.replace(chosen, jump=jump)
    log.info("target: the real switches of fabric %s, as %s", intent.fabric.name, chosen.username)
    if access_mod.lab_access(args_mod.DEFAULT_DIR, intent) is not None:
        note = (
            f"note: a lab of fabric '{intent.fabric.name}' is up; this targets the real switches "
            "(pass --lab to target the lab)"
        )
        chosen = dataclasses.replace(chosen, notes=(*chosen.notes, note))
    return plan, chosen


def lab_intent(state_dir: Path) -> str | None:
    """The intent file the lab in `state_dir` was brought up with, while it is there; None: no lab, one
    brought up with the fabric shipped with gpufabric, or a file since removed (the usual default then)."""
    state = LabState.load(state_dir)
    if state is None or state.intent is None or not Path(state.intent).is_file():
        return None
    return state.intent


def lab_trail(args: FleetArgs) -> Path | None:
    """Where a push to the lab keeps its audit trail: the state folder of the lab asked for, when that
    lab is up (`lab down` removes it with the lab); None for any other push."""
    if args.wants_lab and LabState.load(args.lab_dir) is not None:
        return args.lab_dir / AUDIT_FILE
    return None


def open_fleet(args: FleetArgs, workers: int = WORKERS) -> Fleet:
    """The plan, the targets and a Nornir over them whose runner keeps `workers` hosts in flight."""
    plan, chosen = reach(args)
    intent = plan.intent
    index = LinkIndex(plan, PasswordHasher.for_intent(intent, chosen.secrets))
    unknown = [d for d in args.devices if d not in index.devices]
    if unknown:
        raise UnknownSwitchError(f"no switch named {', '.join(unknown)} in the plan")
    targets = select(plan, args.plane, args.devices, args.role)
    if not targets and args.plane == "compute" and plan.infiniband is not None:
        raise EmptySelectionError(
            "the compute plane is InfiniBand: its switches are configured by the subnet manager, not logged in "
            "to (gpufabric ib configs writes OpenSM's files; nornir validate --plane compute checks the fabric)"
        )
    if not targets:
        raise EmptySelectionError("no switch matches the selection (--plane/--device/--role)")
    inventory = inventory_from_plan(plan)
    wanted = {d.name for d in targets}
    for name in list(inventory.hosts):
        if name not in wanted:
            del inventory.hosts[name]
    access_mod.apply(inventory, chosen, args.timeout)
    access_mod.check_jump(chosen, [h.hostname for h in inventory.hosts.values()], args.timeout)
    # The one connection plugin push and validate use: nornir_napalm's, revealing the password only to the driver.
    ConnectionPluginRegister.available[CONNECTION_NAME] = access_mod.RevealingNapalm
    nr = Nornir(inventory=inventory, runner=ThreadedRunner(num_workers=workers))
    return Fleet(plan, index, targets, chosen, nr, SwitchContexts(plan, index))
