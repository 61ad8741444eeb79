"""The out-of-band plane: every switch's management port and every server's BMC on a flat subnet.

OOB switches route nothing; they hold one address each on the management subnet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import ceil

from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import OobPlane, SwitchRole
from gpufabric.intent.rules import downlink_speed, uplink_speed
from gpufabric.plan.fabric import portmap
from gpufabric.plan.management import ManagementPort
from gpufabric.plan.model import Device, FailureDomain, Link, PlanePlan, Server
from gpufabric.plan.ports import PortMap
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
    cored = oob.switches.superspine is not None
    # With a core, a mgmt switch's uplinks spread over its group of spines; without, over all of them.
    spines = (oob.spine_group or mgmt.uplinks or 2) if cored else (spine.count or 1)
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
    if cored:
        shape = _core_shape(oob, uplinks)
        n_spines = ceil(count / shape.per_group) * shape.group
        _core_capacity(oob, shape, n_spines)
        return count, n_spines, uplinks
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


@dataclass(frozen=True)
class CoreShape:
    """An OOB core: the spines in groups of `group`, each group carrying `per_group` mgmt switches, and each
    spine spreading `spine_uplinks` over `cores` core switches."""

    group: int
    per_group: int
    spine_down: int
    spine_uplinks: int
    cores: int


def _core_shape(oob: OobPlane, uplinks: int) -> CoreShape:
    """How the spines group under an OOB core, refused when a spine or a core runs out of ports."""
    spine, core, mgmt = oob.switches.spine, oob.switches.superspine, oob.switches.mgmt
    assert spine is not None and core is not None and mgmt is not None
    group = oob.spine_group or uplinks
    cores = core.count or 2
    spine_up = spine.uplinks or cores
    if spine_up % cores:
        raise SizingError(
            [
                Problem(
                    (*AT, "switches", "spine", "uplinks"),
                    f"{spine_up} uplinks do not spread over {cores} core switches",
                    f"use a multiple of {cores}",
                )
            ]
        )
    spine_down = (spine.ports - ceil(spine_up / split(spine, uplink_speed(spine)))) * split(
        spine, downlink_speed(spine)
    )
    per_group = spine_down // (uplinks // group)
    if per_group < 1:
        raise SizingError(
            [
                Problem(
                    (*AT, "switches", "spine", "ports"),
                    "no spine ports are left for mgmt switches after the uplinks to the core",
                    "use fewer spine uplinks or a larger spine",
                )
            ]
        )
    return CoreShape(group, per_group, spine_down, spine_up, cores)


def _core_capacity(oob: OobPlane, shape: CoreShape, spines: int) -> None:
    core = oob.switches.superspine
    assert core is not None
    capacity = core.ports * split(core, downlink_speed(core))
    if spines * shape.spine_uplinks // shape.cores > capacity:
        raise SizingError(
            [
                Problem(
                    (*AT, "switches", "superspine", "ports"),
                    f"{spines} spines x {shape.spine_uplinks} uplinks exceed {shape.cores} core switches of "
                    f"{capacity} ports",
                    "add core switches (superspine.count) or use larger ones",
                )
            ]
        )


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
    cores = []
    if spines and oob.switches.superspine is not None:
        n_cores = _core_shape(oob, uplinks).cores
        cores = [_switch(f"{pre}-core{i + 1}", "superspine", oob.switches.superspine, oob.mtu) for i in range(n_cores)]
    out = PlanePlan(
        name="oob",
        topology="switched",
        tiers=3 if cores else 2 if spines else 1,
        prefix=pre,
        mtu=oob.mtu,
        host_mtu=oob.mtu,
        devices=cores + spines + mgmts,
    )
    _addresses(oob, cores + spines + mgmts, switches, servers, reserved, others=others)
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
    if cores:
        _cable_core(oob, out, (mgmts, spines, cores), uplinks, ports)
    elif spines:
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
    out.failure_domains = [FailureDomain(d.failure_domain, "oob", [d.name]) for d in out.devices]
    out.sizing = {"mgmt_switches": count, "spines": len(spines), "management_ports": len(ends)}
    if cores:
        out.sizing["core_switches"] = len(cores)
    return out


def _cable_core(
    oob: OobPlane,
    out: PlanePlan,
    tiers: tuple[list[Device], list[Device], list[Device]],
    uplinks: int,
    ports: PortMap,
) -> None:
    """Mgmt switch m uplinks to the spines of group m // per_group, an equal share to each; every spine
    spreads its uplinks over every core switch."""
    mgmts, spines, cores = tiers
    spine, core, mgmt = oob.switches.spine, oob.switches.superspine, oob.switches.mgmt
    assert spine is not None and core is not None and mgmt is not None
    shape = _core_shape(oob, uplinks)
    per_spine = uplinks // shape.group
    spine_ports = portmap(spine, shape.spine_down)
    core_ports = portmap(core, core.ports)
    for m, sw in enumerate(mgmts):
        g, slot = divmod(m, shape.per_group)
        for j in range(uplinks):
            target = spines[g * shape.group + j // per_spine]
            ends = (ports.up(j), spine_ports.down(slot * per_spine + j % per_spine))
            out.links.append(_uplink(sw, target, ends=ends, maps=(ports, spine_ports), role=mgmt))
    per_core = shape.spine_uplinks // shape.cores
    for s_index, sp in enumerate(spines):
        for j in range(shape.spine_uplinks):
            target = cores[j // per_core]
            ends = (spine_ports.up(j), core_ports.down(s_index * per_core + j % per_core))
            out.links.append(_uplink(sp, target, ends=ends, maps=(spine_ports, core_ports), role=spine))


def _uplink(
    a: Device,
    b: Device,
    *,
    ends: tuple[tuple[str, int], tuple[str, int]],
    maps: tuple[PortMap, PortMap],
    role: SwitchRole,
) -> Link:
    """A fabric link of the OOB plane, from `a`'s uplink to `b`'s downlink."""
    (a_port, a_cage), (b_port, b_cage) = ends
    return Link(
        "oob",
        "fabric",
        a.name,
        a_port,
        b.name,
        b_port,
        uplink_speed(role),
        min(a.mtu, b.mtu),
        a_cage=a_cage,
        a_split=maps[0].up_split,
        b_cage=b_cage,
        b_split=maps[1].down_split,
    )


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
