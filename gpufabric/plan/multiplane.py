"""A compute plane built as several independent planes (`multiplane:` in the intent).

Each plane is planned as a plane of its own would be, from a view of the intent: the servers' interfaces
that land on it, its share of every address and ASN pool, and its own switch name prefix. The planes are
then joined into the one `compute` plane of the plan, so every reader of the compute plane (rendering,
QoS, exports) sees its switches and cables, while `PlanePlan.plane_of` says which plane each switch is on:
no switch, cable, address, ASN or failure domain is shared between two planes.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import replace
from ipaddress import IPv4Network
from math import ceil, log2

from gpufabric.intent.errors import Problem
from gpufabric.intent.model import Addressing, DataPlane, Intent, Multiplane, NicSet, Routing, ServerGroup
from gpufabric.intent.types import AsnRange, PlaneName
from gpufabric.plan.fabric import PlaneBuilder
from gpufabric.plan.model import HostNic, Plan, PlanePlan, Server
from gpufabric.plan.sizing import SizingError, size_plane


def split_bits(planes: int) -> int:
    """Bits a pool's prefix grows by to give every plane an equal share (3 planes take quarters)."""
    return ceil(log2(planes))


def pool_share(net: IPv4Network, planes: int, index: int) -> IPv4Network:
    """The share of `net` that plane `index` (1-based) of `planes` takes."""
    bits = split_bits(planes)
    size = net.num_addresses >> bits
    return IPv4Network((int(net.network_address) + (index - 1) * size, net.prefixlen + bits))


def asn_share(pool: AsnRange, planes: int, index: int) -> AsnRange:
    """Plane `index`'s equal share of an ASN range (the remainder, if any, stays unused)."""
    size = pool.size // planes
    first = pool.first + (index - 1) * size
    return AsnRange(first=first, last=first + size - 1)


def plane_interfaces(nics: NicSet, mp: Multiplane, index: int) -> list[str]:
    """The interfaces of a server's compute NICs that land on plane `index`, in rail order."""
    n = mp.planes
    if mp.ports == "interleaved":
        return nics.interfaces[index - 1 :: n]
    per = len(nics.interfaces) // n
    return nics.interfaces[(index - 1) * per : index * per]


def plane_prefix(prefix: str, index: int) -> str:
    """Switch names of plane `index` start with this: cmp-p1-su1-leaf1, cmp-p2-spine3."""
    return f"{prefix}-p{index}"


def view(intent: Intent, name: PlaneName, plane: DataPlane, index: int) -> tuple[Intent, DataPlane]:
    """The intent as plane `index` sees it: its interfaces, its pools, its prefix, and one plane."""
    mp = plane.multiplane
    assert mp is not None
    n = mp.planes
    a = plane.addressing
    addressing = Addressing(
        loopbacks=pool_share(a.loopbacks, n, index),
        p2p=pool_share(a.p2p, n, index) if a.p2p is not None else None,
        hosts=pool_share(a.hosts, n, index),
    )
    routing: Routing = plane.routing.model_copy(update={"asn_pool": asn_share(plane.routing.asn_pool, n, index)})
    one = plane.model_copy(
        update={
            "prefix": plane_prefix(plane.prefix, index),
            "addressing": addressing,
            "routing": routing,
            "multiplane": None,
        }
    )
    groups: list[ServerGroup] = []
    for group in intent.server_groups:
        nics = group.nics.get(name)
        if nics is None:
            groups.append(group)
            continue
        share = nics.model_copy(update={"interfaces": plane_interfaces(nics, mp, index), "rails": None})
        groups.append(group.model_copy(update={"nics": {**group.nics, name: share}}))
    planes = intent.planes.model_copy(update={name: one})
    return intent.model_copy(update={"server_groups": groups, "planes": planes}), one


def builders(
    intent: Intent, name: PlaneName, plane: DataPlane, servers: dict[str, Server]
) -> tuple[list[PlaneBuilder], list[Problem]]:
    """One builder per plane, sized and checked; problems name the plane whose share falls short."""
    mp = plane.multiplane
    assert mp is not None
    found: list[PlaneBuilder] = []
    problems: list[Problem] = []
    said: dict[tuple[object, ...], int] = {}  # field -> the plane whose problems there are reported
    for index in range(1, mp.planes + 1):
        seen, one = view(intent, name, plane, index)
        try:
            sizing = size_plane(seen, name, one)
            builder = PlaneBuilder(name, one, sizing, servers)
            mine = builder.check_pools()
            found.append(builder)
        except SizingError as exc:
            mine = exc.problems
        # Every plane is built alike, so what falls short falls short on each: said for the first plane.
        for p in mine:
            if said.setdefault(p.path, index) == index:
                problems.append(_of_plane(p, index, mp.planes))
    return found, problems


def _of_plane(problem: Problem, index: int, planes: int) -> Problem:
    pool = problem.path[-1] in ("loopbacks", "p2p", "hosts", "asn_pool")
    if not pool:
        return problem
    return Problem(
        problem.path,
        f"plane {index} of {planes} takes 1/{2 ** split_bits(planes) if problem.path[-1] != 'asn_pool' else planes} "
        f"of this pool: {problem.message}",
        problem.hint,
    )


# NIC models whose ports share one cage, and the cage's speed in Gb/s. A ConnectX-8 SuperNIC (C8180) has one
# 800G OSFP cage, run as one 800G port, 2 x 400G or 4 x 200G (NVIDIA ConnectX-8 SuperNIC user manual,
# "Specifications" and "Port Split"; the split is the firmware's NUM_OF_PLANES_P1 setting). A multi-plane host
# lists those ports as interfaces of its own, one per plane: one module serves them all.
SHARED_CAGE_GBPS = {"ConnectX-8": 800}


# The NICs' side of a multi-plane compute plane, as NVIDIA's NIC Configuration Operator names it
# (NicConfigurationTemplate `spectrumXOptimized.multiplaneMode`, README "Spectrum-X"): the plan gives each plane's
# port of a SuperNIC an interface and an address of its own and NCCL balances over them, which is software packet
# load balancing (`swplb`); `hwplb` (one interface the NIC balances over the planes) is not what the plan builds.
NIC_MULTIPLANE_MODE = "swplb"


def nic_multiplane(mp: Multiplane | None) -> dict[str, object]:
    """The SuperNICs' multi-plane mode and plane count (`none` and 1 on a single plane)."""
    if mp is None:
        return {"multiplaneMode": "none", "numberOfPlanes": 1}
    return {"multiplaneMode": NIC_MULTIPLANE_MODE, "numberOfPlanes": mp.planes}


def nic_index(count: int, mp: Multiplane, position: int) -> int:
    """Which NIC (0-based, in interface order) the interface at `position` of `count` belongs to: with
    `interleaved` ports a NIC's ports are listed together, with `blocked` one per block."""
    return position // mp.planes if mp.ports == "interleaved" else position % (count // mp.planes)


def share_nic_cages(
    intent: Intent, name: PlaneName, plane: DataPlane, joined: PlanePlan, groups: dict[str, str]
) -> None:
    """Each host link's server end names its NIC's cage and how many ports share it (`a_cage`, `a_split`), where
    the group's NICs put every plane's port in one cage (SHARED_CAGE_GBPS) and the ports fit it: the bill of
    material then counts one module per cage. `groups`: server -> its group."""
    mp = plane.multiplane
    assert mp is not None
    cages: dict[str, dict[str, int]] = {}  # group -> interface -> its NIC
    for g in intent.server_groups:
        nics = g.nics.get(name)
        if nics is None or nics.model not in SHARED_CAGE_GBPS or nics.speed * mp.planes > SHARED_CAGE_GBPS[nics.model]:
            continue
        cages[g.name] = {ifname: nic_index(len(nics.interfaces), mp, i) for i, ifname in enumerate(nics.interfaces)}
    for link in joined.links:
        nic = cages.get(groups.get(link.a, ""), {}).get(link.a_port) if link.kind == "host" else None
        if nic is not None:
            link.a_cage, link.a_split = nic, mp.planes


def join(name: str, built: list[PlanePlan], plane: DataPlane) -> PlanePlan:
    """The planes as the one compute plane of the plan: devices and cables plane by plane, failure domains
    named by plane (`compute:p2-leaves-rail1`), `plane_of` naming each switch's plane."""
    first = built[0]
    # Every setting is each plane's (they are built from one intent plane); only the parts are joined.
    out = dataclasses.replace(
        first,
        name=name,
        prefix=plane.prefix,
        devices=[],
        links=[],
        failure_domains=[],
        sizing={**first.sizing, "planes": len(built)},
        routing={**first.routing, "asn_pool": f"{plane.routing.asn_pool.first}-{plane.routing.asn_pool.last}"},
        plane_of={},
    )
    for index, one in enumerate(built, 1):
        for d in one.devices:
            d.failure_domain = _domain_name(name, index, d.failure_domain)
            out.plane_of[d.name] = index
        for domain in one.failure_domains:
            domain.name = _domain_name(name, index, domain.name)
        out.devices += one.devices
        out.links += one.links
        out.failure_domains += one.failure_domains
    return out


def _domain_name(plane: str, index: int, domain: str) -> str:
    head = f"{plane}:"
    return f"{head}p{index}-{domain[len(head) :]}" if domain.startswith(head) else domain


# -- what the rest of gpufabric asks of a multi-plane compute plane -------------------------------------------


def planes_of(plane: PlanePlan) -> int:
    """How many independent planes a plane of the plan is built as (1 unless `multiplane`)."""
    return max(plane.plane_of.values(), default=1)


def nic_plane(plan: Plan, nic: HostNic) -> int | None:
    """The 1-based plane a server's NIC lands on (its leaf's), or None on a single plane."""
    plane = plan.planes.get(nic.plane)
    return plane.plane_of.get(nic.leaf) if plane is not None else None


PART = re.compile(r"(compute)-p([1-9])")  # one plane of a multi-plane compute plane, as part_name names it


def part_name(name: str, index: int) -> str:
    """How the exports, the jobs and `--plane` name plane `index` of a multi-plane plane: `compute-p2`."""
    return f"{name}-p{index}"


def part_of(label: str) -> tuple[str, int] | None:
    """(the intent's plane, the plane's number) of a name part_name made; None for any other name."""
    found = PART.fullmatch(label)
    return (found.group(1), int(found.group(2))) if found else None


def parts(name: str, plane: PlanePlan) -> list[tuple[str, PlanePlan]]:
    """A plane as the exports list it: itself, or for a multi-plane compute plane each plane on its own
    (`compute-p1`, `compute-p2`, ...) with its switches, its cables and its failure domains."""
    count = planes_of(plane)
    if not plane.plane_of:
        return [(name, plane)]
    out: list[tuple[str, PlanePlan]] = []
    for index in range(1, count + 1):
        mine = {d for d, k in plane.plane_of.items() if k == index}
        out.append(
            (
                part_name(name, index),
                replace(
                    plane,
                    devices=[d for d in plane.devices if d.name in mine],
                    links=[link for link in plane.links if link.a in mine or link.b in mine],
                    failure_domains=[f for f in plane.failure_domains if f.devices[0] in mine],
                    plane_of={d: index for d in mine},
                ),
            )
        )
    return out
