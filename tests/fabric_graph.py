"""A plane's switches as a graph, to judge what taking some of them down does to the paths between leaves."""

from __future__ import annotations

from collections.abc import Iterable

from gpufabric.plan.model import PlanePlan


def switch_graph(plane: PlanePlan) -> dict[str, set[str]]:
    """Each switch's neighbour switches over the plane's fabric links (parallel links once)."""
    graph: dict[str, set[str]] = {d.name: set() for d in plane.devices}
    for link in plane.links:
        if link.kind == "fabric":
            graph[link.a].add(link.b)
            graph[link.b].add(link.a)
    return graph


def cut_off_leaves(plane: PlanePlan, graph: dict[str, set[str]], down: Iterable[str]) -> set[str]:
    """The leaves (outside `down`) that no longer reach the first such leaf through switches that are up."""
    off = set(down)
    leaves = [d.name for d in plane.devices if d.role == "leaf" and d.name not in off]
    if not leaves:
        return set()
    seen, todo = {leaves[0]}, [leaves[0]]
    while todo:
        for peer in graph[todo.pop()]:
            if peer not in seen and peer not in off:
                seen.add(peer)
                todo.append(peer)
    return {leaf for leaf in leaves if leaf not in seen}
