"""Which rails of a rail-optimized plane meet on common spines, read from the plan's links.

Same-rail GPUs must be at most leaf-spine-leaf apart; rails that share no spine reach each other
only through the servers (NVLink, PXN), which is what a rail-optimized design intends.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from gpufabric.plan.model import PlanePlan


@dataclass(frozen=True)
class RailReach:
    same_rail_two_hops: bool  # every two leaves of a rail share a spine
    rail_groups: list[list[int]]  # rails that meet on common spines, each group sorted

    def apart(self) -> list[tuple[list[int], list[int]]]:
        """Pairs of rail groups whose GPUs meet only through the servers."""
        g = self.rail_groups
        return [(g[i], g[j]) for i in range(len(g)) for j in range(i + 1, len(g))]


def rail_reach(plane: PlanePlan) -> RailReach | None:
    leaves = {d.name: d.rail for d in plane.devices if d.role == "leaf" and d.rail is not None}
    if plane.topology != "rail-optimized" or plane.tiers != 2 or not leaves:
        return None
    spines_of: dict[str, set[str]] = defaultdict(set)
    for link in plane.links:
        if link.kind == "fabric" and link.a in leaves:
            spines_of[link.a].add(link.b)
    # A multi-plane compute plane: a rail's leaves meet within their own plane (the planes never meet),
    # and every plane is built alike, so the first plane's rails say how rails meet.
    by_plane_rail: dict[tuple[int, int], list[str]] = defaultdict(list)
    for name, rail in leaves.items():
        by_plane_rail[(plane.plane_of.get(name, 1), rail)].append(name)
    two_hops = all(
        spines_of[a] & spines_of[b]
        for names in by_plane_rail.values()
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    )
    by_rail = {rail: names for (index, rail), names in by_plane_rail.items() if index == 1}
    spines_of_rail = {r: set().union(*(spines_of[n] for n in names)) for r, names in by_rail.items()}
    groups: list[list[int]] = []
    for rail in sorted(by_rail):
        for group in groups:
            if any(spines_of_rail[rail] & spines_of_rail[other] for other in group):
                group.append(rail)
                break
        else:
            groups.append([rail])
    return RailReach(two_hops, groups)
