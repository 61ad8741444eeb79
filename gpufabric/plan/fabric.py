"""Expand one data plane's sizing into switches, links, addresses and ASNs.

ASNs follow RFC 7938: the spines of a tier (of a pod, with 3 tiers) share one
ASN, superspines share one, every leaf and border has its own.
"""

from __future__ import annotations

from string import ascii_lowercase

from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import DataPlane, SwitchRole
from gpufabric.intent.rules import downlink_speed, uplink_speed
from gpufabric.plan.model import Device, FailureDomain, HostNic, Link, PlanePlan, Server, TierStats
from gpufabric.plan.pools import block_for, need_addresses, need_asns, prefix_of
from gpufabric.plan.ports import PortMap
from gpufabric.plan.sizing import Sizing, split
from gpufabric.platforms import platform

End = tuple[Device, str, int, int]  # device, port name, physical cage, ways the cage is split


def _device(
    name: str,
    plane: str,
    role_name: str,
    role: SwitchRole,
    mtu: int,
    *,
    unit: int | None = None,
    rail: int | None = None,
    pod: int | None = None,
    side: int | None = None,
) -> Device:
    return Device(
        name=name,
        plane=plane,
        role=role_name,
        platform=role.platform,
        model=role.model,
        mtu=min(mtu, platform(role.platform).facts.max_mtu),
        mgmt_port=platform(role.platform).facts.mgmt_port,
        unit=unit,
        rail=rail,
        pod=pod,
        side=side,
    )


def portmap(role: SwitchRole, reserved_down: int) -> PortMap:
    return PortMap(role.platform, split(role, downlink_speed(role)), split(role, uplink_speed(role)), reserved_down)


class PlaneBuilder:
    """Builds one data plane; `problems` collects pool shortfalls so all are reported together."""

    def __init__(self, name: str, plane: DataPlane, sizing: Sizing, servers: dict[str, Server]) -> None:
        self.name, self.plane, self.s, self.servers = name, plane, sizing, servers
        self.at: Path = ("planes", name)
        self.out = PlanePlan(
            name=name,
            topology=plane.topology,
            tiers=plane.tiers,
            prefix=plane.prefix,
            mtu=plane.mtu,
            host_mtu=plane.host_mtu,
            qos=plane.qos,
            carries_roce=plane.carries_roce,
            load_balancing=plane.load_balancing,
            cable_length=plane.cable_length,
            lengths=plane.lengths.model_dump() if plane.lengths is not None else None,
            routing={
                "protocol": plane.routing.protocol,
                "addressing": plane.routing.addressing,
                "asn_pool": str(plane.routing.asn_pool),
                "ecmp": plane.routing.ecmp,
            },
        )
        self.problems: list[Problem] = []
        self.leaves: list[Device] = []
        self.unit_of_leaf: list[int] = []
        self.borders: list[Device] = []
        self.spines: list[Device] = []  # pod-major with 3 tiers
        self.superspines: list[Device] = []
        self.pod_first_leaf: dict[int, int] = {}  # 0-based pod -> index of its first leaf
        self._p2p_next = self._p2p()

    # -- checks -----------------------------------------------------------------------------------

    def check_pools(self) -> list[Problem]:
        s, p, at = self.s, self.plane, self.at
        switches = s.leaves + s.borders + s.spines * s.pods + s.superspines_per_group * s.spines * (p.tiers == 3)
        asns = s.leaves + s.borders + (s.pods + 1 if p.tiers == 3 else 1)
        fabric_links = (s.leaves + s.borders) * s.leaf_uplinks + (s.spines * s.pods * s.spine_uplinks)
        problems = need_asns(p.routing.asn_pool.first, p.routing.asn_pool.last, asns, (*at, "routing", "asn_pool"))
        problems += need_addresses(
            p.addressing.loopbacks, switches + 1, (*at, "addressing", "loopbacks"), f"{switches} switch loopbacks"
        )
        if p.routing.addressing == "p2p31":
            pairs = sum(width // 2 for width in s.unit_leaves) if p.host_links == "lacp" else 0
            problems += need_addresses(
                p.addressing.p2p,
                2 * (fabric_links + pairs),
                (*at, "addressing", "p2p"),
                f"{fabric_links} fabric links" + (f" and {pairs} MLAG/vPC pairs" if pairs else "") + " (a /31 each)",
            )
        problems += need_addresses(
            p.addressing.hosts,
            self._host_block() * self._host_blocks(),
            (*at, "addressing", "hosts"),
            "the host ports of every leaf, for full units,",
        )
        if p.border is not None:
            problems += need_addresses(
                p.border.edge_p2p,
                2 * s.borders * s.edge_routers,
                (*at, "border", "edge_p2p"),
                f"{s.borders * s.edge_routers} border-edge links",
            )
        return problems

    def _host_block(self) -> int:
        """Addresses reserved per leaf (routed: a /31 per port) or per unit (lacp: one subnet)."""
        if self.plane.host_links == "lacp":
            return block_for(self.s.unit_nodes + 5)  # network, gateway, two leaves, hosts, broadcast
        return block_for(2 * self.s.unit_nodes)

    def _host_blocks(self) -> int:
        return self.s.units if self.plane.host_links == "lacp" else self.s.leaves

    # -- build ------------------------------------------------------------------------------------

    def build(self) -> PlanePlan:
        self._switches()
        self._asns_and_loopbacks()
        self._leaf_spine_links()
        if self.plane.tiers == 3:
            self._spine_superspine_links()
        self._host_links()
        if self.plane.host_links == "lacp":
            self._mlag_peer_links()
        if self.plane.border is not None:
            self._edge_links()
        self._failure_domains()
        self._stats()
        self.out.devices = self.superspines + self.spines + self.leaves + self.borders
        return self.out

    def _switches(self) -> None:
        p, s, sw, pre, mtu = self.plane, self.s, self.plane.switches, self.plane.prefix, self.plane.mtu
        assert sw.leaf is not None and sw.spine is not None
        rail_optimized = p.topology == "rail-optimized"
        for unit, width in enumerate(s.unit_leaves):
            pod = unit // s.pod_units + 1 if p.tiers == 3 else None
            for i in range(width):
                if rail_optimized:
                    name, rail = f"{pre}-su{unit + 1}-leaf{i + 1}", i + 1
                else:
                    name, rail = (f"{pre}-leaf{unit + 1}" if width == 1 else f"{pre}-leaf{unit + 1}{_letter(i)}"), None
                self.leaves.append(
                    _device(name, self.name, "leaf", sw.leaf, mtu, unit=unit + 1, rail=rail, pod=pod, side=i + 1)
                )
                self.unit_of_leaf.append(unit)
                self.pod_first_leaf.setdefault((pod or 1) - 1, len(self.leaves) - 1)
        if sw.border is not None:
            self.borders = [
                _device(f"{pre}-border{b + 1}", self.name, "border", sw.border, mtu, pod=1 if p.tiers == 3 else None)
                for b in range(s.borders)
            ]
        if p.tiers == 2:
            self.spines = [_device(f"{pre}-spine{i + 1}", self.name, "spine", sw.spine, mtu) for i in range(s.spines)]
            return
        assert sw.superspine is not None
        self.spines = [
            _device(f"{pre}-pod{q + 1}-spine{i + 1}", self.name, "spine", sw.spine, mtu, pod=q + 1)
            for q in range(s.pods)
            for i in range(s.spines)
        ]
        total = s.spines * s.superspines_per_group
        self.superspines = [
            _device(f"{pre}-superspine{i + 1}", self.name, "superspine", sw.superspine, mtu) for i in range(total)
        ]

    def _asns_and_loopbacks(self) -> None:
        first = self.plane.routing.asn_pool.first
        if self.plane.tiers == 2:
            for d in self.spines:
                d.asn = first
            nxt = first + 1
        else:
            for d in self.superspines:
                d.asn = first
            for d in self.spines:
                assert d.pod is not None
                d.asn = first + d.pod
            nxt = first + 1 + self.s.pods
        for d in self.leaves + self.borders:
            d.asn = nxt
            nxt += 1
        base = int(self.plane.addressing.loopbacks.network_address) + 1  # .0 is never a loopback
        for i, d in enumerate(self.superspines + self.spines + self.leaves + self.borders):
            d.loopback = base + i

    def _p2p(self) -> int | None:
        p2p = self.plane.addressing.p2p
        if self.plane.routing.addressing != "p2p31" or p2p is None:
            return None
        return int(p2p.network_address)

    def _leaf_spine_links(self) -> None:
        s, sw, links = self.s, self.plane.switches, self.out.links
        assert sw.leaf is not None and sw.spine is not None
        leaf_ports = portmap(sw.leaf, s.unit_nodes)
        spine_ports = portmap(sw.spine, s.spine_downlinks)
        border_ports = portmap(sw.border, s.edge_routers) if sw.border is not None else None
        speed = uplink_speed(sw.leaf)
        lows: list[tuple[Device, PortMap, int, int]] = []  # device, its ports, pod index, index in pod
        for k, leaf in enumerate(self.leaves):
            pod = (leaf.pod or 1) - 1
            lows.append((leaf, leaf_ports, pod, k - self.pod_first_leaf[pod]))
        for b, border in enumerate(self.borders):
            assert border_ports is not None
            lows.append(
                (
                    border,
                    border_ports,
                    0,
                    s.pod_units * max(s.unit_leaves or (1,)) + b if self.plane.tiers == 3 else len(self.leaves) + b,
                )
            )
        L = s.leaf_spine_links
        for low, ports, pod, idx in lows:
            uplinks = s.leaf_uplinks if low.role == "leaf" else s.border_uplinks
            first, place = self._spine_group(low, idx)
            for j in range(uplinks):
                spine = self.spines[pod * s.spines + first + j // L]
                a_port, a_cage = ports.up(j)
                b_port, b_cage = spine_ports.down(place * L + j % L)
                links.append(
                    self._fabric_link(
                        (low, a_port, a_cage, ports.up_split), (spine, b_port, b_cage, spine_ports.down_split), speed
                    )
                )

    def _spine_group(self, low: Device, idx: int) -> tuple[int, int]:
        """The first spine of the group a leaf uplinks to, and the leaf's place among the group's leaves."""
        s = self.s
        if s.spine_groups == 1 or low.side is None:
            return 0, idx
        per_group = s.rails // s.spine_groups  # rails that meet on one group
        unit, rail = divmod(idx, s.rails)
        return s.group_of_rail(rail + 1) * s.spines_per_group, unit * per_group + rail % per_group

    def _spine_superspine_links(self) -> None:
        s, sw = self.s, self.plane.switches
        assert sw.spine is not None and sw.superspine is not None
        spine_ports = portmap(sw.spine, s.spine_downlinks)
        ss_ports = portmap(sw.superspine, sw.superspine.ports * split(sw.superspine, downlink_speed(sw.superspine)))
        speed = uplink_speed(sw.spine)
        L2, G = s.spine_superspine_links, s.superspines_per_group
        for n, spine in enumerate(self.spines):
            pod, pos = divmod(n, s.spines)
            for j in range(s.spine_uplinks):
                ss = self.superspines[pos * G + j // L2]
                a_port, a_cage = spine_ports.up(j)
                b_port, b_cage = ss_ports.down(pod * L2 + j % L2)
                self.out.links.append(
                    self._fabric_link(
                        (spine, a_port, a_cage, spine_ports.up_split), (ss, b_port, b_cage, ss_ports.down_split), speed
                    )
                )

    def _fabric_link(self, a_end: End, b_end: End, speed: int) -> Link:
        (a, a_port, a_cage, a_split), (b, b_port, b_cage, b_split) = a_end, b_end
        link = Link(
            self.name,
            "fabric",
            a.name,
            a_port,
            b.name,
            b_port,
            speed,
            min(a.mtu, b.mtu),
            a_cage=a_cage,
            a_split=a_split,
            b_cage=b_cage,
            b_split=b_split,
        )
        if self._p2p_next is not None:
            # The upper tier takes the even address, as operators read "spine .0, leaf .1".
            link.b_ip, link.a_ip, link.prefixlen = self._p2p_next, self._p2p_next + 1, 31
            self._p2p_next += 2
        return link

    def _host_links(self) -> None:
        s, p, sw = self.s, self.plane, self.plane.switches
        assert sw.leaf is not None
        ports = portmap(sw.leaf, s.unit_nodes)
        block = self._host_block()
        hosts_base = int(p.addressing.hosts.network_address)
        lacp = p.host_links == "lacp"
        first_leaf_of_unit: list[int] = []
        for k, unit in enumerate(self.unit_of_leaf):
            if unit == len(first_leaf_of_unit):
                first_leaf_of_unit.append(k)
        for k, leaf in enumerate(self.leaves):
            # routed: a block per leaf; lacp: the pair shares its unit's subnet.
            leaf.host_subnet = hosts_base + (self.unit_of_leaf[k] if lacp else k) * block
            leaf.host_prefixlen = prefix_of(block)
            if lacp:
                leaf.svi_ip = leaf.host_subnet + 1 + (leaf.side or 1)
        links = self.out.links
        for share in s.shares:
            nics = share.nics
            rails = nics.rails or list(range(1, len(nics.interfaces) + 1))
            for i in range(share.group.count):
                server = self.servers[share.group.server_name(i)]
                unit = share.first_unit + i // s.unit_nodes
                pos = i % s.unit_nodes
                server.units[self.name] = unit + 1
                port, cage = ports.down(pos)  # a server sits at the same port of every leaf of its unit
                for ifname, rail in zip(nics.interfaces, rails, strict=True):
                    k = first_leaf_of_unit[unit] + rail - 1
                    leaf = self.leaves[k]
                    addr, gw, plen, leaf_ip = _host_address(leaf, pos, lacp)
                    server.nics.append(
                        HostNic(
                            self.name,
                            ifname,
                            rail,
                            nics.speed,
                            p.host_mtu,
                            leaf.name,
                            port,
                            addr,
                            plen,
                            gw,
                            nics.bond if lacp else None,
                        )
                    )
                    links.append(
                        Link(
                            self.name,
                            "host",
                            server.name,
                            ifname,
                            leaf.name,
                            port,
                            nics.speed,
                            leaf.mtu,
                            a_ip=addr,
                            b_ip=leaf_ip,
                            prefixlen=plen,
                            b_cage=cage,
                            b_split=ports.down_split,
                        )
                    )

    def _mlag_peer_links(self) -> None:
        """One peer link per unit between its two leaves, on each leaf's last cage."""
        leaf_role = self.plane.switches.leaf
        assert leaf_role is not None
        ports = portmap(leaf_role, self.s.unit_nodes)
        cage = leaf_role.ports
        by_unit: dict[int, list[Device]] = {}
        for k, leaf in enumerate(self.leaves):
            by_unit.setdefault(self.unit_of_leaf[k], []).append(leaf)
        # Each pair peers over a /31 on its peer link, counted down from the top of the p2p pool by pair
        # (fabric links count up from its bottom): a pair keeps its /31 when units are added.
        p2p = self.plane.addressing.p2p if self._p2p() is not None else None
        top = int(p2p.broadcast_address) + 1 if p2p is not None else None
        number = 0
        for pair in by_unit.values():
            for first, second in zip(pair[::2], pair[1::2], strict=False):
                number += 1
                if top is not None:
                    first.peer_l3_ip = top - 2 * number
                    second.peer_l3_ip = first.peer_l3_ip + 1
                self.out.links.append(
                    Link(
                        self.name,
                        "peer",
                        first.name,
                        ports.whole(cage),
                        second.name,
                        ports.whole(cage),
                        leaf_role.port_speed,
                        first.mtu,
                        a_cage=cage,
                        b_cage=cage,
                    )
                )

    def _edge_links(self) -> None:
        border, sw = self.plane.border, self.plane.switches
        assert border is not None and sw.border is not None
        ports = portmap(sw.border, self.s.edge_routers)
        base = int(border.edge_p2p.network_address)
        for b, dev in enumerate(self.borders):
            for e, edge in enumerate(border.edge_routers):
                port, cage = ports.down(e)
                edge_ip = base + 2 * (b * len(border.edge_routers) + e)
                self.out.links.append(
                    Link(
                        self.name,
                        "edge",
                        dev.name,
                        port,
                        edge.name,
                        "",
                        downlink_speed(sw.border),
                        dev.mtu,
                        a_ip=edge_ip + 1,
                        b_ip=edge_ip,
                        prefixlen=31,
                        a_cage=cage,
                        a_split=ports.down_split,
                    )
                )

    def _failure_domains(self) -> None:
        """Spines and borders change one at a time; leaves change together only when no server loses its last path.

        In a unit with several leaves every server has one NIC on each, so the leaves
        at the same position across units may change together: each server loses one
        rail (or one side of its bond) and keeps the others. A single-leaf unit is
        its servers' only way in, so that leaf is a domain of its own.

        With three tiers the same holds a tier up. The spines at one position of every
        pod change together: each pod loses one spine, as when one of its spines alone
        changes (every leaf keeps the other spines of its group), and the superspines
        that position uplinks to lose their downlinks, which the other positions' carry.
        The superspines at one place in every group change together: each spine loses one
        of its group's superspines and keeps the others. Where a leaf has a single spine
        to go to, or a spine a single superspine, those stay one at a time.
        """
        domains, name, s = self.out.failure_domains, self.name, self.s
        by_position = self.plane.tiers == 3 and s.pods > 1 and s.spines_per_group > 1
        by_place = self.plane.tiers == 3 and s.superspines_per_group > 1
        for pos in range(s.spines if by_position else 0):
            self._domain(f"{name}:spines-{pos + 1}", [self.spines[pod * s.spines + pos] for pod in range(s.pods)])
        for j in range(s.superspines_per_group if by_place else 0):
            self._domain(f"{name}:superspines-{j + 1}", self.superspines[j :: s.superspines_per_group])
        alone = ([] if by_place else self.superspines) + ([] if by_position else self.spines) + self.borders
        for d in alone:
            d.failure_domain = f"{name}:{d.name}"
            domains.append(FailureDomain(d.failure_domain, name, [d.name]))
        by_side: dict[int, list[str]] = {}
        for k, leaf in enumerate(self.leaves):
            width = self.s.unit_leaves[self.unit_of_leaf[k]]
            if width == 1:
                leaf.failure_domain = f"{name}:{leaf.name}"
                domains.append(FailureDomain(leaf.failure_domain, name, [leaf.name]))
                continue
            side = leaf.side or 1
            label = f"rail{side}" if self.plane.topology == "rail-optimized" else f"side-{_letter(side - 1)}"
            leaf.failure_domain = f"{name}:leaves-{label}"
            by_side.setdefault(side, []).append(leaf.name)
        for side in sorted(by_side):
            label = f"rail{side}" if self.plane.topology == "rail-optimized" else f"side-{_letter(side - 1)}"
            domains.append(FailureDomain(f"{name}:leaves-{label}", name, by_side[side]))

    def _domain(self, domain: str, members: list[Device]) -> None:
        for d in members:
            d.failure_domain = domain
        self.out.failure_domains.append(FailureDomain(domain, self.name, [d.name for d in members]))

    def _stats(self) -> None:
        s, sw, target = self.s, self.plane.switches, self.plane.oversubscription
        assert sw.leaf is not None and sw.spine is not None
        stats = [
            TierStats("leaf", s.unit_nodes * downlink_speed(sw.leaf), s.leaf_uplinks * uplink_speed(sw.leaf), target)
        ]
        if self.plane.tiers == 3:
            stats.append(
                TierStats(
                    "spine",
                    s.spine_downlinks * downlink_speed(sw.spine),
                    s.spine_uplinks * uplink_speed(sw.spine),
                    target,
                )
            )
        self.out.tier_stats = stats
        self.out.sizing = {
            "unit_nodes": s.unit_nodes,
            "units": s.units,
            "leaves": s.leaves,
            "leaf_uplinks": s.leaf_uplinks,
            "spines_per_pod" if self.plane.tiers == 3 else "spines": s.spines,
            "leaf_spine_links": s.leaf_spine_links,
            "borders": s.borders,
        }
        if s.spine_groups > 1:
            self.out.sizing |= {"spine_groups": s.spine_groups, "spines_per_group": s.spines_per_group}
        if self.plane.tiers == 3:
            self.out.sizing |= {
                "pods": s.pods,
                "pod_units": s.pod_units,
                "spine_downlinks": s.spine_downlinks,
                "spine_uplinks": s.spine_uplinks,
                "superspines": s.spines * s.superspines_per_group,
                "spine_superspine_links": s.spine_superspine_links,
            }


def _host_address(leaf: Device, pos: int, lacp: bool) -> tuple[int, int, int, int | None]:
    """(host address, gateway, prefix length, leaf address) of the host port at `pos` on `leaf`.

    routed: the port's /31 in the leaf's block, leaf even, host odd.
    lacp: the unit's subnet; .1 is the gateway, .2/.3 the leaves, hosts from .4.
    """
    assert leaf.host_subnet is not None and leaf.host_prefixlen is not None
    if lacp:
        return leaf.host_subnet + 4 + pos, leaf.host_subnet + 1, leaf.host_prefixlen, None
    leaf_ip = leaf.host_subnet + 2 * pos
    return leaf_ip + 1, leaf_ip, 31, leaf_ip


def _letter(i: int) -> str:
    return ascii_lowercase[i] if i < 26 else str(i + 1)
