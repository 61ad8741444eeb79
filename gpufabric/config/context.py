"""What a switch template needs to know about one device, computed from the plan.

Templates never compute: every value they print is here, named for what it is,
so a template, a check and the cabling plan read the same fact.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from functools import cache
from socket import inet_ntoa

from gpufabric.config.context_types import Neighbor, Port
from gpufabric.config.converged import Converged, converged
from gpufabric.config.headroom import LosslessBuffer, lossless_buffer
from gpufabric.config.mlag import Mlag, mlag, peer_session
from gpufabric.config.policy import Acl, BorderRouting, border_routing, business_acl
from gpufabric.config.secrets import PasswordHasher
from gpufabric.config.services import Mgmt, management
from gpufabric.gc_pause import gc_paused
from gpufabric.intent.model import Bfd, DataPlane, QosProfile, Routing
from gpufabric.plan.model import Device, Link, Plan, ip


@dataclass
class DeviceContext:
    device: Device
    ports: list[Port]
    neighbors: list[Neighbor]
    networks: list[str]
    ecmp: int
    qos: QosProfile | None  # only on planes that carry RoCE
    mgmt: Mgmt
    mlag: Mlag | None
    acl: Acl | None
    border: BorderRouting | None
    release: str  # the platform's OS release the configuration follows (the intent pins it)
    # The plane's choice: "ecmp" (a per-flow hash) or "adaptive" (the ASIC steers by link load). The rules
    # refuse "adaptive" where the platform has none, so a template only prints it.
    load_balancing: str = "ecmp"
    cable_length: str = "5m"  # the plane's cable length class ("5m", "30m", "100m"): PFC headroom is sized for it
    # BFD on the switch's fabric sessions (kind "fabric"), when the plane turns it on; None: no BFD is rendered.
    bfd: Bfd | None = None
    # (keepalive, hold) in seconds when the plane sets them; None: the platform's defaults, nothing rendered.
    bgp_timers: tuple[int, int] | None = None
    # Seconds the switch advertises max-MED after its BGP starts, when the plane asks; None: nothing is rendered.
    max_med_on_startup: int | None = None
    # The logical planes a converged plane's switch carries (VRFs, tagged subinterfaces, classes); None elsewhere.
    converged: Converged | None = None

    @property
    def cable_metres(self) -> int:
        return int(self.cable_length.rstrip("m"))

    @property
    def lossless_buffer(self) -> LosslessBuffer | None:
        """PFC headroom and thresholds for the lossless priority, sized for the switch's fastest RoCE port
        (NX-OS applies one ingress queuing policy to every port), or None without PFC."""
        speeds = [p.speed for p in self.ports if p.kind in ("fabric", "host", "peer")]
        if self.qos is None or not self.qos.lossless or not speeds:
            return None
        return lossless_buffer(max(speeds), self.cable_metres, self.device.mtu)

    @property
    def adaptive(self) -> bool:
        """Adaptive routing on this switch: its plane asks for it and it routes over fabric links (an OOB
        switch or a fabric-less one has no equal-cost uplinks to choose among)."""
        return (
            self.load_balancing == "adaptive"
            and self.device.asn is not None
            and any(p.kind == "fabric" for p in self.ports)
        )


_DIGITS = re.compile(r"(\d+)")


class LinkIndex:
    """Links by device, built once per plan: a 32k-GPU plan has ~100k links and ~1,300 switches."""

    def __init__(self, plan: Plan, hasher: PasswordHasher | None = None) -> None:
        self.hasher = hasher or PasswordHasher.for_intent(plan.intent)
        self.by_device: dict[str, list[tuple[Link, bool]]] = {}
        # Two entries a link, all kept: with the cycle collector running, the full collections they
        # trigger each walk the whole plan (the 131k-GPU plan's index took 2.1 s so, 0.24 s without).
        with gc_paused():
            for link in plan.links():
                self.by_device.setdefault(link.a, []).append((link, True))
                self.by_device.setdefault(link.b, []).append((link, False))
            self.devices = {d.name: d for d in plan.devices()}


def build(plan: Plan, device: Device, index: LinkIndex) -> DeviceContext:
    plane = plan.planes[device.plane]
    ports, neighbors = _ports_and_sessions(plan, device, index, plane.routing.get("addressing") == "unnumbered")
    profile = plan.intent.qos_profiles.get(plane.qos) if plane.qos and plane.carries_roce else None
    peer_link = next((p for p in ports if p.kind == "peer"), None)
    mlag_peer = index.devices.get(peer_link.peer) if peer_link else None
    pair = mlag(device, ports, mlag_peer)
    session = peer_session(device, pair) if pair else None
    if session is not None:
        neighbors.append(session)
    routing = _plane_routing(plan, device)
    return DeviceContext(
        device,
        ports,
        neighbors,
        _networks(device, ports),
        ecmp=int(plane.routing.get("ecmp", 64)),  # type: ignore[call-overload]
        qos=profile,
        mgmt=management(plan, device, index.hasher),
        mlag=pair,
        acl=business_acl(plan, device, ports),
        border=border_routing(plan, device, neighbors),
        release=plan.intent.release(device.platform),
        load_balancing=plane.load_balancing,
        cable_length=plane.cable_length,
        bfd=routing.bfd if routing is not None and routing.bfd.enabled else None,
        bgp_timers=(routing.keepalive, routing.hold) if routing and routing.keepalive and routing.hold else None,
        converged=converged(plan, device, ports, index.devices, profile),
        max_med_on_startup=routing.max_med_on_startup if routing is not None and device.asn is not None else None,
    )


def _plane_routing(plan: Plan, device: Device) -> Routing | None:
    """The plane's routing as the intent says it (BFD, BGP timers): the plan keeps only what sizing needs.
    None on the OOB plane, which does not route."""
    plane = getattr(plan.intent.planes, device.plane, None)
    return plane.routing if isinstance(plane, DataPlane) else None


def breakouts(ctx: DeviceContext) -> list[tuple[int, int, int]]:
    """(cage, ways, speed in Gb/s) of every split cage, in cage order: the vendors configure a
    breakout once per cage, before its lanes exist as ports."""
    seen: dict[int, tuple[int, int, int]] = {}
    for p in ctx.ports:
        if p.split > 1 and p.cage not in seen:
            seen[p.cage] = (p.cage, p.split, p.speed)
    return [seen[c] for c in sorted(seen)]


def _networks(device: Device, ports: list[Port]) -> list[str]:
    """What the switch announces: its loopback, and its hosts' subnets.

    Routed host ports announce each host /31 (a connected route, so every platform's `network`
    statement finds it in the RIB; the leaf's whole block has no route of its own and would never be
    announced). A leaf with an SVI over LACP hosts announces the block, which is then connected.
    """
    networks = []
    if device.loopback is not None:
        networks.append(f"{ip(device.loopback)}/32")
    host_links = [p.address for p in ports if p.kind == "host" and p.address and p.bond is None]
    if host_links:
        networks += [_network(a) for a in host_links]
    elif device.host_subnet is not None and device.host_prefixlen is not None:
        networks.append(f"{ip(device.host_subnet)}/{device.host_prefixlen}")
    return networks


def _network(cidr: str) -> str:
    """`10.0.0.5/31` -> `10.0.0.4/31`, with integers: ipaddress objects cost ~20x more and a 32k
    fabric has 32,768 host ports."""
    address, length = cidr.split("/")
    bits = int(length)
    if bits >= 24:  # a host link (/31): only the last octet changes, the rest of the text stands
        head, _, last = address.rpartition(".")
        return f"{head}.{int(last) & (0xFF << (32 - bits)) & 0xFF}/{bits}"
    mask = (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF
    return f"{ip(int.from_bytes(socket.inet_aton(address), 'big') & mask)}/{bits}"


def _ports_and_sessions(
    plan: Plan, device: Device, index: LinkIndex, unnumbered: bool
) -> tuple[list[Port], list[Neighbor]]:
    ports: list[Port] = []
    neighbors: list[Neighbor] = []
    devices, name = index.devices, device.name
    # Once per port of every switch (130 on a 32k fabric's leaf): each side's fields read directly, not
    # through tuples picked by side, and the address written here rather than through ip()'s call.
    for link, is_a in index.by_device.get(name, ()):
        kind = link.kind
        if is_a:
            if kind == "mgmt":
                continue  # this device's own management port: configured from mgmt_ip, not as a data port
            me, my_port, my_ip, cage, split = link.a, link.a_port, link.a_ip, link.a_cage, link.a_split
            peer, peer_port, peer_ip = link.b, link.b_port, link.b_ip
        else:
            me, my_port, my_ip, cage, split = link.b, link.b_port, link.b_ip, link.b_cage, link.b_split
            peer, peer_port, peer_ip = link.a, link.a_port, link.a_ip
        assert me == name
        prefixlen = link.prefixlen
        address = None if my_ip is None or prefixlen is None else f"{inet_ntoa(my_ip.to_bytes(4, 'big'))}/{prefixlen}"
        port_unnumbered = unnumbered and kind == "fabric"
        ports.append(
            Port(my_port, kind, peer, peer_port, link.speed, link.mtu, address, port_unnumbered, None, cage, split)
        )
        if kind == "fabric":
            peer_dev = devices.get(peer)
            if peer_dev is not None and peer_dev.asn is not None:
                if port_unnumbered:
                    neighbors.append(Neighbor(peer, peer_dev.asn, "fabric", my_port))
                else:
                    neighbors.append(Neighbor(peer, peer_dev.asn, "fabric", address=ip(peer_ip)))
        elif kind == "edge":
            neighbors.append(Neighbor(peer, _edge_asn(plan, peer), "edge", address=ip(peer_ip)))
    ports.sort(key=_port_order)
    return ports, neighbors


def _edge_asn(plan: Plan, name: str) -> int:
    border = plan.intent.planes.business.border if plan.intent.planes.business else None
    assert border is not None
    return next(e.asn for e in border.edge_routers if e.name == name)


def _port_order(port: Port) -> tuple[object, ...]:
    return _port_key(port.name)


@cache
def _port_key(name: str) -> tuple[object, ...]:
    """swp2 before swp10: ports in front-panel order, as a config reads (names repeat on every switch)."""
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(name))
