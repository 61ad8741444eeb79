"""Topology drawings as Graphviz DOT, one graph per plane, and SVG where `dot` is installed.

Parallel cables collapse into one edge labelled with their count; servers collapse
into one node per unit, and (on the OOB plane) other planes' switches into one node
per plane, so that even a 32k-GPU plane draws.
"""

from __future__ import annotations

import shutil
import subprocess

from gpufabric.plan.model import Plan, PlanePlan

TIER_RANK = {"superspine": 0, "spine": 1, "border": 2, "leaf": 2, "mgmt": 2}
SVG_MAX_NODES = 600  # beyond this dot takes minutes and the picture is unreadable anyway


def _q(text: str) -> str:
    return '"' + text.replace('"', r"\"") + '"'


class _Grouper:
    """Maps a link end that is not one of this plane's switches to the node that stands for it."""

    def __init__(self, plan: Plan, plane: PlanePlan) -> None:
        self.unit = {s.name: s.units.get(plane.name) for s in plan.servers}
        self.other_plane = {d.name: d.plane for d in plan.devices() if d.plane != plane.name}

    def node_for(self, end: str) -> tuple[str, str]:
        """(node name, what it groups)."""
        if end in self.other_plane:
            return f"{self.other_plane[end]} switches", "switches"
        if end in self.unit:
            unit = self.unit[end]
            return (f"servers unit {unit}" if unit is not None else "servers"), "servers"
        return end, "external"


def plane_dot(plan: Plan, plane: PlanePlan) -> str:
    own = {d.name for d in plane.devices}
    grouper = _Grouper(plan, plane)
    lines = [
        f"graph {_q(plane.name)} {{",
        f'  graph [rankdir=TB, splines=line, fontname="Helvetica", '
        f"label={_q(f'{plan.intent.fabric.name}: {plane.name} ({plane.topology})')}];",
        '  node [shape=box, style=rounded, fontname="Helvetica", fontsize=10];',
    ]
    ranks: dict[int, list[str]] = {}
    for d in plane.devices:
        ranks.setdefault(TIER_RANK.get(d.role, 2), []).append(d.name)
        label = d.name + (f"\\nAS{d.asn}" if d.asn else "")
        lines.append(f"  {_q(d.name)} [label={_q(label)}];")
    edges: dict[tuple[str, str], tuple[int, int]] = {}
    grouped: dict[str, tuple[str, set[str]]] = {}
    for link in plane.links:
        ends = []
        for end in (link.a, link.b):
            if end in own:
                ends.append(end)
                continue
            node, what = grouper.node_for(end)
            grouped.setdefault(node, (what, set()))[1].add(end)
            ends.append(node)
        count, speed = edges.get((ends[0], ends[1]), (0, link.speed))
        edges[(ends[0], ends[1])] = (count + 1, speed)
    for node, (what, members) in grouped.items():
        if what == "external":
            lines.append(f"  {_q(node)} [shape=ellipse, style=dashed];")
            ranks.setdefault(-1, []).append(node)
            continue
        label = node + "\\n" + f"{len(members)} {what}"
        lines.append(f"  {_q(node)} [shape=folder, label={_q(label)}];")
        ranks.setdefault(3, []).append(node)
    for (a, b), (count, speed) in edges.items():
        label = f"{count}x{speed}G" if count > 1 else f"{speed}G"
        lines.append(f"  {_q(b)} -- {_q(a)} [label={_q(label)}, fontsize=8];")
    for _rank, names in sorted(ranks.items()):
        lines.append("  { rank=same; " + " ".join(_q(n) for n in names) + " }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_files(plan: Plan) -> dict[str, str]:
    return {f"{name}.dot": plane_dot(plan, plane) for name, plane in plan.planes.items()}


def render(plan: Plan) -> str:
    return "".join(render_files(plan).values())


def svg(dot_text: str, nodes: int, timeout: float = 120.0) -> bytes | None:
    """SVG from DOT, or None when Graphviz is missing or the graph is too large to be worth drawing."""
    exe = shutil.which("dot")
    if exe is None or nodes > SVG_MAX_NODES:
        return None
    done = subprocess.run([exe, "-Tsvg"], input=dot_text.encode(), capture_output=True, timeout=timeout, check=False)
    return done.stdout if done.returncode == 0 else None
