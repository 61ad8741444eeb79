"""Proof that a rollout kept its capacity budget, from its log alone: independent of the planner.

The log is either a push's audit trail (its batch records name each batch's switches and the figures
the planner claimed) or the fleet simulator's event log (when each switch went out of service, drain
or commit, and came back, undrained or confirmed). From it come the sets of switches out of service
together: a batch's, or, from the simulator's times, every largest set at any moment. Each set is
judged on the plan alone, with other code than the planner's (gpufabric.push.budget):

- ECMP: the plan's BGP path-vector model (gpufabric.plan.ecmp) run with the set's switches removed,
  from one leaf of each group of leaves with the same fabric links. A leaf's width toward another
  leaf, beside its width with nothing out, is its group's remaining share (no path: 0). A transit
  switch counts while it still has a route (one with none is withdrawn by its neighbours, whose own
  widths show the loss).
- Rails: every server's NICs, per plane, on switches of the set.
- Reach: per kind of port where servers or the edge attach (host, management, edge), the share on
  switches in service; on a plane that does not route (out-of-band), reached from the plane's spines
  through switches in service.

A set is within the budget when every group keeps at least 1 - budget of its width, no server loses
two NICs of a plane and reach stays at least 1 - budget; or, plane by plane, when the plane's part
is one failure domain of the plan (what the design already tolerates losing, as one domain alone).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gpufabric.plan.ecmp import widths_from
from gpufabric.plan.model import Plan

EPSILON = 1e-9
OUT = {"drain", "commit"}  # the switch leaves service (the simulator's event names)
BACK = {"undrained": "drain", "confirm": "commit", "revert": "commit", "abort": "commit"}


@dataclass(frozen=True)
class Outage:
    """Switches out of service together: a batch of the trail, or a moment of the simulator's log."""

    label: str
    switches: frozenset[str]
    claimed: dict[str, Any] = field(default_factory=dict)  # the figures the log recorded, if any


@dataclass
class Verdict:
    outage: Outage
    worst_share: float
    worst_group: str
    rails_lost: int
    rails_server: str
    reach_share: float
    tolerated: list[str]  # planes whose part is over the budget but one failure domain alone
    problems: list[str]

    @property
    def held(self) -> bool:
        return not self.problems


@dataclass
class _Plane:
    name: str
    routed: bool
    asn: dict[str, int]
    adjacent: dict[str, list[str]]  # one entry per fabric link
    origins: list[list[str]]  # leaves grouped by their fabric links: any one of a group is the others' equal
    full: dict[str, dict[str, int]]  # origin -> widths with nothing out (read when first needed)
    leaves: set[str]
    roots: list[str]  # switched planes: where reach is measured from (the spines)
    ports: dict[str, Counter[str]]  # kind (host, mgmt, edge) -> switch -> ports on it
    domains: list[frozenset[str]]


class Judge:
    def __init__(self, plan: Plan, budget: float) -> None:
        self.budget = budget
        self.plane_of = {d.name: d.plane for d in plan.devices()}
        self.planes = {name: self._read(plan, name) for name in plan.planes}
        self.nics: dict[tuple[str, str], list[str]] = defaultdict(list)  # (plane, switch) -> servers
        for server in plan.servers:
            for nic in server.nics:
                self.nics[(nic.plane, nic.leaf)].append(server.name)

    @staticmethod
    def _read(plan: Plan, name: str) -> _Plane:
        plane = plan.planes[name]
        role = {d.name: d.role for d in plane.devices}
        asn = {d.name: d.asn for d in plane.devices if d.asn is not None}
        adjacent: dict[str, list[str]] = defaultdict(list)
        ports: dict[str, Counter[str]] = defaultdict(Counter)
        for link in plane.links:
            if link.kind == "fabric" and link.a in role and link.b in role:
                adjacent[link.a].append(link.b)
                adjacent[link.b].append(link.a)
            else:
                for end, other in ((link.a, link.b), (link.b, link.a)):
                    if end in role and other not in role:
                        ports[link.kind][end] += 1
        leaves = {n for n, r in role.items() if r in ("leaf", "border")}
        routed = bool(asn) and all(n in asn for n in role)
        groups: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for leaf in sorted(leaves):
            groups[tuple(sorted(adjacent[leaf]))].append(leaf)
        origins = [g for g in groups.values() if routed]
        full: dict[str, dict[str, int]] = {}
        roots = sorted(n for n, r in role.items() if r in ("spine", "superspine"))
        domains = [frozenset(fd.devices) for fd in plane.failure_domains]
        return _Plane(name, routed, asn, adjacent, origins, full, leaves, roots, ports, domains)

    def judge(self, outage: Outage) -> Verdict:
        by_plane: dict[str, set[str]] = defaultdict(set)
        for n in outage.switches:
            by_plane[self.plane_of.get(n, "?")].add(n)
        worst, group, rails, server, reach = 1.0, "", 0, "", 1.0
        problems: list[str] = []
        tolerated: list[str] = []
        for name, down in sorted(by_plane.items()):
            plane = self.planes.get(name)
            if plane is None:
                problems.append(f"{', '.join(sorted(down))}: not in the plan")
                continue
            p_worst, p_group = self._ecmp(plane, down) if plane.routed else (1.0, "")
            p_rails, p_server = self._rails(name, down)
            p_reach = self._reach(plane, down)
            if p_worst < worst:
                worst, group = p_worst, p_group
            if p_rails > rails:
                rails, server = p_rails, p_server
            reach = min(reach, p_reach)
            over = []
            if p_worst < 1 - self.budget - EPSILON:
                over.append(f"ECMP group {p_group} kept {p_worst:.1%}")
            if p_rails > 1:
                over.append(f"{p_server} lost {p_rails} NICs of plane {name}")
            if p_reach < 1 - self.budget - EPSILON:
                over.append(f"plane {name} kept {p_reach:.1%} of its ports reachable")
            if over and any(down <= d for d in plane.domains):
                tolerated.append(name)
            elif over:
                problems += over
        return Verdict(outage, worst, group, rails, server, reach, tolerated, problems)

    def _ecmp(self, plane: _Plane, down: set[str]) -> tuple[float, str]:
        adjacent = {n: [m for m in ms if m not in down] for n, ms in plane.adjacent.items() if n not in down}
        worst, where = 1.0, ""
        for group in plane.origins:
            origin = next((n for n in group if n not in down), None)
            if origin is None:
                continue
            if origin not in plane.full:
                plane.full[origin] = widths_from(origin, plane.asn, plane.adjacent)
            full = plane.full[origin]
            live = widths_from(origin, plane.asn, adjacent)
            for switch, width in full.items():
                if switch in down or switch == origin:
                    continue
                if switch in plane.leaves:
                    share = min(1.0, live.get(switch, 0) / width)
                elif switch in live:
                    share = min(1.0, live[switch] / width)
                else:
                    continue  # no route left: withdrawn, its neighbours' widths show it
                if share < worst - EPSILON:
                    worst, where = share, f"{switch} -> {origin}"
        return worst, where

    def _rails(self, plane: str, down: set[str]) -> tuple[int, str]:
        lost: Counter[str] = Counter()
        for switch in down:
            lost.update(self.nics.get((plane, switch), ()))
        if not lost:
            return 0, ""
        server, n = max(sorted(lost.items()), key=lambda item: item[1])
        return n, server

    @staticmethod
    def _reach(plane: _Plane, down: set[str]) -> float:
        """The least share of a kind of port (host, management, edge) on switches in service, and on a
        plane that bridges, reached from its spines through switches in service."""
        if plane.routed:
            seen = set(plane.asn) - down
        else:
            seen = {r for r in plane.roots if r not in down}
            todo = list(seen)
            while todo:
                x = todo.pop()
                for n in plane.adjacent.get(x, ()):
                    if n not in down and n not in seen:
                        seen.add(n)
                        todo.append(n)
        return min(
            (sum(k for n, k in ports.items() if n in seen) / sum(ports.values()) for ports in plane.ports.values()),
            default=1.0,
        )


def from_trail(records: Iterable[dict[str, Any]], push_id: str | None = None) -> list[Outage]:
    """A push's batches, from its audit trail's batch records (the last push's unless `push_id`)."""
    batches = [r for r in records if r.get("status") == "batch" and isinstance(r.get("switches"), list)]
    if push_id is None and batches:
        push_id = str(batches[-1].get("push_id"))
    return [
        Outage(f"batch {r.get('batch')}", frozenset(map(str, r["switches"])), r)
        for r in batches
        if r.get("push_id") == push_id
    ]


def from_events(events: Iterable[dict[str, Any]]) -> list[Outage]:
    """Every largest set of switches out of service at once, from the simulator's event log: a switch is
    out from its drain (or, undrained, its commit) until it is undrained (or confirmed, or reverted)."""
    state: dict[str, set[str]] = defaultdict(set)  # switch -> why it is out ("drain", "commit")
    down: set[str] = set()
    grew = False
    out: list[Outage] = []
    seen: set[frozenset[str]] = set()
    ordered = sorted(events, key=lambda e: (float(e["time"]), e["event"] not in OUT))  # starts first: worst case
    for ev in ordered:
        switch, kind = str(ev["switch"]), str(ev["event"])
        if kind in OUT:
            state[switch].add(kind)
            if switch not in down:
                down.add(switch)
                grew = True
        elif kind in BACK:
            state[switch].discard(BACK[kind])
            if state[switch] or switch not in down:
                continue
            if grew:  # the set stops growing here: one of its largest
                frozen = frozenset(down)
                if frozen not in seen:
                    seen.add(frozen)
                    out.append(Outage(f"t={float(ev['time']):.1f}", frozen))
                grew = False
            down.discard(switch)
    if grew and down:
        out.append(Outage("at the end", frozenset(down)))
    return out


def claims_problems(verdict: Verdict) -> list[str]:
    """Where a trail's recorded figures say more than the judge finds (a log that overstates)."""
    claimed = verdict.outage.claimed
    problems = []
    share = claimed.get("worst_ecmp_share")
    if isinstance(share, int | float) and share > verdict.worst_share + 1e-6 and not verdict.tolerated:
        problems.append(f"recorded worst ECMP share {share:.1%}, found {verdict.worst_share:.1%}")
    rails = claimed.get("max_rails_lost")
    if isinstance(rails, int) and rails < verdict.rails_lost:
        problems.append(f"recorded {rails} rail(s) lost at most, found {verdict.rails_lost}")
    return problems
