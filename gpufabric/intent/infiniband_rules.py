"""Rules of an InfiniBand compute plane that relate several fields: the adapters the server groups
give it, its partitions and their tenants, IPoIB addresses, and the SL-to-VL table.

What only the planned fabric can tell (a switch model without the radix for the unit, a design too
large for three tiers) is found by the planner and located at the plane's fields there.
"""

from __future__ import annotations

from ipaddress import IPv4Network

from gpufabric import media
from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import InfinibandPlane, Intent, ServerGroup

PLANE: Path = ("planes", "compute")
IFNAMSIZ = 15  # the longest Linux interface name

# The adapters' InfiniBand rate for a NIC speed, per switch model: a Quantum-2 (QM9700) runs NDR,
# 400G per port or 200G per split port (NDR200); a Quantum (QM8700) runs HDR, 200G, or HDR100 split.
RATES: dict[str, dict[int, str]] = {
    "QM9700": {400: "NDR", 200: "NDR200"},
    "QM8700": {200: "HDR", 100: "HDR100"},
}


def hca_rate(switch_model: str, speed: int) -> str | None:
    """The InfiniBand rate name of `speed` Gb/s adapters on `switch_model` leaves, or None."""
    return RATES.get(switch_model, {}).get(speed)


def attached_groups(intent: Intent) -> list[tuple[int, ServerGroup]]:
    """Server groups with adapters on the compute plane, with their index in the intent."""
    return [(gi, g) for gi, g in enumerate(intent.server_groups) if "compute" in g.nics]


def infiniband_rules(intent: Intent, plane: InfinibandPlane) -> list[Problem]:
    groups = attached_groups(intent)
    if not groups:
        return [
            Problem(
                PLANE,
                "no server group has adapters on the InfiniBand compute plane",
                "add nics.compute (speed, and the adapters' RDMA device names as interfaces) to a server group",
            )
        ]
    problems = _adapters(plane, groups)
    rails = len(groups[0][1].nics["compute"].interfaces)
    if plane.fabric_manager_ports > rails:
        problems.append(
            Problem(
                (*PLANE, "fabric_manager_ports"),
                f"{plane.fabric_manager_ports} fabric-manager ports in one node slot of {rails} rails",
                f"use at most {rails} (one per rail)",
            )
        )
    if plane.ipoib is not None and plane.ipoib.rail > rails:
        problems.append(
            Problem((*PLANE, "ipoib", "rail"), f"rail {plane.ipoib.rail} of {rails}", f"use a rail from 1 to {rails}")
        )
    problems += _ipoib_room(intent, plane, groups)
    problems += _ipoib_partitions(plane, groups)
    problems += _partitions(intent, plane)
    problems += _sl2vl(plane)
    problems += _reach(plane)
    problems += _pod_subnets(plane)
    return problems


def _pod_subnets(plane: InfinibandPlane) -> list[Problem]:
    """Pods' IPoIB subnets: on a partition with IPoIB, hosts' IPoIB on the plane (the child interface the pods'
    networks enslave), apart from the hosts' subnet and from each other; and a child name Linux can hold."""
    problems: list[Problem] = []
    taken: list[tuple[str, IPv4Network]] = []
    if plane.ipoib is not None:
        taken.append(("planes.compute.ipoib.subnet", plane.ipoib.subnet))
        if len(plane.ipoib.netdev) > IFNAMSIZ - 5:
            problems.append(
                Problem(
                    (*PLANE, "ipoib", "netdev"),
                    f"'{plane.ipoib.netdev}.8xxx' (a partition's child) is longer than Linux's {IFNAMSIZ} characters",
                    f"name the adapter's interface in at most {IFNAMSIZ - 5} characters",
                )
            )
    for i, p in enumerate(plane.partitions):
        if p.pod_subnet is None:
            continue
        at: Path = (*PLANE, "partitions", i, "pod_subnet")
        if not p.ipoib:
            problems.append(Problem(at, f"partition '{p.name}' has no IPoIB", "set ipoib: true, or drop pod_subnet"))
        elif plane.ipoib is None:
            problems.append(
                Problem(
                    at,
                    "pods' IPoIB networks enslave the hosts' IPoIB interface, and the plane gives the hosts none",
                    "add planes.compute.ipoib (subnet, rail, netdev)",
                )
            )
        for where, other in taken:
            if p.pod_subnet.overlaps(other):
                problems.append(Problem(at, f"{p.pod_subnet} overlaps {where} ({other})", "give it its own subnet"))
        taken.append((f"planes.compute.partitions[{i}].pod_subnet", p.pod_subnet))
    return problems


# The generation a switch model's ports signal at (NDR200 and HDR100 are split ports of the same lanes).
GENERATION = {"QM9700": "NDR", "QM8700": "HDR"}


def _reach(plane: InfinibandPlane) -> list[Problem]:
    """Every cable within some medium's reach: beyond, the bill of material would name no cable to buy."""
    if plane.lengths is None:
        return []
    generation = GENERATION[plane.switch_model]
    reach = media.infiniband(generation)[-1].reach_m
    return [
        Problem(
            (*PLANE, "lengths", key),
            f"{metres} m at {generation} is beyond every medium's reach ({reach} m)",
            f"place the ends within {reach} m of each other",
        )
        for key, metres in plane.lengths.model_dump().items()
        if metres is not None and metres > reach
    ]


def _adapters(plane: InfinibandPlane, groups: list[tuple[int, ServerGroup]]) -> list[Problem]:
    """One rate and one number of rails across the plane; no Ethernet-only NIC settings."""
    problems: list[Problem] = []
    first = groups[0][1].nics["compute"]
    for gi, group in groups:
        nics = group.nics["compute"]
        at: Path = ("server_groups", gi, "nics", "compute")
        if hca_rate(plane.switch_model, nics.speed) is None:
            speeds = ", ".join(f"{s}G ({r})" for s, r in RATES[plane.switch_model].items())
            problems.append(
                Problem(
                    (*at, "speed"),
                    f"{nics.speed}G adapters do not run on {plane.switch_model} leaves",
                    f"use {speeds}, or the other switch_model",
                )
            )
        if nics.rails is not None:
            problems.append(
                Problem(
                    (*at, "rails"),
                    "on InfiniBand the adapters are in rail order",
                    "drop rails and list the adapters rail by rail",
                )
            )
        if len(nics.interfaces) != len(first.interfaces) or nics.speed != first.speed:
            problems.append(
                Problem(
                    at,
                    f"{len(nics.interfaces)} x {nics.speed}G adapters where {groups[0][1].name} has "
                    f"{len(first.interfaces)} x {first.speed}G",
                    "give every group on the plane the same adapters: one leaf per rail serves them all",
                )
            )
    return problems


def _ipoib_room(intent: Intent, plane: InfinibandPlane, groups: list[tuple[int, ServerGroup]]) -> list[Problem]:
    if plane.ipoib is None:
        return []
    hosts = sum(max(g.count, g.build_out or 0) for _, g in groups)
    subnet = plane.ipoib.subnet
    room = subnet.num_addresses - (2 if subnet.prefixlen < 31 else 0)
    if room >= hosts:
        return []
    return [
        Problem(
            (*PLANE, "ipoib", "subnet"),
            f"{subnet} holds {room} host addresses; the plane has {hosts} hosts",
            f"use a /{max(0, 32 - (hosts + 2 - 1).bit_length())} or larger",
        )
    ]


def _ipoib_partitions(plane: InfinibandPlane, groups: list[tuple[int, ServerGroup]]) -> list[Problem]:
    """A host's IPoIB interface lives in one of its partitions: in the default partition it is a limited
    member, and two limited members cannot talk."""
    if plane.ipoib is None:
        return []
    served = {g for p in plane.partitions if p.ipoib for g in p.groups}
    return [
        Problem(
            (*PLANE, "ipoib"),
            f"the hosts of group '{g.name}' are in no partition with ipoib: their IPoIB interface would be a "
            "limited member of the default partition and reach no other host",
            f"add '{g.name}' to a partition's groups (with ipoib: true), or drop ipoib",
        )
        for _, g in groups
        if g.name not in served
    ]


def _partitions(intent: Intent, plane: InfinibandPlane) -> list[Problem]:
    problems: list[Problem] = []
    attached = {g.name for _, g in attached_groups(intent)}
    known = {g.name for g in intent.server_groups}
    names: dict[str, int] = {}
    pkeys: dict[int, str] = {}
    for i, part in enumerate(plane.partitions):
        at: Path = (*PLANE, "partitions", i)
        if part.name in names:
            problems.append(
                Problem((*at, "name"), f"partition '{part.name}' is defined twice", "give each partition its own name")
            )
        names.setdefault(part.name, i)
        if part.pkey in pkeys:
            problems.append(
                Problem(
                    (*at, "pkey"),
                    f"PKey 0x{part.pkey:04x} is already partition '{pkeys[part.pkey]}''s",
                    "give each partition its own PKey",
                )
            )
        pkeys.setdefault(part.pkey, part.name)
        if not part.groups:
            problems.append(
                Problem(
                    (*at, "groups"),
                    "the partition has no members",
                    "list the tenant's server groups, or drop the partition",
                )
            )
        for j, group in enumerate(part.groups):
            if group not in known:
                problems.append(
                    Problem(
                        (*at, "groups", j),
                        f"no server group '{group}'",
                        f"use one of {', '.join(sorted(attached)) or '(none attached)'}",
                    )
                )
            elif group not in attached:
                problems.append(
                    Problem(
                        (*at, "groups", j),
                        f"server group '{group}' has no adapters on the compute plane",
                        "add nics.compute to the group, or leave it out of the partition",
                    )
                )
    return problems


def _sl2vl(plane: InfinibandPlane) -> list[Problem]:
    if plane.sl2vl is None:
        return []
    bad = [(sl, vl) for sl, vl in enumerate(plane.sl2vl) if not 0 <= vl < plane.max_vls]
    if not bad:
        return []
    sl, vl = bad[0]
    return [
        Problem(
            (*PLANE, "sl2vl", sl),
            f"SL {sl} on VL {vl}, outside the {plane.max_vls} data VLs in use (VL 0-{plane.max_vls - 1})",
            f"map every SL to a VL from 0 to {plane.max_vls - 1}, or raise max_vls",
        )
    ]
