"""Topology drawings as Graphviz DOT, one graph per plane, and SVG where `dot` is installed.

Tiers are drawn top to bottom, each in plan order from left to right (pods, units, rails); every
rail has its own colour; spine groups and pods are clusters. Parallel cables collapse into one line
per pair of switches, labelled once in the legend when every bundle is alike. Servers collapse into
one node per unit. Large planes are summarised: the first units are drawn, the rest counted in one
node, so even a 32k-GPU plane draws; past the first of a tier, spines and superspines are counted
in one node too, and so are the mgmt switches of an OOB plane of hundreds (the 131k example's 624).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field

from gpufabric.plan.converged import describe
from gpufabric.plan.model import Device, Plan, PlanePlan

TIER_RANK = {"superspine": 0, "spine": 1, "border": 2, "leaf": 2, "mgmt": 2}
SVG_MAX_NODES = 600  # beyond this dot takes minutes and the picture is unreadable anyway
DRAWN_UNITS = 2  # a plane with more units draws these and counts the rest
DRAWN_PER_TIER = 8  # spines (superspines) drawn per group before the rest are counted
MGMT_DRAWN_UP_TO = 64  # OOB mgmt switches all drawn up to this many; beyond, as spines: the first, the rest counted
NL = "\\n"  # a line break inside a DOT label
ADDED_COLOUR = "#00a651"  # what `gpufabric diff --drawing` adds; no rail uses it
RAIL_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")


@dataclass(frozen=True, slots=True)
class Added:
    """What a change adds, drawn in ADDED_COLOUR: switches and servers by name, cables by lower end."""

    names: frozenset[str] = frozenset()
    links: frozenset[tuple[str, str, str]] = field(default_factory=frozenset)  # plane, lower device, its port


def _q(text: str) -> str:
    return '"' + text.replace('"', r"\"") + '"'


def _natural(name: str) -> tuple[tuple[int, int | str], ...]:
    """`leaf10` after `leaf9`: numbers compare as numbers, and never with text."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", name) if p)


def _order(d: Device) -> tuple[object, ...]:
    return (d.pod or 0, d.unit or 0, d.side or d.rail or 0, _natural(d.name))


def _spans(numbers: list[int]) -> str:
    """[2, 4, 5, 6] -> "2, 4-6"."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _colour(rail: int | None) -> str:
    return RAIL_COLOURS[(rail - 1) % len(RAIL_COLOURS)] if rail else "#555555"


class _View:
    """What of a plane is drawn: the first units in full, the rest counted; spines per group up to a cap."""

    def __init__(self, plan: Plan, plane: PlanePlan, added: frozenset[str] = frozenset()) -> None:
        self.plane = plane
        units = sorted({d.unit for d in plane.devices if d.role == "leaf" and d.unit})
        new = sorted({d.unit for d in plane.devices if d.role == "leaf" and d.unit and d.name in added})
        # A change is drawn where it happens: the first unit for context, then the units it adds.
        drawn = units[:1] + new if new else units
        self.drawn_units = set(drawn[:DRAWN_UNITS])
        self.hidden_units = [u for u in units if u not in self.drawn_units]
        self.hidden = "unit" + ("s " if len(self.hidden_units) > 1 else " ") + _spans(self.hidden_units)
        self.drawn_pods = {d.pod for d in plane.devices if d.role == "leaf" and d.unit in self.drawn_units}
        self.unit_of = {s.name: s.units.get(plane.name) for s in plan.servers}
        self.other_plane = {d.name: d.plane for d in plan.devices() if d.plane != plane.name}
        self.group_of = self._spine_groups()
        self.devices = {d.name: d for d in plane.devices}
        self.hidden_upper: dict[str, str] = {}  # a spine not drawn -> the node that counts it
        self._cap_upper()

    def _spine_groups(self) -> dict[str, int]:
        """Spine -> its group (the rails whose leaves reach it), where the plane has several."""
        rails_of: dict[str, set[int]] = {}
        leaves = {d.name: d for d in self.plane.devices if d.role == "leaf"}
        for link in self.plane.links:
            if link.kind == "fabric" and link.a in leaves and leaves[link.a].rail:
                rails_of.setdefault(link.b, set()).add(leaves[link.a].rail or 0)
        keys = sorted({frozenset(r) for r in rails_of.values()}, key=min)
        return {s: keys.index(frozenset(r)) + 1 for s, r in rails_of.items()} if len(keys) > 1 else {}

    def _cap_upper(self) -> None:
        tiers: dict[tuple[str, int, int], list[Device]] = {}
        many_mgmt = sum(d.role == "mgmt" for d in self.plane.devices) > MGMT_DRAWN_UP_TO
        for d in self.plane.devices:
            if d.role in ("spine", "superspine") or (d.role == "mgmt" and many_mgmt):
                tiers.setdefault((d.role, d.pod or 0, self.group_of.get(d.name, 0)), []).append(d)
        hidden_pods = sorted({pod for (_, pod, _) in tiers if pod and pod not in self.drawn_pods})
        for (role, pod, group), members in tiers.items():
            members.sort(key=_order)
            if pod in hidden_pods:  # a pod whose units are counted, not drawn: its spines are counted too
                node = f"{role}s of pods {hidden_pods[0]}-{hidden_pods[-1]}"
                for d in members:
                    self.hidden_upper[d.name] = node
                continue
            rest = members[DRAWN_PER_TIER:]
            if rest:
                where = f" pod {pod}" if pod else f" group {group}" if group else ""
                node = f"{len(rest)} more {'mgmt switches' if role == 'mgmt' else role + 's'}{where}"
                for d in rest:
                    self.hidden_upper[d.name] = node

    def node_for(self, end: str) -> tuple[str, str]:
        """(node name, what it stands for) of a link end."""
        if end in self.devices:
            d = self.devices[end]
            if d.role == "leaf" and d.unit and d.unit not in self.drawn_units:
                return self.hidden, "leaves"
            if end in self.hidden_upper:
                return self.hidden_upper[end], "upper"
            return end, "switch"
        if end in self.other_plane:
            return f"{self.other_plane[end]} switches", "switches"
        if end in self.unit_of:
            unit = self.unit_of[end]
            if unit is not None and unit not in self.drawn_units and self.hidden_units:
                return self.hidden, "leaves"
            return (f"servers unit {unit}" if unit is not None else "servers"), "servers"
        return end, "external"


def plane_dot(plan: Plan, plane: PlanePlan, added: Added | None = None) -> str:
    view = _View(plan, plane, added.names if added is not None else frozenset())
    nodes: dict[str, tuple[str, set[str]]] = {}  # node -> (kind, members)
    edges: dict[tuple[str, str], tuple[int, int, int | None]] = {}  # (upper, lower) -> (count, speed, rail)
    new_edges: Counter[tuple[str, str]] = Counter()  # (upper, lower) -> cables the change adds
    for link in plane.links:
        (a, a_kind), (b, b_kind) = view.node_for(link.a), view.node_for(link.b)
        nodes.setdefault(a, (a_kind, set()))[1].add(link.a)
        nodes.setdefault(b, (b_kind, set()))[1].add(link.b)
        if a == b:
            continue
        low = view.devices.get(link.a)
        rail = low.rail if low is not None and low.role == "leaf" else None
        count, speed, _ = edges.get((b, a), (0, link.speed, rail))
        edges[(b, a)] = (count + 1, speed, rail)
        if added is not None and (link.plane, link.a, link.a_port) in added.links:
            new_edges[(b, a)] += 1
    for d in plane.devices:
        node, kind = view.node_for(d.name)
        nodes.setdefault(node, (kind, set()))[1].add(d.name)

    # Bundles are compared per pair of tiers (leaf to spine, servers to leaf, ...): a pair whose bundles
    # are all alike is described once in the legend; the others are labelled line by line.
    def tiers(edge: tuple[str, str]) -> str:
        return " to ".join(_tier(view, nodes, n) for n in edge)

    def summary(edge: tuple[str, str]) -> bool:
        return any(nodes[n][0] in ("leaves", "upper") for n in edge)

    kinds: dict[str, Counter[tuple[int, int]]] = {}
    for edge, (count, speed, _) in edges.items():
        if not summary(edge):
            kinds.setdefault(tiers(edge), Counter())[(count, speed)] += 1
    alike = {k for k, c in kinds.items() if len(c) == 1}
    legend = ""
    for k in sorted(alike):
        (count, speed), _ = kinds[k].most_common(1)[0]
        legend += NL + f"{k}: {count} x {speed}G per line" if count > 1 else NL + f"{k}: {speed}G per line"
    if view.hidden_units:
        legend += NL + f"{view.hidden} wired as the units drawn, counted"
    if added is not None:
        new_devices = sum(1 for d in plane.devices if d.name in added.names)
        cables = sum(new_edges.values())
        legend += NL + f"green: what this change adds or moves ({new_devices} switches, {cables} cables)"
    if plane.carried:  # one fabric, several planes: say which ride it, and how
        legend += NL + "carries " + ", ".join(describe(c) for c in plane.carried)
    title = f"{plan.intent.fabric.name}: {plane.name} ({plane.topology}){legend}"
    lines = [
        f"graph {_q(plane.name)} {{",
        f'  graph [rankdir=TB, newrank=true, remincross=false, splines=line, nodesep=0.15, fontname="Helvetica", '
        f"labelloc=t, label={_q(title)}];",
        '  node [shape=box, style=rounded, fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=8];',
    ]
    lines += _nodes(view, nodes, added.names if added is not None else frozenset())
    for (upper, lower), (count, speed, rail) in sorted(edges.items(), key=_edge_order):
        fresh = new_edges[(upper, lower)]
        if summary((upper, lower)):  # the units counted, not drawn: one quiet line to each switch they reach
            colour = _q(ADDED_COLOUR) if fresh else "gray"
            lines.append(f"  {_q(upper)} -- {_q(lower)} [color={colour}, style=dashed];")
            continue
        text = f"{count}x{speed}G" if count > 1 else f"{speed}G"
        label = "" if tiers((upper, lower)) in alike else f", label={_q(text)}"
        if fresh:  # a bundle the change adds to: green and bold; where only some of its cables are new, how many
            label = (f", label={_q(f'+{fresh}')}" if fresh < count else label) + ", penwidth=3"
            lines.append(f"  {_q(upper)} -- {_q(lower)} [color={_q(ADDED_COLOUR)}{label}];")
            continue
        lines.append(f"  {_q(upper)} -- {_q(lower)} [color={_q(_colour(rail))}{label}];")
    lines += _ranks(view, nodes)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _tier(view: _View, nodes: dict[str, tuple[str, set[str]]], node: str) -> str:
    kind, members = nodes[node]
    if kind in ("switch", "upper"):
        return view.devices[next(iter(members))].role
    return {"servers": "servers", "leaves": "leaf", "switches": "switches"}.get(kind, "edge")


def _edge_order(edge: tuple[tuple[str, str], object]) -> tuple[object, ...]:
    (upper, lower), _ = edge
    return (_natural(upper), _natural(lower))


def _cluster(view: _View, d: Device) -> str:
    """The cluster a switch is drawn in (its pod, or its spine group), or "" for none."""
    if d.pod and d.pod in view.drawn_pods:
        return f"pod {d.pod}"
    return f"spine group {view.group_of[d.name]}" if d.name in view.group_of else ""


def _nodes(view: _View, nodes: dict[str, tuple[str, set[str]]], added: frozenset[str]) -> list[str]:
    out: list[str] = []
    clusters: dict[str, list[str]] = {}
    fill = f', style="rounded,filled", fillcolor={_q(ADDED_COLOUR + "40")}'  # a light green behind what is new
    for node, (kind, members) in sorted(nodes.items(), key=lambda n: _natural(n[0])):
        new = len(members & added)
        if kind == "switch":
            d = view.devices[node]
            label = d.name + (f"\\nAS{d.asn}" if d.asn else "")
            colour = f", color={_q(_colour(d.rail))}, penwidth=2" if d.role == "leaf" and d.rail else ""
            line = f"  {_q(node)} [label={_q(label)}{colour}{fill if new else ''}];"
            clusters.setdefault(_cluster(view, d), []).append(line)
        elif kind == "upper":
            d = view.devices[next(iter(members))]
            style = f'style="dashed,filled", fillcolor={_q(ADDED_COLOUR + "40")}' if new else "style=dashed"
            clusters.setdefault(_cluster(view, d), []).append(f"  {_q(node)} [shape=box, {style}];")
        elif kind == "leaves":
            leaves = sum(1 for m in members if m in view.devices)
            servers = len(members) - leaves
            label = node + NL + f"{leaves} leaves, {servers} servers" + (NL + f"{new} new" if new else "")
            out.append(f"  {_q(node)} [shape=folder, label={_q(label)}{fill if new else ''}];")
        elif kind == "external":
            out.append(f"  {_q(node)} [shape=ellipse, style=dashed];")
        else:
            label = node + NL + f"{len(members)} {kind}" + (NL + f"{new} new" if new else "")
            out.append(f"  {_q(node)} [shape=folder, label={_q(label)}{fill if new else ''}];")
    # Clusters are declared first: with remincross off, dot keeps the declaration order between a
    # cluster and the nodes outside it, and what is counted (units 3-64, spines of later pods) comes last.
    out = clusters.pop("", []) + out  # switches outside any pod or spine group
    grouped: list[str] = []
    for i, (key, lines) in enumerate(sorted(clusters.items(), key=lambda c: _natural(c[0]))):
        grouped.append(f"  subgraph cluster_{i} {{ label={_q(key)}; style=dashed; color=gray;")
        grouped += [f"  {m}" for m in lines]
        grouped.append("  }")
    return grouped + out


def _ranks(view: _View, nodes: dict[str, tuple[str, set[str]]]) -> list[str]:
    """Each tier on one row, in plan order, held left to right by invisible edges."""
    rows: dict[int, list[tuple[tuple[object, ...], str]]] = {}
    for node, (kind, members) in nodes.items():
        if kind in ("switch", "upper"):
            d = view.devices[next(iter(members))]
            key = (d.pod or 0, view.group_of.get(d.name, 0), int(kind == "upper"), _order(d))
            rows.setdefault(TIER_RANK.get(d.role, 2), []).append((key, node))
        elif kind == "leaves":
            rows.setdefault(2, []).append(((2, ()), node))
        elif kind == "external":
            rows.setdefault(-1, []).append(((0, _natural(node)), node))
        else:
            rows.setdefault(3, []).append(((0, _natural(node)), node))
    out = []
    for _, row in sorted(rows.items()):
        names = [n for _, n in sorted(row, key=lambda r: r[0])]
        out.append("  { rank=same; " + " ".join(_q(n) for n in names) + " }")
        if len(names) > 1:
            out.append("  " + " -- ".join(_q(n) for n in names) + " [style=invis];")
    return out


def render_files(plan: Plan, added: Added | None = None) -> dict[str, str]:
    return {f"{name}.dot": plane_dot(plan, plane, added) for name, plane in plan.planes.items()}


def render(plan: Plan) -> str:
    return "".join(render_files(plan).values())


def drawn_nodes(dot_text: str) -> int:
    return len(re.findall(r'^\s+"[^"]+" \[', dot_text, re.M))


def svg(dot_text: str, nodes: int, timeout: float = 120.0, fmt: str = "svg") -> bytes | None:
    """SVG (or PNG) from DOT, or None when Graphviz is missing or the graph is too large to be worth drawing."""
    exe = shutil.which("dot")
    if exe is None or nodes > SVG_MAX_NODES:
        return None
    done = subprocess.run([exe, f"-T{fmt}"], input=dot_text.encode(), capture_output=True, timeout=timeout, check=False)
    return done.stdout if done.returncode == 0 else None
