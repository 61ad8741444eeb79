"""How many equal-cost paths each switch should have to every other switch's loopback, from the plan alone.

eBGP path vector on the planned fabric links: a switch rejects a path that already holds its
own ASN (so spines sharing an ASN never learn each other's loopbacks, as RFC 7938 intends), and
with multipath-relax installs every neighbour offering the shortest AS path, up to maximum-paths.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from functools import partial
from typing import Any

from gpufabric.parallel import chunked, fork_map
from gpufabric.plan.model import Plan, ip

# From this many origins the path vector runs on every core (a process each); below, in this one.
PARALLEL_FROM = 256


def expected_widths(
    plan: Plan, plane: str | None, cap: dict[str, int], processes: int = 1, *, without: frozenset[str] = frozenset()
) -> dict[str, dict[str, int]]:
    """device -> {"a.b.c.d/32": width} for every remote loopback it should reach (unreachable ones left out).
    `without`: switches taken out (drained): what the others should still reach, and how widely, without them.

    One path vector per origin: all pairs, so at 32k (1,280 switches) seconds of CPU, which `processes`
    forked processes share (only from a caller with no other thread running)."""
    devices = {
        d.name: d
        for d in plan.devices()
        if (plane is None or d.plane == plane) and d.asn is not None and d.name not in without
    }
    adjacent: dict[str, list[str]] = defaultdict(list)  # one entry per link: parallel links are parallel paths
    for link in plan.links():
        if link.kind == "fabric" and link.a in devices and link.b in devices:
            adjacent[link.a].append(link.b)
            adjacent[link.b].append(link.a)
    origins = [(origin, f"{ip(od.loopback)}/32") for origin, od in devices.items() if od.loopback is not None]
    processes = processes if len(origins) >= PARALLEL_FROM else 1
    share = max(1, -(-len(origins) // max(1, processes)))  # a plane with no BGP switch has no origin
    widths: dict[str, dict[str, int]] = defaultdict(dict)
    for part in fork_map(partial(_widths_from, devices, adjacent), chunked(origins, share), processes):
        for prefix, found in part:
            for name, width in found.items():
                widths[name][prefix] = min(width, cap.get(name, width))
    return dict(widths)


def _widths_from(
    devices: dict[str, Any], adjacent: dict[str, list[str]], origins: Sequence[tuple[str, str]]
) -> list[tuple[str, dict[str, int]]]:
    asn = {n: d.asn for n, d in devices.items()}  # once, not once per origin
    return [(prefix, _paths_from(origin, asn, adjacent)) for origin, prefix in origins]


def widths_from(origin: str, asn: dict[str, int], adjacent: dict[str, list[str]]) -> dict[str, int]:
    """switch -> how many neighbours (one per link) offer it the shortest AS path to `origin`'s prefix, on
    the graph `adjacent` gives (a caller may leave switches out: those out of service)."""
    return _paths_from(origin, asn, adjacent)


def _paths_from(origin: str, asn: dict[str, int], adjacent: dict[str, list[str]]) -> dict[str, int]:
    return {receiver: len(senders) for receiver, senders in next_hops(origin, asn, adjacent).items()}


def next_hops(origin: str, asn: dict[str, int], adjacent: dict[str, list[str]]) -> dict[str, list[str]]:
    """switch -> the neighbours (one entry per link) it installs as equal-cost next hops toward `origin`'s
    prefix: the eBGP path vector above, whose widths are these lists' lengths. Following them from any switch
    walks every path ECMP may take to `origin` (`gpufabric job show` lists the switches on them)."""
    path: dict[str, tuple[int, ...]] = {origin: (asn[origin],)}  # the AS path each switch advertises
    hops: dict[str, list[str]] = {}
    frontier = [origin]
    while frontier:
        offers: dict[str, list[str]] = defaultdict(list)
        for sender in frontier:
            for receiver in adjacent[sender]:
                if receiver not in path and asn[receiver] not in path[sender]:
                    offers[receiver].append(sender)
        for receiver, senders in offers.items():
            hops[receiver] = senders
            best = min(senders)  # a deterministic best path; equal-length paths share their ASNs in a Clos
            path[receiver] = (asn[receiver], *path[best])
        frontier = sorted(offers)
    return hops
