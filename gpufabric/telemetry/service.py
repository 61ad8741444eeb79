"""The telemetry exporter's collector as a library call: which switches and servers it reads, reached
as gpufabric.fleet decides (the lab only when asked for), in this exporter's shard."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpufabric.fleet.access import Access, check_jump
from gpufabric.fleet.args import FleetArgs
from gpufabric.fleet.connect import TIMEOUT, host_shell, switch_connector
from gpufabric.fleet.target import reach
from gpufabric.ib.results import Runner
from gpufabric.plan.model import Plan
from gpufabric.telemetry.bmc import bmc_targets, endpoints
from gpufabric.telemetry.exporter import FabricCollector
from gpufabric.telemetry.ib import IbPorts, local_runner
from gpufabric.telemetry.redfish import Endpoint
from gpufabric.telemetry.targets import nic_targets, switch_targets


def collector(
    args: FleetArgs,
    workers: int,
    shard: Any = None,
    *,
    budget: float,
    deadline: float,
    reached: Callable[[Access], None] = lambda access: None,
    bmc_plain_http: bool = False,
) -> FabricCollector:
    """The collector of the selected switches (and the plane's servers), `shard`'s share of them when
    given; `reached` hears of the login chosen (its notes are for the person running the exporter)."""
    plan, access = reach(args)
    reached(access)
    switches = [t for t in switch_targets(plan, args.plane) if t.address is not None]
    if args.devices:
        switches = [t for t in switches if t.device in args.devices]
    nics = nic_targets(plan, args.plane)
    if shard is not None:  # this exporter's share: the same split `telemetry prometheus` writes down
        switches = [t for t in switches if shard.owns(t.device)]
        nics = {name: n for name, n in nics.items() if shard.owns(name)}
    # Jump hosts with an unknown or changed key refuse the exporter at start, not each scrape.
    check_jump(access, [t.address for t in switches], TIMEOUT)
    shell = host_shell(plan, access, args.lab_dir if access.lab else None, args.known_hosts)
    # A switch's session gives up no later than its deadline: the thread of a read past it is freed soon after.
    connect = switch_connector(access, timeout=min(TIMEOUT, max(1, math.ceil(deadline))))
    infiniband = None
    if plan.infiniband is not None and (args.plane in (None, "compute")) and not args.devices:
        fabric = plan.infiniband.fabric
        if shard is None or shard.owns(fabric.design.name):  # one exporter of the shards reads the subnet
            infiniband = IbPorts(fabric, _ib_runner(args.lab_dir if access.lab else None)).read
    # The servers' BMCs sit on the OOB plane: read by an exporter of every plane or of that one (not by one per data
    # plane, which would read each BMC once per plane), never in the lab (it has no BMCs) or for chosen switches.
    wanted = args.plane in (None, "oob") and not args.devices and not access.lab
    bmcs = _bmcs(plan, args, shard, plain_http=bmc_plain_http) if wanted else []
    return FabricCollector(
        switches, connect, nics, shell, workers, budget=budget, deadline=deadline, infiniband=infiniband, bmcs=bmcs
    )


def _bmcs(plan: Plan, args: FleetArgs, shard: Any, *, plain_http: bool) -> list[tuple[Any, Endpoint]]:
    """The servers' BMCs to read (none when no group has `bmc`; the lab has no BMCs), with the login from the
    environment or the vault the switches' secrets come from."""
    if not any(g.bmc is not None for g in plan.intent.server_groups):
        return []
    from gpufabric.config.vault import open_vault  # only when BMCs are read

    targets = [t for t in bmc_targets(plan) if shard is None or shard.owns(t.node)]
    vault = open_vault(args.vault_file, args.vault_password_file) if args.vault_file else {}
    secrets = {**os.environ, **vault}
    return list(zip(targets, endpoints(plan, targets, secrets, plain_http=plain_http), strict=True))


def _ib_runner(lab_dir: Path | None) -> Callable[[], Runner]:
    """How infiniband-diags are run: against the lab's ibsim (its compute plane's state folder), or here."""
    if lab_dir is None:
        return lambda: local_runner

    def lab() -> Runner:
        from gpufabric.ib import lab as ib_lab
        from gpufabric.lab.control import infiniband_dir

        return ib_lab.runner(infiniband_dir(lab_dir))

    return lab
