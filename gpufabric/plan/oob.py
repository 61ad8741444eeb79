"""The out-of-band plane: every switch's management port and every server's BMC on a flat subnet.

OOB switches route nothing; they hold one address each on the management subnet.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil

from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import OobPlane, SwitchRole
from gpufabric.intent.rules import downlink_speed, uplink_speed
from gpufabric.plan.fabric import portmap
from gpufabric.plan.management import ManagementPort
from gpufabric.plan.model import Device, FailureDomain, Link, PlanePlan, Server
from gpufabric.plan.sizing import SizingError, split
from gpufabric.platforms import platform

AT: Path = ("planes", "oob")


def _switch(name: str, role_name: str, role: SwitchRole, mtu: int) -> Device:
    return Device(
        name=name,
        plane="oob",
        role=role_name,
        platform=role.platform,
        model=role.model,
        mtu=min(mtu, platform(role.platform).facts.max_mtu),
        mgmt_port=platform(role.platform).facts.mgmt_port,
        failure_domain=f"oob:{name}",
    )


def _counts(oob: OobPlane, endpoints: int) -> tuple[int, int, int]:
    """Management switches, aggregation spines, and uplinks per management switch."""
    mgmt, spine = oob.switches.mgmt, oob.switches.spine
    assert mgmt is not None
    capacity = mgmt.ports * split(mgmt, downlink_speed(mgmt))
    if endpoints <= capacity and (spine is None or spine.count is None):
        return 1, 0, 0
    if spine is None:
        raise SizingError(
            [
                Problem(
                    (*AT, "switches"),
                    f"{endpoints} management ports need more than one "
                    f"{capacity}-port mgmt switch, and there is no aggregation",
                    "add switches.spine (OOB aggregation) or use a larger mgmt switch",
                )
            ]
        )
    spines = spine.count or 1
    uplinks = mgmt.uplinks or spines
    if uplinks % spines:
        raise SizingError(
            [
                Problem(
                    (*AT, "switches", "mgmt", "uplinks"),
                    f"{uplinks} uplinks do not spread over {spines} spines",
                    f"use a multiple of {spines}",
                )
            ]
        )
    up_cages = ceil(uplinks / split(mgmt, uplink_speed(mgmt)))
    down = (mgmt.ports - up_cages) * split(mgmt, downlink_speed(mgmt))
    if down <= 0:
        raise SizingError(
            [
                Problem(
                    (*AT, "switches", "mgmt", "ports"),
                    "no ports are left for devices after uplinks",
                    "use fewer uplinks or a larger switch",
                )
            ]
        )
    count = ceil(endpoints / down)
    spine_capacity = spine.ports * split(spine, downlink_speed(spine))
    if count * uplinks // spines > spine_capacity:
        raise SizingError(
            [
                Problem(
                    (*AT, "switches", "spine", "ports"),
                    f"{count} mgmt switches x {uplinks} uplinks exceed {spines} spines of {spine_capacity} ports",
                    "add spines (count) or use larger ones",
                )
            ]
        )
    return count, spines, uplinks


def build_oob(
    oob: OobPlane,
    switches: list[Device],
    servers: list[Server],
    reserved: frozenset[int] = frozenset(),
    others: Sequence[ManagementPort] = (),
) -> PlanePlan:
    """Plan the OOB switches and cable `switches`, `servers` and `others` to them, assigning every management
    address."""
    ends: list[tuple[str, str]] = [(d.name, d.mgmt_port) for d in switches]
    ends += [(s.name, s.mgmt_interface) for s in servers if s.mgmt_interface]
    first_other = len(ends)
    ends += [(o.device, o.port) for o in others]
    count, n_spines, uplinks = _counts(oob, len(ends))
    mgmt = oob.switches.mgmt
    assert mgmt is not None
    down = mgmt.ports * split(mgmt, downlink_speed(mgmt))
    if count > 1:
        down -= ceil(uplinks / split(mgmt, uplink_speed(mgmt))) * split(mgmt, downlink_speed(mgmt))
    pre = oob.prefix
    mgmts = [_switch(f"{pre}-mgmt{i + 1}", "mgmt", mgmt, oob.mtu) for i in range(count)]
    spines = []
    if n_spines:
        assert oob.switches.spine is not None
        spines = [_switch(f"{pre}-spine{i + 1}", "spine", oob.switches.spine, oob.mtu) for i in range(n_spines)]
    out = PlanePlan(
        name="oob",
        topology="switched",
        tiers=2 if spines else 1,
        prefix=pre,
        mtu=oob.mtu,
        host_mtu=oob.mtu,
        devices=spines + mgmts,
    )
    _addresses(oob, spines + mgmts, switches, servers, reserved, others=others)
    ports = portmap(mgmt, down)
    by_name = {s.name: s for s in servers}
    for k, (name, port) in enumerate(ends):
        sw = mgmts[k // down]
        sw_port, cage = ports.down(k % down)
        out.links.append(
            Link(
                "oob",
                "mgmt",
                name,
                port,
                sw.name,
                sw_port,
                downlink_speed(mgmt),
                sw.mtu,
                b_cage=cage,
                b_split=ports.down_split,
            )
        )
        if k >= first_other:
            other = others[k - first_other]
            other.oob_switch, other.oob_port = sw.name, sw_port
        elif k >= len(switches):
            server = by_name[name]
            server.mgmt_switch, server.mgmt_port = sw.name, sw_port
    if spines:
        assert oob.switches.spine is not None
        spine_ports = portmap(oob.switches.spine, oob.switches.spine.ports)
        per_spine = uplinks // len(spines)
        for m, sw in enumerate(mgmts):
            for j in range(uplinks):
                s = j // per_spine
                a_port, a_cage = ports.up(j)
                b_port, b_cage = spine_ports.down(m * per_spine + j % per_spine)
                out.links.append(
                    Link(
                        "oob",
                        "fabric",
                        sw.name,
                        a_port,
                        spines[s].name,
                        b_port,
                        uplink_speed(mgmt),
                        min(sw.mtu, spines[s].mtu),
                        a_cage=a_cage,
                        a_split=ports.up_split,
                        b_cage=b_cage,
                        b_split=spine_ports.down_split,
                    )
                )
    out.failure_domains = [FailureDomain(d.failure_domain, "oob", [d.name]) for d in spines + mgmts]
    out.sizing = {"mgmt_switches": count, "spines": len(spines), "management_ports": len(ends)}
    return out


def oob_addresses_needed(endpoints: int, oob: OobPlane) -> list[Problem]:
    usable = oob.subnet.num_addresses - 3  # network, broadcast, gateway
    if endpoints <= usable:
        return []
    need = endpoints + 3
    prefix = 32 - (need - 1).bit_length()
    return [
        Problem(
            (*AT, "subnet"),
            f"{oob.subnet} has {usable} usable addresses; {endpoints} devices and servers need one each",
            f"use a /{prefix} or larger",
        )
    ]


def _addresses(
    oob: OobPlane,
    own: list[Device],
    switches: list[Device],
    servers: list[Server],
    reserved: frozenset[int],
    *,
    others: Sequence[ManagementPort],
) -> None:
    taken = reserved | {int(oob.gateway_address)}
    nxt = int(oob.subnet.network_address) + 1

    def take() -> int:
        nonlocal nxt
        while nxt in taken:
            nxt += 1
        nxt += 1
        return nxt - 1

    for d in own + switches:
        d.mgmt_ip = take()
    for s in servers:
        if s.mgmt_interface:
            s.mgmt_ip = take()
    for other in others:
        other.address = take()
