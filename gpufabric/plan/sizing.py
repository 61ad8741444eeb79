"""How many switches a data plane needs, and whether the chosen radix can carry it.

Leaves are sized for a full unit (NVIDIA's SuperPOD rule: design for the whole
scalable unit even when fewer nodes are installed), spines for the leaves that
exist, and with 3 tiers pods for a full pod. Each leaf spreads its uplinks evenly
over the spines, so every spine carries the same share and ECMP is balanced.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from gpufabric.errors import GpufabricError
from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import DataPlane, Intent, NicSet, ServerGroup, StoragePlane, SwitchRole
from gpufabric.intent.rules import downlink_speed, uplink_speed
from gpufabric.intent.storage import gbps_text
from gpufabric.intent.types import PlaneName
from gpufabric.plan.ports import MLAG_PEER_CAGES, cages_needed
from gpufabric.plan.storage import leaf_demand


class SizingError(GpufabricError):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class GroupShare:
    """The part of a plane a server group occupies: whole units, in intent order."""

    group: ServerGroup
    nics: NicSet
    first_unit: int  # 0-based
    units: int


@dataclass(frozen=True, slots=True)
class Sizing:
    unit_nodes: int
    leaf_uplinks: int
    shares: tuple[GroupShare, ...]
    unit_leaves: tuple[int, ...]  # leaves in each unit
    borders: int
    border_uplinks: int
    edge_routers: int
    spines: int  # per pod with 3 tiers
    leaf_spine_links: int  # parallel links between a leaf and each spine it reaches
    spine_downlinks: int  # reserved per spine
    spine_uplinks: int  # 3 tiers only
    pods: int
    pod_units: int
    superspines_per_group: int  # one group of superspines per spine position in a pod
    spine_superspine_links: int
    # 2 tiers, rail-optimized: the spines split into groups, each the meeting place of a set of rails
    # (a leaf's uplinks reach only the spines of its group). 1: every leaf reaches every spine.
    spine_groups: int = 1
    rails: int = 0  # leaves per unit, when every unit has as many (rail-optimized)

    @property
    def spines_per_group(self) -> int:
        return self.spines // self.spine_groups

    def group_of_rail(self, rail: int) -> int:
        """0-based spine group of a 1-based rail."""
        return (rail - 1) // (self.rails // self.spine_groups) if self.spine_groups > 1 else 0

    @property
    def units(self) -> int:
        return len(self.unit_leaves)

    @property
    def leaves(self) -> int:
        return sum(self.unit_leaves)


@dataclass(frozen=True, slots=True)
class LeafTier:
    """What the leaf tier needs, before the spines are sized."""

    unit_nodes: int
    uplinks: int
    shares: tuple[GroupShare, ...]
    unit_leaves: tuple[int, ...]
    borders: int
    border_uplinks: int
    edge_routers: int


def split(role: SwitchRole, speed: int) -> int:
    return role.port_speed // speed


def _uplinks_for(role: SwitchRole, down: int, down_speed: int, target: float) -> int:
    if role.uplinks is not None:
        return role.uplinks
    return max(1, ceil(down * down_speed / (target * uplink_speed(role)) - 1e-9))


def _max_downlinks(role: SwitchRole, down_speed: int, target: float, reserved: int = 0) -> int:
    """The most downlinks a switch can take while keeping the uplinks the target needs (and `reserved` cages)."""
    ds, us = split(role, down_speed), split(role, uplink_speed(role))
    for n in range(role.ports * ds, 0, -1):
        if cages_needed(n, ds, _uplinks_for(role, n, down_speed, target), us) + reserved <= role.ports:
            return n
    return 0


def _smallest_divisor(total_links: int, per_switch: list[int], capacity: int, least: int = 1) -> int | None:
    """Fewest switches s (at least `least`) such that every member's uplinks divide by s and each has room."""
    for s in range(min(least, *per_switch), min(per_switch) + 1):
        if all(u % s == 0 for u in per_switch) and ceil(total_links / s) <= capacity:
            return s
    return None


def size_plane(intent: Intent, name: PlaneName, plane: DataPlane) -> Sizing:
    at: Path = ("planes", name)
    sw = plane.switches
    assert sw.leaf is not None and sw.spine is not None  # rules.py guarantees both
    leaf, spine = sw.leaf, sw.spine
    d_leaf = downlink_speed(leaf)
    problems: list[Problem] = []

    # LACP hosts need an MLAG/vPC peer link between the two leaves of a unit: one cage each.
    peer_cages = MLAG_PEER_CAGES if plane.host_links == "lacp" else 0
    unit_nodes = plane.unit_nodes or _max_downlinks(leaf, d_leaf, plane.oversubscription, peer_cages)
    if unit_nodes == 0:
        raise SizingError(
            [
                Problem(
                    (*at, "switches", "leaf", "ports"),
                    "a leaf has no room for any host port",
                    "use a switch with more ports or raise oversubscription",
                )
            ]
        )
    leaf_up = _uplinks_for(leaf, unit_nodes, d_leaf, plane.oversubscription)
    # A storage plane's leaves carry what the GPU servers read and write, when the intent says how much:
    # the uplinks the ratio gives are raised to it (`uplinks`, written, stays as written: the check after
    # the build says whether it carries the demand).
    demand = None
    if isinstance(plane, StoragePlane) and leaf.uplinks is None:
        demand = leaf_demand(intent, plane, unit_nodes, uplink_speed(leaf))
        if demand is not None and demand.uplinks > leaf_up:
            # A leaf spreads its uplinks evenly over a fixed number of spines: a whole number each.
            each = spine.count or 1
            leaf_up = ceil(demand.uplinks / each) * each
        else:
            demand = None
    need = cages_needed(unit_nodes, split(leaf, d_leaf), leaf_up, split(leaf, uplink_speed(leaf))) + peer_cages
    if need > leaf.ports and demand is not None:
        raise SizingError(
            [
                Problem(
                    demand.at,
                    f"{demand.why} needs {gbps_text(demand.gbps)} of uplinks on each storage leaf: "
                    f"{demand.uplinks} uplinks of {uplink_speed(leaf)}G beside {unit_nodes} host ports take "
                    f"{need} ports, a leaf has {leaf.ports}",
                    "lower unit_nodes, use leaves with more or faster ports, or ask less of the plane",
                )
            ]
        )
    if need > leaf.ports:
        best = _max_downlinks(leaf, d_leaf, plane.oversubscription, peer_cages)
        problems.append(
            Problem(
                (*at, "switches", "leaf", "ports"),
                f"a leaf with {unit_nodes} host ports at {d_leaf}G and {leaf_up} uplinks at "
                f"{uplink_speed(leaf)}G needs {need} ports, it has {leaf.ports}",
                f"lower unit_nodes to {best} or less, use a larger switch, or raise oversubscription"
                if best > 0
                else "this leaf has no room for a host at that oversubscription: use a switch with more ports, "
                "or raise oversubscription",
            )
        )

    shares, unit_leaves = _shares(intent, name, unit_nodes)
    borders, border_up, edges = 0, 0, 0
    if sw.border is not None and plane.border is not None:
        borders = sw.border.count or 2
        edges = len(plane.border.edge_routers)
        border_up = sw.border.uplinks or leaf_up
        bneed = cages_needed(
            edges, split(sw.border, downlink_speed(sw.border)), border_up, split(sw.border, uplink_speed(sw.border))
        )
        if bneed > sw.border.ports:
            problems.append(
                Problem(
                    (*at, "switches", "border", "ports"),
                    f"a border leaf needs {bneed} ports ({edges} edge links, {border_up} uplinks), "
                    f"it has {sw.border.ports}",
                    "use a larger border switch or fewer uplinks",
                )
            )
    if problems:
        raise SizingError(problems)

    tier = LeafTier(unit_nodes, leaf_up, shares, unit_leaves, borders, border_up, edges)
    try:
        if plane.tiers == 2:
            return _two_tier(at, spine, tier, plane.topology == "rail-optimized")
        return _three_tier(at, plane, spine, tier)
    except SizingError as exc:
        if demand is None:
            raise
        # The uplinks are the demand's: say so, so the reader knows which field asked for them.
        said = f"{demand.why} asks {leaf_up} uplinks of each storage leaf ({gbps_text(demand.gbps)}): "
        raise SizingError([Problem(p.path, said + p.message, p.hint) for p in exc.problems]) from None


def _shares(intent: Intent, name: PlaneName, unit_nodes: int) -> tuple[tuple[GroupShare, ...], tuple[int, ...]]:
    shares: list[GroupShare] = []
    unit_leaves: list[int] = []
    for group in intent.server_groups:
        nics = group.nics.get(name)
        if nics is None:
            continue
        units = ceil(group.count / unit_nodes)
        shares.append(GroupShare(group, nics, len(unit_leaves), units))
        unit_leaves += [len(nics.interfaces)] * units
    return tuple(shares), tuple(unit_leaves)


def spine_groups(rails: int, uplinks: int, spines: int) -> int | None:
    """Fewest spine groups (so the widest ECMP) for `spines` spines: each group serves an equal share of
    the rails, and a leaf spreads its uplinks evenly over its group's spines."""
    for groups in range(1, min(rails, spines) + 1):
        per = spines // groups
        if rails % groups == 0 and spines % groups == 0 and per <= uplinks and uplinks % per == 0:
            return groups
    return None


def _two_tier(at: Path, spine: SwitchRole, tier: LeafTier, rail_optimized: bool) -> Sizing:
    leaf_up, borders = tier.uplinks, tier.borders
    leaves = sum(tier.unit_leaves)
    capacity = spine.ports * split(spine, downlink_speed(spine))
    members = [leaf_up] * leaves + [tier.border_uplinks] * borders
    total = sum(members)
    # Rail-optimized planes whose leaves cannot reach every spine group their spines by rail: cross-rail
    # traffic goes through the servers (NVLink, PXN), so the rails need not meet on one spine.
    rails = tier.unit_leaves[0] if rail_optimized and borders == 0 and len(set(tier.unit_leaves)) == 1 else 0
    groups = 1
    if spine.count is not None:
        spines = spine.count
        fits = ceil(total / spines) <= capacity
        if not any(u % spines for u in members) and fits:
            pass
        elif rails and fits and (found := spine_groups(rails, leaf_up, spines)) is not None:
            groups = found
        else:
            hint = f"use a spine count that divides {leaf_up} and is at least {ceil(total / capacity)}, or omit count"
            if rails:
                hint = (
                    f"use a spine count of at least {ceil(total / capacity)} that splits into groups of a divisor "
                    f"of {leaf_up} spines, one group per equal share of the {rails} rails, or omit count"
                )
            raise SizingError(
                [
                    Problem(
                        (*at, "switches", "spine", "count"),
                        f"{spines} spines cannot take {leaves + borders} switches with "
                        f"{leaf_up} uplinks each evenly within {capacity} ports",
                        hint,
                    )
                ]
            )
    else:
        # Two spines at least: one spine would be a single point of failure for the plane.
        found = _smallest_divisor(total, members, capacity, least=2)
        if found is None and rails:
            found, groups = _grouped(total, rails, leaf_up, capacity)
        if found is None:
            raise SizingError(
                [
                    Problem(
                        (*at, "switches", "spine", "ports"),
                        f"{leaves + borders} leaves with {leaf_up} uplinks each need {total} spine "
                        f"ports; {leaf_up} spines of {capacity} ports carry at most "
                        f"{leaf_up * capacity}",
                        "use tiers: 3, spines with more ports, or a higher oversubscription",
                    )
                ]
            )
        spines = found
    return Sizing(
        tier.unit_nodes,
        leaf_up,
        tier.shares,
        tier.unit_leaves,
        borders,
        tier.border_uplinks,
        tier.edge_routers,
        spines,
        leaf_up // (spines // groups),
        capacity,
        0,
        1,
        len(tier.unit_leaves),
        0,
        0,
        groups,
        rails,
    )


def _grouped(total: int, rails: int, uplinks: int, capacity: int) -> tuple[int | None, int]:
    """Fewest spines that carry `total` uplinks when grouped by rail, and their group count."""
    for spines in range(max(2, ceil(total / capacity)), rails * uplinks + 1):
        groups = spine_groups(rails, uplinks, spines)
        if groups is not None and ceil(total / spines) <= capacity:
            return spines, groups
    return None, 1


def _three_tier(at: Path, plane: DataPlane, spine: SwitchRole, tier: LeafTier) -> Sizing:
    leaf_up, borders, unit_leaves = tier.uplinks, tier.borders, tier.unit_leaves
    problems: list[Problem] = []
    d_spine = downlink_speed(spine)
    spine_down = _max_downlinks(spine, d_spine, plane.oversubscription)
    per_pod = spine.count or leaf_up  # one link from every leaf to every pod spine unless told otherwise
    if leaf_up % per_pod:
        raise SizingError(
            [
                Problem(
                    (*at, "switches", "spine", "count"),
                    f"{leaf_up} leaf uplinks do not spread evenly over {per_pod} spines per pod",
                    f"use a spine count per pod that divides {leaf_up}",
                )
            ]
        )
    links = leaf_up // per_pod
    widest = max(unit_leaves) if unit_leaves else 1
    pod_units = plane.pod_units or max(1, spine_down // (widest * links))
    pod_leaves = pod_units * widest + borders
    if pod_leaves * links > spine_down:
        problems.append(
            Problem(
                (*at, "pod_units"),
                f"a pod of {pod_units} units has {pod_leaves} leaves; a spine takes {spine_down} "
                f"downlinks at the target, {pod_leaves * links} are needed",
                f"use pod_units: {max(1, (spine_down // links - borders) // widest)} or less",
            )
        )
    spine_up = _uplinks_for(spine, spine_down, d_spine, plane.oversubscription)
    pods = max(1, ceil(len(unit_leaves) / pod_units))
    superspine = plane.switches.superspine
    assert superspine is not None
    capacity = superspine.ports * split(superspine, downlink_speed(superspine))
    if superspine.count is not None:
        group = superspine.count // per_pod
        if superspine.count % per_pod or group == 0 or spine_up % group or pods * spine_up // group > capacity:
            problems.append(
                Problem(
                    (*at, "switches", "superspine", "count"),
                    f"{superspine.count} superspines do not split into {per_pod} equal groups that "
                    f"carry {pods} pods x {spine_up} spine uplinks",
                    "omit count to compute it",
                )
            )
    else:
        found = _smallest_divisor(pods * spine_up, [spine_up], capacity)
        if found is None:
            problems.append(
                Problem(
                    (*at, "switches", "superspine", "ports"),
                    f"{pods} pods with {spine_up} uplinks per spine need more superspine ports "
                    f"than {spine_up} superspines of {capacity} ports per group have",
                    "use larger superspines, larger pods, or a higher oversubscription",
                )
            )
            found = 1
        group = found
    if problems:
        raise SizingError(problems)
    return Sizing(
        tier.unit_nodes,
        leaf_up,
        tier.shares,
        unit_leaves,
        borders,
        tier.border_uplinks,
        tier.edge_routers,
        per_pod,
        links,
        spine_down,
        spine_up,
        pods,
        pod_units,
        group,
        spine_up // group,
    )
