"""How many equal-cost paths each switch should have to every other switch's loopback, from the plan alone.

eBGP path vector on the planned fabric links: a switch rejects a path that already holds its
own ASN (so spines sharing an ASN never learn each other's loopbacks, as RFC 7938 intends), and
with multipath-relax installs every neighbour offering the shortest AS path, up to maximum-paths.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from functools import partial

from gpufabric.parallel import chunked, fork_map
from gpufabric.plan.model import Plan, ip

# From this many origins the path vector runs on every core (a process each); below, in this one.
PARALLEL_FROM = 256


def expected_widths(
    plan: Plan, plane: str | None, cap: dict[str, int], processes: int = 1, *, without: frozenset[str] = frozenset()
) -> dict[str, dict[str, int]]:
    """device -> {"a.b.c.d/32": width} for every remote loopback it should reach (unreachable ones left out).
    `without`: switches taken out (drained): what the others should still reach, and how widely, without them.

    One path vector per class of twin origins (`twins`), each class's others read off it: at 32k (1,280
    switches) 2 s of CPU, which `processes` forked processes share (only from a caller with no other thread
    running)."""
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
    asn = {n: d.asn for n, d in devices.items() if d.asn is not None}
    classes = twins(origins, asn, adjacent)
    processes = processes if len(classes) >= PARALLEL_FROM else 1
    share = max(1, -(-len(classes) // max(1, processes)))  # a plane with no BGP switch has no origin
    widths: dict[str, dict[str, int]] = defaultdict(dict)
    for part in fork_map(partial(_widths_from, asn, adjacent), chunked(classes, share), processes):
        for prefix, found in part:
            for name, width in found.items():
                widths[name][prefix] = min(width, cap.get(name, width))
    return dict(widths)


Origin = tuple[str, str]  # (switch, its loopback prefix)


def twins(origins: Sequence[Origin], asn: dict[str, int], adjacent: dict[str, list[str]]) -> list[list[Origin]]:
    """The origins in classes whose members' path vectors are one another's with two switches' names swapped:
    the same neighbours (one entry per link), and the same ASN or each an ASN no other switch has (so
    exchanging the two changes neither the graph nor which paths a switch rejects as holding its ASN). A
    fabric's leaves cabled to the same spines are such a class, so one path vector serves them all (the 131k
    example's compute planes: 10,240 origins in 4,288 classes; the 32k example's: 1,280 in 584)."""
    shared = {a for a, n in Counter(asn.values()).items() if n > 1}
    classes: dict[tuple[tuple[str, ...], int | None], list[Origin]] = {}
    for origin in origins:
        name = origin[0]
        key = (tuple(sorted(adjacent[name])), asn[name] if asn[name] in shared else None)
        classes.setdefault(key, []).append(origin)
    return list(classes.values())


def _widths_from(
    asn: dict[str, int], adjacent: dict[str, list[str]], classes: Sequence[list[Origin]]
) -> list[tuple[str, dict[str, int]]]:
    out: list[tuple[str, dict[str, int]]] = []
    for (first, prefix), *others in classes:
        found = _paths_from(first, asn, adjacent)
        out.append((prefix, found))
        for other, other_prefix in others:
            # `other`'s path vector is `first`'s with the two exchanged: the same width everywhere else, and at
            # `first` the width `other` has toward `first`.
            theirs = {name: width for name, width in found.items() if name != other}
            if other in found:
                theirs[first] = found[other]
            out.append((other_prefix, theirs))
    return out


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
