"""How many equal-cost paths each switch should have to every other switch's loopback, from the plan alone.

eBGP path vector on the planned fabric links: a switch rejects a path that already holds its
own ASN (so spines sharing an ASN never learn each other's loopbacks, as RFC 7938 intends), and
with multipath-relax installs every neighbour offering the shortest AS path, up to maximum-paths.
"""

from __future__ import annotations

from collections import defaultdict

from gpufabric.plan.model import Plan, ip


def expected_widths(plan: Plan, plane: str | None, cap: dict[str, int]) -> dict[str, dict[str, int]]:
    """device -> {"a.b.c.d/32": width} for every remote loopback it should reach (unreachable ones left out)."""
    devices = {d.name: d for d in plan.devices() if (plane is None or d.plane == plane) and d.asn is not None}
    adjacent: dict[str, list[str]] = defaultdict(list)  # one entry per link: parallel links are parallel paths
    for link in plan.links():
        if link.kind == "fabric" and link.a in devices and link.b in devices:
            adjacent[link.a].append(link.b)
            adjacent[link.b].append(link.a)
    widths: dict[str, dict[str, int]] = defaultdict(dict)
    for origin, od in devices.items():
        if od.loopback is None:
            continue
        prefix = f"{ip(od.loopback)}/32"
        for name, width in _paths_from(origin, devices, adjacent).items():
            widths[name][prefix] = min(width, cap.get(name, width))
    return dict(widths)


def _paths_from(origin: str, devices: dict, adjacent: dict[str, list[str]]) -> dict[str, int]:  # type: ignore[type-arg]
    asn = {n: d.asn for n, d in devices.items()}
    path: dict[str, tuple[int, ...]] = {origin: (asn[origin],)}  # the AS path each switch advertises
    width: dict[str, int] = {}
    frontier = [origin]
    while frontier:
        offers: dict[str, list[str]] = defaultdict(list)
        for sender in frontier:
            for receiver in adjacent[sender]:
                if receiver not in path and asn[receiver] not in path[sender]:
                    offers[receiver].append(sender)
        for receiver, senders in offers.items():
            width[receiver] = len(senders)
            best = min(senders)  # a deterministic best path; equal-length paths share their ASNs in a Clos
            path[receiver] = (asn[receiver], *path[best])
        frontier = sorted(offers)
    return width
