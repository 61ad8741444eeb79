"""`Behind` (each plane read once, the graph's articulation points found once) answers exactly what a
plain reading of the plan does, switch by switch: on the shipped plans, and on plans whose links were cut
until some switch became the only way between two parts of a plane."""

from __future__ import annotations

import copy
import random

import pytest

from gpufabric.plan.model import Plan
from gpufabric.scheduler.behind import FABRIC_KINDS, Behind, _articulation_points, servers_behind
from tests.conftest import INVENTORY, example_plan


def reference(plan: Plan, switch: str) -> list[tuple[str, list[tuple[str, tuple[str, ...], tuple[str, ...]]]]]:
    """The definition, read the long way: drop the switch, find the pieces of its plane; the piece with the most
    host leaves (of the switch's own plane of a multi-plane fabric) is the rest of the plane (none on a tie); an
    attachment is cut off when none of its leaves but the switch is in the rest or on another plane of a
    multi-plane fabric (which the switch's loss leaves untouched)."""
    device = next(d for d in plan.devices() if d.name == switch)
    plane = plan.planes[device.plane]
    if device.role == "mgmt" or plane.name == "oob":
        return []
    graph: dict[str, set[str]] = {d.name: set() for d in plane.devices if d.name != switch}
    for link in plane.links:
        if link.kind in FABRIC_KINDS and switch not in (link.a, link.b):
            graph.setdefault(link.a, set()).add(link.b)
            graph.setdefault(link.b, set()).add(link.a)
    piece: dict[str, int] = {}
    for start in graph:
        if start not in piece:
            todo, piece[start] = [start], len(piece)
            while todo:
                for other in graph[todo.pop()]:
                    if other not in piece:
                        piece[other] = piece[start]
                        todo.append(other)
    part = plane.plane_of.get(switch, 0)
    counts: dict[int, int] = {}
    for leaf in {n.leaf for s in plan.servers for n in s.nics if n.plane == plane.name} - {switch}:
        if leaf in piece and plane.plane_of.get(leaf, 0) == part:
            counts[piece[leaf]] = counts.get(piece[leaf], 0) + 1
    best = [p for p, c in counts.items() if c == max(counts.values())]
    main = set(best) if len(best) == 1 else set()

    def reaches(leaf: str) -> bool:
        return plane.plane_of.get(leaf, 0) != part or (leaf != switch and piece.get(leaf) in main)

    out = []
    for server in plan.servers:
        groups: dict[str, list] = {}
        for nic in server.nics:
            if nic.plane == plane.name:
                groups.setdefault(nic.bond or f"\0{nic.interface}", []).append(nic)
        cut = []
        for nics in groups.values():
            leaves = tuple(dict.fromkeys(n.leaf for n in nics))
            if not any(reaches(leaf) for leaf in leaves):
                cut.append((plane.name, tuple(n.interface for n in nics), leaves))
        if cut:
            out.append((server.name, cut))
    return out


def answered(behind: Behind, switch: str) -> list[tuple[str, list[tuple[str, tuple[str, ...], tuple[str, ...]]]]]:
    return [(s.name, [(n.plane, n.interfaces, n.leaves) for n in s.nics]) for s in behind(switch)]


@pytest.mark.parametrize(
    "fabric", ["fabric.yml", "examples/superpod-1su.yml", "examples/multi-vendor.yml", "examples/multiplane-b300.yml"]
)
def test_every_switch_of_a_shipped_plan_as_the_definition_says(fabric: str) -> None:
    plan = example_plan(INVENTORY / fabric)
    behind = Behind(plan)
    for device in plan.devices():
        assert answered(behind, device.name) == reference(plan, device.name), device.name
        assert servers_behind(plan, device.name) == behind(device.name)  # the one-switch call: the same


def test_plans_with_cut_links_where_switches_split_their_plane() -> None:
    """Links are cut at random until switches become articulation points (a spine some leaf's only way up,
    a leaf that is the only link between two spines): `Behind` takes the long way for exactly those."""
    base = example_plan(INVENTORY / "examples/superpod-1su.yml")
    chances = random.Random(7)
    splitting_seen = 0
    for _ in range(12):
        plan = copy.deepcopy(base)
        for plane in plan.planes.values():
            fabric = [link for link in plane.links if link.kind in FABRIC_KINDS]
            gone = {id(link) for link in chances.sample(fabric, k=len(fabric) * 2 // 3)}
            plane.links = [link for link in plane.links if id(link) not in gone]
        behind = Behind(plan)
        for device in plan.devices():
            assert answered(behind, device.name) == reference(plan, device.name), device.name
        splitting_seen += sum(len(index.splitting) for index in behind._planes.values())
    assert splitting_seen > 0, "the cuts made no switch an articulation point: the long way went untested"


def test_a_multi_plane_leaf_cuts_off_its_own_nics_only() -> None:
    """A multi-plane compute fabric is one part per plane, none reaching another: equal parts, not a plane
    fallen into equal halves. A plane's leaf cuts off the NICs cabled to it, a spine with a twin nothing (it
    once counted every server of the cluster behind every compute switch)."""
    plan = example_plan(INVENTORY / "examples/multiplane-b300.yml")
    behind = Behind(plan)
    compute = [d for d in plan.devices() if d.plane == "compute"]
    for leaf in (d.name for d in compute if d.role == "leaf"):
        cabled = {(s.name, n.interface) for s in plan.servers for n in s.nics if n.leaf == leaf}
        assert cabled, leaf
        assert {(s.name, i) for s in behind(leaf) for n in s.nics for i in n.interfaces} == cabled, leaf
    assert all(behind(d.name) == [] for d in compute if d.role == "spine")
    assert len(plan.servers) > max(len(behind(d.name)) for d in compute)


def test_articulation_points_of_small_graphs() -> None:
    chain = {"a": {"b"}, "b": {"a", "c"}, "c": {"b"}}
    assert _articulation_points(chain) == {"b"}
    ring = {"a": {"b", "c"}, "b": {"a", "c"}, "c": {"a", "b"}}
    assert _articulation_points(ring) == set()
    # Two rings joined at d, and an island: d alone splits, the island counts for nothing.
    bow = {"a": {"b", "d"}, "b": {"a", "d"}, "d": {"a", "b", "e", "f"}, "e": {"d", "f"}, "f": {"d", "e"}, "x": set()}
    assert _articulation_points(bow) == {"d"}
    star = {"hub": {"1", "2", "3"}, "1": {"hub"}, "2": {"hub"}, "3": {"hub"}}
    assert _articulation_points(star) == {"hub"}


def test_one_plan_read_once_for_a_whole_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of the 32k example's leaves costs one reading of their plane, not one per leaf, and a
    second round of the same leaves reads nothing."""
    import gpufabric.scheduler.behind as behind_module

    readings: list[str] = []
    real = behind_module._PlaneIndex.__init__

    def counted(self: object, plan: Plan, plane: object) -> None:
        readings.append(plane.name)  # type: ignore[attr-defined]
        real(self, plan, plane)  # type: ignore[arg-type]

    monkeypatch.setattr(behind_module._PlaneIndex, "__init__", counted)
    plan = example_plan(INVENTORY / "examples/three-tier-32k.yml")
    leaves = [d.name for d in plan.devices() if d.role == "leaf"][:128]
    behind = Behind(plan)
    first = [behind(name) for name in leaves]
    assert all(first)  # a rail leaf holds its servers
    assert [behind(name) for name in leaves] == first
    assert readings == ["compute"]
    assert behind(next(d.name for d in plan.devices() if d.role == "spine")) == []  # every leaf has other spines
    assert readings == ["compute"]
