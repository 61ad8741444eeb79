"""What a switch of a converged plane carries for its logical planes: a VRF each, with its tagged
subinterfaces, BGP sessions and announced networks, and the traffic classes of the egress scheduler.

Every carried plane is routed hop by hop in its own VRF (VRF-lite): a tagged subinterface per host port
and per fabric link, eBGP per VRF over it. Nothing needs a stretched layer 2 (each host port is a /31,
as the plane's own traffic is), so no VXLAN or EVPN is rendered; nothing leaks between VRFs, and the
border leaves hold none of them.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field

from gpufabric.config.context_types import Neighbor, Port
from gpufabric.intent.converged import CARRYING_ROLES
from gpufabric.intent.model import QosProfile
from gpufabric.plan.carried import CarriedPlan
from gpufabric.plan.model import Device, HostNic, Plan, PlanePlan, ip
from gpufabric.platforms import platform


@dataclass(frozen=True, slots=True)
class SubPort:
    """A tagged routed subinterface of one carried plane on a physical port."""

    name: str  # as the platform names it ("swp1.20", "Ethernet1/1.20")
    parent: str  # the physical port
    vlan: int
    kind: str  # host | fabric
    peer: str
    address: str | None  # "a.b.c.d/31"; None: unnumbered (a fabric link of an unnumbered plane)
    mtu: int = 9216  # its parent's: a subinterface is given it, never left at a platform's 1500 default

    @property
    def unnumbered(self) -> bool:
        return self.address is None


@dataclass(slots=True)
class VrfContext:
    """One carried plane on one switch."""

    plane: str
    vrf: str
    vlan: int
    ports: list[SubPort] = field(default_factory=list)
    neighbors: list[Neighbor] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)  # the host /31s it announces (leaves)


@dataclass(frozen=True, slots=True)
class TrafficClass:
    """A class of the egress scheduler: DSCP values to a switch priority (= traffic class), and its share."""

    name: str  # cnp | roce | <carried plane> | default
    priority: int
    dscp: tuple[int, ...]
    bandwidth_percent: int | None  # None: strict priority
    lossless: bool = False


@dataclass(slots=True)
class Converged:
    vrfs: list[VrfContext]
    classes: list[TrafficClass]

    def dscp_map(self) -> list[tuple[int, int]]:
        """(dscp, priority) of every class that maps a DSCP, in DSCP order."""
        return sorted((d, c.priority) for c in self.classes for d in c.dscp)


def traffic_classes(carried: list[CarriedPlan], profile: QosProfile | None) -> list[TrafficClass]:
    """The scheduler's classes: CNP strict, the RoCE class (the lossless carried plane's share, else the
    profile's), each lossy carried plane's, and the default class with what is left."""
    out: list[TrafficClass] = []
    lossless = next((c for c in carried if c.lossless), None)
    if profile is not None:
        out.append(TrafficClass("cnp", profile.cnp_priority, (profile.cnp_dscp,), None))
        share = lossless.bandwidth_percent if lossless is not None else profile.roce_bandwidth_percent
        name = lossless.name if lossless is not None else "roce"
        out.append(TrafficClass(name, profile.roce_priority, (profile.roce_dscp,), share, profile.lossless))
    for c in carried:
        if not c.lossless and c.priority is not None:
            out.append(TrafficClass(c.name, c.priority, c.dscp, c.bandwidth_percent))
    used = sum(t.bandwidth_percent or 0 for t in out)
    out.append(TrafficClass("default", 0, (), 100 - used))
    return out


# The last plan's NICs by (server, interface) and servers' groups: every leaf of a plan looks its hosts up in
# them, built once per plan (the one plan a render or a verify holds).
_LAST: list[tuple[Plan, dict[tuple[str, str], HostNic], dict[str, str]]] = []


def _servers(plan: Plan) -> tuple[dict[tuple[str, str], HostNic], dict[str, str]]:
    if not _LAST or _LAST[0][0] is not plan:
        nics = {(s.name, n.interface): n for s in plan.servers for n in s.nics}
        _LAST[:] = [(plan, nics, {s.name: s.group for s in plan.servers})]
    return _LAST[0][1], _LAST[0][2]


def converged(
    plan: Plan, device: Device, ports: list[Port], roles: dict[str, Device], profile: QosProfile | None
) -> Converged | None:
    """The carried planes of a switch of a converged plane; None elsewhere (and on its border leaves)."""
    plane: PlanePlan = plan.planes[device.plane]
    if not plane.carried or device.role not in CARRYING_ROLES:
        return None
    servers = _servers(plan)
    spec = platform(device.platform)
    vrfs = []
    for c in plane.carried:
        vrf = VrfContext(c.name, spec.vrf_name(c.vrf), c.vlan)
        for p in ports:
            if p.kind == "host":
                _host(vrf, c, p, servers)
            elif p.kind == "fabric" and (peer := roles.get(p.peer)) is not None and peer.role in CARRYING_ROLES:
                _fabric(vrf, c, p, peer)
        vrfs.append(vrf)
    return Converged(vrfs, traffic_classes(plane.carried, profile))


def _host(
    vrf: VrfContext, c: CarriedPlan, p: Port, servers: tuple[dict[tuple[str, str], HostNic], dict[str, str]]
) -> None:
    nics, groups = servers
    if groups.get(p.peer) not in c.groups:
        return
    nic = nics[(p.peer, p.peer_port)]
    tagged = next(t for t in nic.carried if t.plane == c.name)
    address = f"{ip(tagged.gateway)}/{tagged.prefixlen}"
    vrf.ports.append(SubPort(c.subinterface(p.name), p.name, c.vlan, "host", p.peer, address, p.mtu))
    vrf.networks.append(f"{ip(tagged.address & ~1)}/{tagged.prefixlen}")


def _fabric(vrf: VrfContext, c: CarriedPlan, p: Port, peer: Device) -> None:
    assert peer.asn is not None
    name = c.subinterface(p.name)
    if p.unnumbered or p.address is None or c.p2p_offset is None:
        vrf.ports.append(SubPort(name, p.name, c.vlan, "fabric", p.peer, None, p.mtu))
        vrf.neighbors.append(Neighbor(p.peer, peer.asn, "fabric", interface=name))
        return
    mine = c.p2p_address(_int(p.address.split("/")[0]))
    vrf.ports.append(SubPort(name, p.name, c.vlan, "fabric", p.peer, f"{ip(mine)}/31", p.mtu))
    vrf.neighbors.append(Neighbor(p.peer, peer.asn, "fabric", address=ip(mine ^ 1)))


def _int(address: str) -> int:
    return int.from_bytes(socket.inet_aton(address), "big")
