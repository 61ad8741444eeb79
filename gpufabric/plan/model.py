"""The plan: every device, link, address and ASN, computed once from the intent.

Addresses are kept as integers (formatted only when exported) because a 32k-GPU
plan holds about a hundred thousand of them and ipaddress objects cost ~10x more.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpufabric.intent.model import Intent

if TYPE_CHECKING:
    from gpufabric.plan.carried import CarriedNic, CarriedPlan
    from gpufabric.plan.infiniband import IbPlan


def ip(value: int | None) -> str | None:
    return None if value is None else socket.inet_ntoa(value.to_bytes(4, "big"))


@dataclass(slots=True)
class Device:
    """A switch."""

    name: str
    plane: str
    role: str  # leaf | spine | superspine | border | mgmt
    platform: str
    model: str
    mtu: int
    mgmt_port: str
    asn: int | None = None
    loopback: int | None = None
    mgmt_ip: int | None = None
    unit: int | None = None  # scalable unit (rail-optimized) or rack (clos), 1-based
    rail: int | None = None  # rail-optimized leaves only, 1-based
    pod: int | None = None  # 3-tier planes only, 1-based
    side: int | None = None  # position of a leaf in its unit, 1-based
    host_subnet: int | None = None  # leaves: the block their host ports are addressed from
    host_prefixlen: int | None = None
    svi_ip: int | None = None  # leaves with LACP hosts: this leaf's address in the unit's subnet
    # MLAG/vPC leaves on a /31 plane: this leaf's end of the /31 its pair peers over (BGP on a VLAN
    # of the peer link), taken from the top of the plane's p2p pool by pair number
    peer_l3_ip: int | None = None
    failure_domain: str = ""


@dataclass(slots=True)
class Link:
    """A cable. End a is the lower tier (leaf below spine, host below leaf)."""

    plane: str
    kind: str  # host | fabric | edge | mgmt
    a: str
    a_port: str
    b: str
    b_port: str
    speed: int  # Gb/s of the logical link
    mtu: int
    a_ip: int | None = None
    b_ip: int | None = None
    prefixlen: int | None = None
    # Physical cage and how many ways it is split, so the BOM counts one
    # transceiver per cage, not per logical port.
    a_cage: int = 0
    a_split: int = 1
    b_cage: int = 0
    b_split: int = 1
    number: int = 0  # 1-based place in its plane at the build-out: the cable's label, stable as the fabric grows
    length: int | None = None  # metres, from the site's positions or as measured (None: by position class)


@dataclass(frozen=True, slots=True)
class LacpBond:
    """How a server bonds its two NICs toward an MLAG/vPC leaf pair (planes with `host_links: lacp`).

    The switches run LACP active on the pair's port-channel; the host matches with 802.3ad. The hash
    takes the layer-4 ports, so one storage client's many connections to one target spread over both
    leaves (a layer-2 or layer-3 hash would keep every flow between two addresses on one link). A fast
    LACP rate asks the leaves for a PDU every second: a dead member leaves the bond after 3 s, not 90 s.
    """

    mode: str = "802.3ad"
    transmit_hash_policy: str = "layer3+4"
    lacp_rate: str = "fast"
    miimon: int = 100  # ms between carrier checks of each member


LACP_BOND = LacpBond()


@dataclass(slots=True)
class HostNic:
    """A server's NIC on a data plane, and the leaf port at its other end."""

    plane: str
    interface: str
    rail: int
    speed: int
    mtu: int
    leaf: str
    leaf_port: str
    address: int
    prefixlen: int
    gateway: int
    bond: str | None = None
    carried: tuple[CarriedNic, ...] = ()  # its tagged subinterfaces in the plane's carried planes
    native: bool = True  # False: no untagged address (a host on a converged plane's carried planes only)


@dataclass(slots=True)
class Server:
    name: str
    group: str
    kind: str
    index: int
    gpus: int
    gpu_model: str
    units: dict[str, int] = field(default_factory=dict)  # plane -> unit
    nics: list[HostNic] = field(default_factory=list)
    mgmt_interface: str | None = None
    mgmt_ip: int | None = None
    mgmt_switch: str | None = None
    mgmt_port: str | None = None


@dataclass(frozen=True, slots=True)
class Place:
    """Where a switch or a server stands (the intent's `site` and `hosts`)."""

    rack: str | None
    position: int | None
    serial: str | None


@dataclass(slots=True)
class TierStats:
    """Bandwidth at one tier, per switch, for a full unit/pod."""

    tier: str  # leaf | spine
    down_gbps: int
    up_gbps: int
    target: float

    @property
    def ratio(self) -> float:
        return self.down_gbps / self.up_gbps if self.up_gbps else float("inf")


@dataclass(slots=True)
class FailureDomain:
    """Devices that may be changed at the same time without cutting any server off."""

    name: str
    plane: str
    devices: list[str]


@dataclass(slots=True)
class PlanePlan:
    name: str
    topology: str
    tiers: int
    prefix: str
    mtu: int
    host_mtu: int
    devices: list[Device] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    tier_stats: list[TierStats] = field(default_factory=list)
    failure_domains: list[FailureDomain] = field(default_factory=list)
    sizing: dict[str, int] = field(default_factory=dict)
    qos: str | None = None
    carries_roce: bool = False
    load_balancing: str = "ecmp"  # ecmp | adaptive, as the intent chooses for the plane
    cable_length: str = "5m"  # the length class lossless headroom is sized for
    lengths: dict[str, int | None] | None = (
        None  # metres by position (host, leaf_spine, ...), when the intent gives them
    )
    routing: dict[str, object] = field(default_factory=dict)
    # A compute plane built as several planes (`multiplane`): switch name -> its plane, 1-based
    # (gpufabric/plan/multiplane.py). Empty on a single plane.
    plane_of: dict[str, int] = field(default_factory=dict)
    carried: list[CarriedPlan] = field(default_factory=list)  # logical planes on these switches (`carries`)

    def count_by_role(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for d in self.devices:
            counts[d.role] = counts.get(d.role, 0) + 1
        return counts


@dataclass
class Plan:
    intent: Intent
    source: str
    planes: dict[str, PlanePlan]
    servers: list[Server]
    warnings: list[str]
    infiniband: IbPlan | None = None  # the compute plane, when it is InfiniBand (not in `planes`)
    places: dict[str, Place] = field(default_factory=dict)  # switch or server name -> where it stands

    def devices(self) -> list[Device]:
        return [d for p in self.planes.values() for d in p.devices]

    def links(self) -> list[Link]:
        return [link for p in self.planes.values() for link in p.links]

    def device(self, name: str) -> Device:
        for d in self.devices():
            if d.name == name:
                return d
        raise KeyError(name)


def cable_label(prefix: str, number: int) -> str:
    """The label of a plane's `number`-th cable (1-based, plan order): what a technician finds on it."""
    return f"{prefix}-{number:06d}"


def link_length(plane: PlanePlan, link: Link, roles: dict[str, str]) -> int | None:
    """A link's length in metres: measured or from the site's positions where the plan has it, else from
    the plane's lengths by position class (None: the intent gives none)."""
    if link.length is not None:
        return link.length
    lengths = plane.lengths
    if lengths is None:
        return None
    if link.kind in ("host", "peer"):  # an MLAG pair's peer link runs where its hosts' cables do
        return lengths["host"]
    if link.kind == "edge":
        return lengths.get("edge") or lengths["leaf_spine"]
    if "superspine" in (roles.get(link.a), roles.get(link.b)):
        return lengths.get("spine_superspine") or lengths["leaf_spine"]
    return lengths["leaf_spine"]
