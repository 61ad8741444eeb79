"""The telemetry exporter's collector as a library call: which switches and servers it reads, reached
as gpufabric.fleet decides (the lab only when asked for), in this exporter's shard."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from gpufabric.fleet.access import Access
from gpufabric.fleet.args import FleetArgs
from gpufabric.fleet.connect import TIMEOUT, host_shell, switch_connector
from gpufabric.fleet.target import reach
from gpufabric.telemetry.exporter import FabricCollector
from gpufabric.telemetry.targets import nic_targets, switch_targets


def collector(
    args: FleetArgs,
    workers: int,
    shard: Any = None,
    *,
    budget: float,
    deadline: float,
    reached: Callable[[Access], None] = lambda access: None,
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
    shell = host_shell(plan, access, args.lab_dir if access.lab else None, args.known_hosts)
    # A switch's session gives up no later than its deadline: the thread of a read past it is freed soon after.
    connect = switch_connector(access, timeout=min(TIMEOUT, max(1, math.ceil(deadline))))
    return FabricCollector(switches, connect, nics, shell, workers, budget=budget, deadline=deadline)
