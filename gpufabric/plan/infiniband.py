"""The InfiniBand compute plane of an intent, planned by the InfiniBand planner (gpufabric.ib).

The intent's server groups give the hosts (in intent order) and their adapters (one per rail, by
RDMA device name); the plane gives the switch model, the scalable unit and the subnet manager's
settings. Scalable units are counted for the build-out, so growing a group up to its `build_out`
only fills free node slots. Problems the planner finds are located at the plane's fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from math import ceil

from gpufabric.ib.design import IbDesign
from gpufabric.ib.errors import IbError
from gpufabric.ib.hardware import MGMT_PORT
from gpufabric.ib.model import IbCable, IbFabric
from gpufabric.ib.opensm import Partition, SmSettings, check
from gpufabric.ib.planner import plan_fabric
from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.infiniband_rules import PLANE, attached_groups, hca_rate
from gpufabric.intent.model import InfinibandPlane, Intent
from gpufabric.intent.rules import server_names
from gpufabric.plan.management import ManagementPort


@dataclass(frozen=True)
class IpoibAddress:
    """A host's IPoIB interface: the child of its adapter's IPoIB netdev in its first partition with IPoIB
    (as a full member: the PKey with its top bit set, the name Linux gives the child, e.g. ib0.8101)."""

    device: str  # the adapter (RDMA device)
    pkey: int  # with the full-membership bit
    address: int
    prefixlen: int
    mtu: int
    mode: str
    netdev: str = "ib0"  # the adapter's IPoIB interface on the host (the child is <netdev>.<pkey>)


@dataclass(frozen=True)
class IbPlan:
    """The planned InfiniBand compute fabric, the subnet manager's settings, and the hosts' IPoIB."""

    plane: str
    fabric: IbFabric
    settings: SmSettings
    ipoib: dict[str, IpoibAddress]  # host -> its IPoIB interface (none unless the intent asks)
    # switch -> its management port on the OOB plane (none without an OOB plane), in switch order
    management: dict[str, ManagementPort] = field(default_factory=dict)
    lengths: dict[str, int] | None = None  # cable tier (node-leaf, leaf-spine, spine-core) -> metres, when given

    def length(self, cable: IbCable) -> int | None:
        """A cable's length in metres by its tier (None: the intent gives no lengths)."""
        return self.lengths[cable.tier] if self.lengths is not None else None

    def partitions_of(self, host: str) -> list[Partition]:
        return [p for p in self.settings.partitions if host in p.hosts]


IB_MTU = 4096  # every port and partition (partitions.conf's mtu=5); the only MTU the intent accepts

# IPoIB's MTU: the InfiniBand MTU less its 4-byte header in datagram mode; connected mode carries
# up to 64 KiB less the headers (the Linux ipoib driver's limit).
IPOIB_MTU = {"datagram": 4096 - 4, "connected": 65520}


def plan_infiniband(intent: Intent, build_out: Intent) -> IbPlan:
    """Raises IbError, whose problems `located()` places in the intent."""
    plane = intent.infiniband
    assert plane is not None
    groups = [g for _, g in attached_groups(intent)]
    hosts = tuple(name for g in groups for name in server_names(g))
    later = sum(g.build_out or g.count for _, g in attached_groups(build_out))
    nics = groups[0].nics["compute"]
    rate = hca_rate(plane.switch_model, nics.speed)
    assert rate is not None  # the intent's rules refused any other speed
    fm_slot = 1 if plane.fabric_manager_ports else 0
    design = IbDesign(
        name=intent.fabric.name,
        su_count=max(1, ceil((max(later, len(hosts)) + fm_slot) / plane.unit_nodes)),
        nodes_per_su=plane.unit_nodes,
        rails=len(nics.interfaces),
        switch_model=plane.switch_model,
        hca_rate=rate,
        fabric_manager_ports=plane.fabric_manager_ports,
        fabric_manager_ports_per_host=plane.fabric_manager_ports_per_host,
        hca_names=tuple(nics.interfaces),
        tiers=plane.tiers,
        hosts=hosts,
    )
    fabric = plan_fabric(design)
    settings = _settings(plane, intent)
    check(fabric, settings)
    lengths = None
    if plane.lengths is not None:
        given = plane.lengths
        lengths = {
            "node-leaf": given.node_leaf,
            "leaf-spine": given.leaf_spine,
            "spine-core": given.spine_core or given.leaf_spine,
        }
    return IbPlan("compute", fabric, settings, _ipoib(plane, settings, hosts, design), lengths=lengths)


def management_ports(ib: IbPlan) -> list[ManagementPort]:
    """Each switch's out-of-band management port, not yet cabled or addressed (the OOB plane does both)."""
    return [ManagementPort(n.name, MGMT_PORT) for n in ib.fabric.switches]


def _settings(plane: InfinibandPlane, intent: Intent) -> SmSettings:
    by_group = {g.name: list(server_names(g)) for g in intent.server_groups}
    partitions = tuple(
        Partition(p.name, p.pkey, tuple(h for g in p.groups for h in by_group.get(g, ())), p.sl, p.ipoib)
        for p in plane.partitions
    )
    sl2vl = tuple(plane.sl2vl) if plane.sl2vl is not None else SmSettings().sl2vl
    engine, vls = plane.routing_engine, plane.max_vls
    return SmSettings(routing_engine=engine, partitions=partitions, sl2vl=sl2vl, max_vls=vls, sharp=plane.sharp)


def _ipoib(
    plane: InfinibandPlane, settings: SmSettings, hosts: tuple[str, ...], design: IbDesign
) -> dict[str, IpoibAddress]:
    if plane.ipoib is None:
        return {}
    net = plane.ipoib.subnet
    first = int(net.network_address) + (1 if net.prefixlen < 31 else 0)
    device = design.hca_name(plane.ipoib.rail)
    pkey = {h: p.pkey for p in reversed(settings.partitions) if p.ipoib for h in p.hosts}
    mtu, mode = IPOIB_MTU[plane.ipoib.mode], plane.ipoib.mode
    # The intent's rules put every host in a partition with IPoIB.
    return {
        host: IpoibAddress(device, pkey[host] | 0x8000, first + i, net.prefixlen, mtu, mode, plane.ipoib.netdev)
        for i, host in enumerate(hosts)
    }


def located(exc: IbError, intent: Intent) -> list[Problem]:
    """The planner's problems ("design.switch_model", "partitions[1] (x)") at the intent's fields."""
    return [Problem(_path(p.where, intent), p.message, p.fix) for p in exc.problems]


_FIELDS: dict[str, Path] = {
    "design.switch_model": (*PLANE, "switch_model"),
    "design.tiers": (*PLANE, "tiers"),
    "design.su_count": (*PLANE, "unit_nodes"),
    "design.fabric_manager_ports": (*PLANE, "fabric_manager_ports"),
    "sl2vl": (*PLANE, "sl2vl"),
}


def _path(where: str, intent: Intent) -> Path:
    if m := re.match(r"partitions\[(\d+)\]", where):
        return (*PLANE, "partitions", int(m[1]))
    if where in ("design.hca_rate", "design.hca_names", "design"):
        gi = next(gi for gi, _ in attached_groups(intent))
        return ("server_groups", gi, "nics", "compute")
    return _FIELDS.get(where, PLANE)
