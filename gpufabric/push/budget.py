"""How many switches at once: batches under a capacity budget (`nornir push --max-capacity-loss PCT`).

Without a budget a batch holds one failure domain of each plane (targets.py). With one, a batch may
hold several failure domains of a plane as long as, with every switch of the batch out of service at
once:

- every ECMP group keeps at least (100 - PCT)% of its members. A group is a switch's next hops toward
  a leaf's servers on the planned (shortest) paths, counted in links: one per parallel link. A member
  is alive while it is in service and still has a path of the planned length to that leaf. A group
  counts when its switch is a source (a leaf, whose servers send) or an alive member of a group that
  counts: a spine that has no path left to a pod carries nothing toward it, and its upstream
  switches' groups have already lost it;
- no server loses more than one NIC (one rail) of a plane;
- at most PCT% of a plane's ports of each kind where servers or the edge attach (host, management,
  edge ports) are out of service: on their switch out of service or, on a plane that bridges (the
  out-of-band plane), on a switch left with no uplink in service. Two single-homed leaves, or both
  borders, are not a lesser loss than one because no server has a NIC on both.

A failure domain that alone costs more than that (a superspine place in the 32k example: every spine
loses one of its four superspines) still goes, alone, as the design tolerates losing it. The domains
go in today's order (leaves first, the out-of-band plane last and apart), the planes side by side as
today (the k-th part of every plane together): a plane's part of a batch opens with its next domain and
takes every later one that keeps the plane within the budget. A budget of 0 gives today's batches, batch
for batch: no second domain of a plane ever fits, and planes side by side then keep today's bound on a
batch's switches, so a plane's next domain never rides along where today's would start a batch of its own.

Servers and leaves are not transit: a leaf out of service costs its servers one rail (counted apart)
and removes the groups toward it, never a member of another group. Leaves with the same uplinks are
the same source and destination (one class), which keeps the evaluation at the 32k example's size in
milliseconds. The judge of a finished push (proof.py) recomputes the cost independently, with the
plan's BGP path-vector model, from the log alone.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass

from gpufabric.errors import GpufabricError
from gpufabric.plan.model import Device, Plan, PlanePlan, Server
from gpufabric.push.targets import OOB, Batch, Part, batch_of, domains_of

ENDPOINT_ROLES = frozenset({"leaf", "border"})  # where servers (or the edge) attach: sources and destinations
SWITCHED = "switched"  # a plane that bridges and does not route: its cost is reach, not ECMP
EPSILON = 1e-9
MOST_AT_ONCE = 256  # switches staged at once at most (fleet.target.READ_WORKERS: sessions that wait on sockets)


class BudgetError(GpufabricError):
    """A capacity budget that cannot be read."""


def parse_budget(text: str) -> float:
    """'12.5%' or '12.5' (percent) -> 0.125."""
    raw = text.strip().removesuffix("%").strip()
    try:
        value = float(raw)
    except ValueError:
        raise BudgetError(f"--max-capacity-loss {text!r}: a percentage, such as 12.5%") from None
    if not math.isfinite(value) or not 0 <= value <= 100:
        raise BudgetError(f"--max-capacity-loss {text!r}: between 0% and 100%")
    return value / 100


@dataclass(frozen=True)
class Cost:
    """What taking a set of switches out of service at once costs the fabric."""

    worst_share: float  # the worst counted ECMP group's members left (1.0: none lost)
    worst_group: str  # "owner -> destination" of that group ("" when none lost)
    rails_lost: int  # most NICs of one plane any one server has on switches out of service
    rails_server: str  # that server ("" when none)
    reach_share: float  # the least share of a kind of host, management or edge ports still in service

    def within(self, budget: float) -> bool:
        return (
            self.worst_share >= 1 - budget - EPSILON
            and self.rails_lost <= 1
            and self.reach_share >= 1 - budget - EPSILON
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "worst_ecmp_share": round(self.worst_share, 6),
            "worst_ecmp_group": self.worst_group,
            "max_rails_lost": self.rails_lost,
            "rails_server": self.rails_server,
            "reach_share": round(self.reach_share, 6),
        }


NONE_LOST = Cost(1.0, "", 0, "", 1.0)


def combine(costs: list[Cost]) -> Cost:
    if not costs:
        return NONE_LOST
    worst = min(costs, key=lambda c: c.worst_share)
    rails = max(costs, key=lambda c: c.rails_lost)
    return Cost(worst.worst_share, worst.worst_group, rails.rails_lost, rails.rails_server,
                min(c.reach_share for c in costs))  # fmt: skip


@dataclass
class _Toward:
    """One destination class: the planned distances to it and each switch's members toward it."""

    rep: str  # the class's representative leaf
    members: dict[str, list[tuple[str, int]]]  # transit switch -> (next hop, links) on planned paths
    order: list[str]  # transit switches by distance, nearest first
    owners: dict[int, list[tuple[str, int]]]  # endpoint class -> (next hop, links) on planned paths


class PlaneCost:
    """A plane's graph, read once: what any set of its switches out of service costs."""

    def __init__(self, plane: PlanePlan, servers: list[Server]) -> None:
        self.name = plane.name
        self.switched = plane.topology == SWITCHED
        role = {d.name: d.role for d in plane.devices}
        self.links: dict[str, Counter[str]] = defaultdict(Counter)
        self.ports: dict[str, Counter[str]] = defaultdict(Counter)  # kind (host, mgmt, edge) -> switch -> ports
        for link in plane.links:
            if link.kind == "fabric" and link.a in role and link.b in role:
                self.links[link.a][link.b] += 1
                self.links[link.b][link.a] += 1
            elif link.a in role and link.b not in role:
                self.ports[link.kind][link.a] += 1
            elif link.b in role and link.a not in role:
                self.ports[link.kind][link.b] += 1
        self.total_ports = {kind: sum(ports.values()) for kind, ports in self.ports.items()}
        self.nics: dict[str, list[int]] = defaultdict(list)  # leaf -> index of each server with a NIC on it
        self.server_names = [s.name for s in servers]
        for i, server in enumerate(servers):
            for nic in server.nics:
                if nic.plane == plane.name and nic.leaf in role:
                    self.nics[nic.leaf].append(i)
        endpoints = sorted(n for n, r in role.items() if r in ENDPOINT_ROLES and self.links[n])
        self.transit = {n for n, r in role.items() if r not in ENDPOINT_ROLES}
        classes: dict[tuple[tuple[str, int], ...], list[str]] = {}
        for n in endpoints:
            classes.setdefault(tuple(sorted(self.links[n].items())), []).append(n)
        self.classes = list(classes.values())
        self.class_of = {n: k for k, members in enumerate(self.classes) for n in members}
        self.toward = [] if self.switched else [self._toward(members[0]) for members in self.classes]

    def _toward(self, rep: str) -> _Toward:
        dist = {rep: 0}
        frontier = [rep]
        while frontier:  # through transit switches only: leaves carry nobody's traffic
            nxt = []
            for x in frontier:
                for n in self.links[x]:
                    if n not in dist and n in self.transit:
                        dist[n] = dist[x] + 1
                        nxt.append(n)
            frontier = nxt
        members = {
            x: [(n, k) for n, k in sorted(self.links[x].items()) if dist.get(n) == dist[x] - 1]
            for x in dist
            if x != rep
        }
        owners: dict[int, list[tuple[str, int]]] = {}
        for k, cls in enumerate(self.classes):
            first = cls[0]
            near = [dist[n] for n in self.links[first] if n in dist and n != rep]
            if not near:
                continue
            d = min(near)
            owners[k] = [(n, m) for n, m in sorted(self.links[first].items()) if dist.get(n) == d]
        return _Toward(rep, members, sorted(members, key=lambda x: dist[x]), owners)

    def uplinks_lost(self, down: set[str]) -> float:
        """The largest share of one leaf class's fabric links whose far end is out of service (a quick
        lower bound of the groups' loss, to pass over what cannot fit without the whole evaluation)."""
        worst = 0.0
        for cls in self.classes:
            links = self.links[cls[0]]
            total = sum(links.values())
            if total and any(n not in down for n in cls):
                worst = max(worst, sum(k for n, k in links.items() if n in down) / total)
        return worst

    def rails(self, down: set[str]) -> tuple[int, str]:
        lost: Counter[int] = Counter()
        for leaf in down:
            lost.update(self.nics.get(leaf, ()))
        if not lost:
            return 0, ""
        i, n = max(lost.items(), key=lambda item: (item[1], -item[0]))
        return n, self.server_names[i]

    def reach(self, down: set[str]) -> float:
        """The least share, over the kinds of ports where servers or the edge attach, still in service: on
        a switched plane a switch left with no uplink in service is cut off too."""
        share = 1.0
        for kind, ports in self.ports.items():
            cut = sum(
                count
                for switch, count in ports.items()
                if switch in down
                or (self.switched and self.links[switch] and all(n in down for n in self.links[switch]))
            )
            share = min(share, 1 - cut / self.total_ports[kind])
        return share

    def ecmp(self, down: set[str]) -> tuple[float, str]:
        if self.switched or not (down & self.transit):
            return 1.0, ""  # leaves out of service only remove groups (their rails are counted apart)
        worst, where = 1.0, ""
        for c, toward in enumerate(self.toward):
            if all(n in down for n in self.classes[c]):
                continue  # no leaf of the class left to send to
            alive = {toward.rep: True}
            for x in toward.order:
                alive[x] = x not in down and any(alive.get(n, False) for n, _ in toward.members[x])
            counted: list[str] = []
            for k, hops in toward.owners.items():
                live = [n for n in self.classes[k] if n not in down]
                if not live or (k == c and len(live) < 2):
                    continue
                share = _share(hops, alive)
                if share < worst - EPSILON:
                    owner = next((n for n in live if n != toward.rep), live[0])
                    worst, where = share, f"{owner} -> {toward.rep}"
                counted += [n for n, _ in hops if alive.get(n)]
            seen = set(counted)
            while counted:  # the alive members of counted groups: their own groups count
                x = counted.pop()
                hops = toward.members.get(x, [])
                if not hops:
                    continue
                share = _share(hops, alive)
                if share < worst - EPSILON:
                    worst, where = share, f"{x} -> {toward.rep}"
                for n, _ in hops:
                    if alive.get(n) and n not in seen and n != toward.rep:
                        seen.add(n)
                        counted.append(n)
        return worst, where

    def cost(self, down: set[str]) -> Cost:
        rails, server = self.rails(down)
        share, where = self.ecmp(down)
        return Cost(share, where, rails, server, self.reach(down))


@dataclass(frozen=True)
class _Chunk:
    plane: str
    domain: str
    devices: tuple[str, ...]
    alone: bool  # within the budget on its own (else its part's only domain)


def stage_workers(plan_batches: list[Batch], workers: int) -> int:
    """Sessions in flight while a batch changes: the whole largest batch at once (up to MOST_AT_ONCE), so
    that a batch of several failure domains takes as long as one domain's switch does."""
    return max(workers, min(MOST_AT_ONCE, max((len(b.devices) for b in plan_batches), default=0)))


def _share(hops: list[tuple[str, int]], alive: dict[str, bool]) -> float:
    total = sum(k for _, k in hops)
    return sum(k for n, k in hops if alive.get(n)) / total if total else 1.0


class Budget:
    """The fabric's planes read once; the cost of any set of switches, and batches within a budget."""

    def __init__(self, plan: Plan, budget: float) -> None:
        self.budget = budget
        self.planes = {name: PlaneCost(plane, plan.servers) for name, plane in plan.planes.items()}
        self.plane_of = {d.name: d.plane for d in plan.devices()}

    def cost(self, devices: tuple[str, ...] | list[str] | set[str]) -> Cost:
        by_plane: dict[str, set[str]] = defaultdict(set)
        for n in devices:
            by_plane[self.plane_of.get(n, "")].add(n)
        return combine([self.planes[p].cost(down) for p, down in by_plane.items() if p in self.planes])

    def batches(self, plan: Plan, targets: list[Device], size: int | None, *, width: int) -> list[Batch]:
        """The canary alone, then the data planes' domains packed within the budget, then the out-of-band
        plane's apart; each batch at most `size` switches (or MOST_AT_ONCE). `width`: the sessions the
        push stages at once, as for today's batches (targets.batches), which a budget of nothing gives."""
        domains = domains_of(plan, targets)
        if not domains:
            return []
        plane, first, members = domains[0]
        out: list[list[Part]] = [[(f"canary ({first})", (members[0],))]]
        domains[0] = (plane, first, members[1:])
        cap = size or MOST_AT_ONCE
        per_plane: dict[str, list[_Chunk]] = {}
        for plane, name, members in domains:
            for i in range(0, len(members), cap):
                devices = tuple(members[i : i + cap])
                alone = plane in self.planes and self.planes[plane].cost(set(devices)).within(self.budget)
                per_plane.setdefault(plane, []).append(_Chunk(plane, name, devices, alone))
        data = [chunks for p, chunks in per_plane.items() if p != OOB]
        waves, packed = self._waves(data, cap)
        if not size and not packed:  # today's bound, as no part holds two domains
            waves, _ = self._waves(data, max([width, *(len(c.devices) for chunks in data for c in chunks)]))
        out += waves
        out += self._waves([per_plane.get(OOB, [])], cap)[0]
        return [batch_of(number, parts) for number, parts in enumerate(out, 1)]

    def _waves(self, planes: list[list[_Chunk]], capacity: int) -> tuple[list[list[Part]], bool]:
        """Planes side by side as without a budget (targets.batches): the k-th part of every plane together,
        as far as `capacity` switches allow (a plane's next domain that does not fit starts the next
        batch); each plane keeps its order, so its next domain always opens its part. A part then takes
        every later domain of its plane that keeps the plane within the budget, leaving room for the next
        domains of the planes still to come in the batch. A domain that alone costs more than the budget
        is its part's only one. Once the budget packs, the push stages each batch whole (stage_workers),
        so `capacity` is MOST_AT_ONCE; while it packs nothing, today's bound (the width, or the largest
        domain): a budget of nothing is today's rollout, batch for batch. Also: whether a part packed."""
        left = [list(chunks) for chunks in planes]
        out: list[list[Part]] = []
        packed = False
        while any(left):
            current: list[Part] = []
            used = 0
            wave = [chunks for chunks in left if chunks]
            for k, chunks in enumerate(wave):
                if current and used + len(chunks[0].devices) > capacity:
                    out.append(current)
                    current, used = [], 0
                reserve = sum(len(later[0].devices) for later in wave[k + 1 :])
                part = self._part(chunks, capacity - used - reserve)
                current += part
                used += sum(len(ds) for _, ds in part)
                packed = packed or len(part) > 1
            out.append(current)
        return out, packed

    def _part(self, chunks: list[_Chunk], room: int) -> list[Part]:
        """A plane's next domain (taken from `chunks`), then every later one that keeps the plane within
        the budget and the part within `room` switches."""
        first = chunks.pop(0)
        taken = [first]
        down = set(first.devices)
        for c in list(chunks) if first.alone else []:
            if c.alone and len(down) + len(c.devices) <= room and self._fits(c.plane, down | set(c.devices)):
                down |= set(c.devices)
                taken.append(c)
                chunks.remove(c)
        return [(c.domain, c.devices) for c in taken]

    def _fits(self, plane: str, down: set[str]) -> bool:
        costs = self.planes[plane]
        if costs.rails(down)[0] > 1 or costs.reach(down) < 1 - self.budget - EPSILON:
            return False
        if costs.switched:
            return True
        if costs.uplinks_lost(down) > self.budget + EPSILON:
            return False
        return costs.ecmp(down)[0] >= 1 - self.budget - EPSILON
