"""Carried planes on a converged plane's switches: their VRFs, tags, addresses and traffic classes.

A carried plane's addresses follow from the physical plane's: a host port's /31 in the carried plane's
pool is at the place its untagged /31 has in `addressing.hosts`, and a fabric link's at its place in
`addressing.p2p`. So every address is stable as the fabric grows (it moves with its port), nothing is
allocated twice, and a reader of the plan finds any carried address from the physical one.

Which switches hold the VRF: every leaf, spine and superspine, and no border leaf (only the plane's own
traffic reaches the edge, so a carried plane has no route out; nothing leaks between VRFs).
"""

from __future__ import annotations

from gpufabric.intent.converged import CARRYING_ROLES
from gpufabric.intent.converged_rules import carried_groups
from gpufabric.intent.model import Intent
from gpufabric.plan.carried import CarriedNic, CarriedPlan
from gpufabric.plan.model import Link, PlanePlan, Server


def carried_plans(intent: Intent, name: str) -> list[CarriedPlan]:
    plane = getattr(intent.planes, name)
    if plane is None or not plane.carries:
        return []
    own_hosts = int(plane.addressing.hosts.network_address)
    own_p2p = plane.addressing.p2p
    out = []
    for carried, lp in plane.carries.items():
        p2p = None
        if lp.p2p is not None and own_p2p is not None and plane.routing.addressing == "p2p31":
            p2p = int(lp.p2p.network_address) - int(own_p2p.network_address)
        out.append(
            CarriedPlan(
                name=carried,
                vrf=lp.vrf,
                vlan=lp.vlan,
                lossless=lp.traffic == "lossless",
                priority=lp.priority,
                dscp=tuple(lp.dscp),
                bandwidth_percent=lp.bandwidth_percent,
                groups=frozenset(carried_groups(intent, name, lp)),
                hosts=str(lp.hosts),
                hosts_offset=int(lp.hosts.network_address) - own_hosts,
                p2p_offset=p2p,
            )
        )
    return out


def attach(intent: Intent, plane: PlanePlan, servers: list[Server]) -> None:
    """Give the plane its carried planes, and each joining host's NICs on it their tagged subinterfaces."""
    plane.carried = carried_plans(intent, plane.name)
    if not plane.carried:
        return
    native = {g.name: g.nics[plane.name].native for g in intent.server_groups if plane.name in g.nics}
    for server in servers:
        for nic in server.nics:
            if nic.plane != plane.name:
                continue
            nic.native = native[server.group]
            nic.carried = tuple(
                CarriedNic(
                    c.name,
                    c.vrf,
                    c.vlan,
                    c.subinterface(nic.interface),
                    nic.interface,
                    c.host_address(nic.address),
                    nic.prefixlen,
                    c.host_address(nic.gateway),
                )
                for c in plane.carried
                if server.group in c.groups
            )
    untagged = {s.name for s in servers if not native.get(s.group, True)}
    for link in plane.links:
        if link.kind == "host" and link.a in untagged:
            link.a_ip = link.b_ip = link.prefixlen = None  # the port's own address: none, only its tags have one


def link_carries(plane: PlanePlan, link: Link, roles: dict[str, str], groups: dict[str, str]) -> list[CarriedPlan]:
    """The carried planes a link of the plane has a subinterface of: a host port, those its server joins; a
    fabric link between carrying switches, all (never an edge link, a peer link or a border leaf's uplink).
    `roles`: the plane's switch -> role; `groups`: server -> its group."""
    if link.kind == "host":
        return [c for c in plane.carried if groups.get(link.a) in c.groups]
    if link.kind == "fabric" and roles.get(link.a) in CARRYING_ROLES and roles.get(link.b) in CARRYING_ROLES:
        return list(plane.carried)
    return []


def describe(c: CarriedPlan) -> str:
    """One carried plane in a line: `storage (VRF STORAGE, VLAN 20, lossless, 50%)`."""
    kind = "lossless" if c.lossless else f"lossy, priority {c.priority}"
    return f"{c.name} (VRF {c.vrf}, VLAN {c.vlan}, {kind}, {c.bandwidth_percent}%)"


def carried_record(c: CarriedPlan) -> dict[str, object]:
    """A carried plane as the inventories and the plan export write it (what hosts and switches agree on)."""
    return {
        "plane": c.name,
        "vrf": c.vrf,
        "vlan": c.vlan,
        "traffic": "lossless" if c.lossless else "lossy",
        "priority": c.priority,
        "dscp": list(c.dscp),
        "bandwidth_percent": c.bandwidth_percent,
        "hosts": c.hosts,
    }
