"""The probe mesh's plan, derived from the plan: which server NIC probes which, per plane and rail
(Pingmesh's idea: each server probes a few planned peers; latency per pair, per leaf pair, per spine set).

For every plane that carries RoCE, and in it every rail (a multi-plane compute plane's parts apart), the NICs
are grouped by their leaf. Then:
- **under one leaf**: each NIC probes the next NIC under the same leaf (a ring), so every NIC of a leaf with
  two or more servers sends and answers one probe that crosses only its leaf;
- **between leaves**: every pair of the rail's leaves is given to one server pair. The pair's direction
  follows a round-robin tournament (leaf i probes leaf j when (j - i) mod L is at most L/2, the tie to the
  lower index), so each leaf sends about half of its L - 1 pairs, and a leaf's pairs are spread over its
  servers in turn (and onto the far leaf's servers in turn). Every (leaf, leaf) pair of a rail is covered by
  construction; a server sends about (L - 1) / (2 n) of them, n the servers under its leaf.
- **across the spines**: a probe between two leaves crosses one spine (and, between pods, one superspine) of
  the ECMP set, chosen by the switches' hash of its 5-tuple. Each probe is sent from one of `SOURCE_PORTS`
  source ports in turn, so each pair is `SOURCE_PORTS` flows and the switches spread them as they spread
  RoCE's flows. Which spine a flow takes is the hash's choice, not known here: no spine is guaranteed by
  construction. The plan works out, per rail, the chance that a spine (or superspine) receives none of the
  flows if the switches hash uniformly over their equal-cost next hops: (1 - share)^F per spine for F flows
  from a leaf that sends `share` of its uplinks to it, (1 - 1/k)^F per superspine for F flows between pods,
  summed over the tier (a union bound). While that is above TARGET_MISS, the tournament runs again (a
  round), each leaf's pairs going from its next servers to the far leaf's next ones: new server pairs, new
  flows, within each host's share of the bound (MAX_PROBES over the rails it has a NIC on). A rail of few
  leaves under many spines gets several rounds; the figure reached is in the plan. A hash that is not
  uniform (polarisation between tiers, a seed shared by every switch) can leave a spine out whatever that
  figure says.

At most `MAX_PROBES` probes per host, over all its NICs: a fabric with too many leaves for its servers to
cover every pair within that is refused, naming the host. Probes are sent in the RoCE class (the plane's QoS
profile's DSCP), one per probe and interval, so a host sends at most MAX_PROBES / interval packets a second.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from gpufabric.errors import GpufabricError
from gpufabric.plan.model import Plan, PlanePlan, ip
from gpufabric.plan.multiplane import part_name

FORMAT = "gpufabric-probe-plan/1"


def flow_ports(source_base: int, source_ports: int) -> list[int]:
    """Each flow's source port, the same to every peer from one source address (the prober binds these, and
    triage reads the flows' paths before its probe by them): source_base + i, i < source_ports, or 0s where
    source_base is 0 (the kernel's ephemeral ports, not known before they are bound)."""
    return [0 if source_base == 0 else source_base + i for i in range(source_ports)]


MAX_PROBES = 64  # per host, over all its NICs
PORT = 17990  # UDP: the responders' port (RoCE's own is 4791: never used here)
SOURCE_PORTS = 16  # probes of a pair go out from PORT + 1 .. PORT + SOURCE_PORTS in turn
INTERVAL = 1.0  # seconds between two probes of one peer
TARGET_MISS = 1e-6  # extra rounds of leaf pairs until no spine is likely to go unprobed (within the bound)
MAX_ROUNDS = 16
TIMEOUT = 1.0  # seconds after which a probe without an answer is lost


class ProbePlanError(ValueError, GpufabricError):
    """No probe plan within the limits (the message names the host and what to change)."""


@dataclass(frozen=True, slots=True)
class Probe:
    interface: str  # the sending NIC
    source: str  # its address: the probe leaves from it (the host's per-rail routing rule picks the NIC)
    dst: str  # the peer server
    address: str  # the peer NIC's address
    plane: str
    rail: str
    src_leaf: str
    dst_leaf: str

    def row(self) -> list[str]:
        return [
            self.interface,
            self.source,
            self.dst,
            self.address,
            self.plane,
            self.rail,
            self.src_leaf,
            self.dst_leaf,
        ]


@dataclass(frozen=True, slots=True)
class _Nic:
    server: str
    interface: str
    address: str
    leaf: str


@dataclass
class Group:
    """One rail of one plane part: its leaves, what the plan covers, and the spine-coverage figures."""

    plane: str
    rail: str
    dscp: int
    leaves: int = 0
    nics: int = 0
    leaf_pairs: int = 0
    covered_pairs: int = 0
    spines: list[str] = field(default_factory=list)
    superspines: list[str] = field(default_factory=list)
    rounds: int = 0  # passes of the leaf-pair tournament (the first covers every pair; more for the spines)
    flows: int = 0  # leaf-to-leaf flows: cross-leaf probes x source ports
    cross_pod_flows: int = 0
    spine_miss: float = 0.0  # union bound: some spine receives no flow, under uniform hashing
    superspine_miss: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "plane": self.plane, "rail": self.rail, "dscp": self.dscp, "leaves": self.leaves, "nics": self.nics,
            "leaf_pairs": self.leaf_pairs, "covered_pairs": self.covered_pairs, "rounds": self.rounds,
            "spines": len(self.spines), "superspines": len(self.superspines), "flows": self.flows,
            "cross_pod_flows": self.cross_pod_flows, "spine_miss_probability": self.spine_miss,
            "superspine_miss_probability": self.superspine_miss,
        }  # fmt: skip


@dataclass
class ProbePlan:
    fabric: str
    groups: list[Group]
    probes: dict[str, list[Probe]]  # host -> its probes
    responders: dict[str, list[tuple[str, str, int]]]  # host -> (interface, address, dscp) it answers on
    dscp: dict[str, int]  # plane part -> DSCP of its probes
    port: int = PORT
    source_ports: int = SOURCE_PORTS
    interval: float = INTERVAL
    timeout: float = TIMEOUT

    def host(self, name: str) -> dict[str, Any]:
        """One host's share: what `probe serve --node NAME` reads."""
        return {
            "format": FORMAT, "fabric": self.fabric, "node": name, "port": self.port,
            "source_ports": self.source_ports, "interval": self.interval, "timeout": self.timeout, "dscp": self.dscp,
            "responders": [list(r) for r in self.responders.get(name, [])],
            "probes": [p.row() for p in self.probes.get(name, [])],
        }  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "fabric": self.fabric, "port": self.port, "source_ports": self.source_ports,
            "interval": self.interval, "timeout": self.timeout, "dscp": self.dscp,
            "groups": [g.as_dict() for g in self.groups],
            "hosts": {
                name: {"responders": [list(r) for r in self.responders[name]],
                       "probes": [p.row() for p in self.probes.get(name, [])]}
                for name in self.responders
            },
        }  # fmt: skip


def natural(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def probe_plan(plan: Plan, max_probes: int = MAX_PROBES, source_ports: int = SOURCE_PORTS) -> ProbePlan:
    probes: dict[str, list[Probe]] = defaultdict(list)
    responders: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    groups: list[Group] = []
    dscps: dict[str, int] = {}
    found: list[tuple[Group, dict[str, list[_Nic]], _Tiers]] = []
    for plane in plan.planes.values():
        if not plane.carries_roce:
            continue
        profile = plan.intent.qos_profiles.get(plane.qos) if plane.qos else None
        dscp = profile.roce_dscp if profile is not None else 0
        tiers = _Tiers.of(plane)
        by_group = _nics(plan, plane)
        for (part, rail), by_leaf in sorted(by_group.items(), key=lambda kv: (natural(kv[0][0]), natural(kv[0][1]))):
            dscps[part] = dscp
            found.append((Group(part, rail, dscp), by_leaf, tiers))
            for nics in by_leaf.values():
                for nic in nics:
                    responders[nic.server].append((nic.interface, nic.address, dscp))
    # A host's share of the bound in each of its rails: extra rounds (for the spines) stay within it.
    groups_of: dict[str, int] = defaultdict(int)
    for _, by_leaf, _ in found:
        for server in {nic.server for nics in by_leaf.values() for nic in nics}:
            groups_of[server] += 1
    for group, by_leaf, tiers in found:
        share = {server: max(1, max_probes // count) for server, count in groups_of.items()}
        _Mesh(group, by_leaf, tiers, source_ports, probes).build(share)
        groups.append(group)
    for host, mine in probes.items():
        if len(mine) > max_probes:
            raise ProbePlanError(
                f"{host} would send {len(mine)} probes, more than {max_probes}: its leaves have too few servers "
                "to cover every leaf pair of their rails within the limit (raise it, or probe fewer planes)"
            )
    return ProbePlan(plan.intent.fabric.name, groups, dict(probes), dict(responders), dscps, source_ports=source_ports)


def _nics(plan: Plan, plane: PlanePlan) -> dict[tuple[str, str], dict[str, list[_Nic]]]:
    """(plane part, rail) -> leaf -> its NICs, in the plan's server order."""
    rails = {d.name: d.rail for d in plane.devices if d.role == "leaf"}
    out: dict[tuple[str, str], dict[str, list[_Nic]]] = defaultdict(lambda: defaultdict(list))
    for s in plan.servers:
        for nic in s.nics:
            address = ip(nic.address)
            if nic.plane != plane.name or not address or nic.leaf not in rails:
                continue
            index = plane.plane_of.get(nic.leaf)
            part = part_name(plane.name, index) if index is not None else plane.name
            rail = rails[nic.leaf]
            key = (part, "" if rail is None else str(rail))
            out[key][nic.leaf].append(_Nic(s.name, nic.interface, address, nic.leaf))
    return out


@dataclass
class _Tiers:
    """A plane's switches by role and pod, and each switch's links one tier up (one entry per link)."""

    role: dict[str, str]
    pod: dict[str, int | None]
    up: dict[str, list[str]]

    @classmethod
    def of(cls, plane: PlanePlan) -> _Tiers:
        up: dict[str, list[str]] = defaultdict(list)
        for link in plane.links:
            if link.kind == "fabric":
                up[link.a].append(link.b)  # end a is the lower tier
        return cls({d.name: d.role for d in plane.devices}, {d.name: d.pod for d in plane.devices}, up)


class _Mesh:
    """One rail's probes: the ring under each leaf, then rounds of the leaf-pair tournament until the spines'
    miss figure is under TARGET_MISS (round 1 always: it is the coverage of every leaf pair)."""

    def __init__(
        self,
        group: Group,
        by_leaf: dict[str, list[_Nic]],
        tiers: _Tiers,
        ports: int,
        probes: dict[str, list[Probe]],
    ) -> None:
        self.group, self.by_leaf, self.tiers, self.ports, self.probes = group, by_leaf, tiers, ports, probes
        self.leaves = sorted(by_leaf, key=natural)
        self.sent: dict[str, int] = defaultdict(int)  # a leaf's pairs so far: the next goes from its next server
        self.answered: dict[str, int] = defaultdict(int)
        self.pairs: set[tuple[str, str]] = set()  # (source address, peer address) across leaves
        self.out_flows: dict[str, int] = defaultdict(int)  # source leaf -> flows it sends to other leaves
        self.cross_pod = 0
        self.mine: dict[str, int] = defaultdict(int)  # host -> probes in this rail
        role, pod, up = tiers.role, tiers.pod, tiers.up
        spines = {x for leaf in self.leaves for x in up.get(leaf, ()) if role.get(x) == "spine"}
        pods = {pod.get(leaf) for leaf in self.leaves}
        supers = {x for sp in spines for x in up.get(sp, ()) if role.get(x) == "superspine"} if len(pods) > 1 else set()
        group.spines, group.superspines = sorted(spines, key=natural), sorted(supers, key=natural)
        group.leaves, group.nics = len(self.leaves), sum(len(v) for v in by_leaf.values())
        group.leaf_pairs = len(self.leaves) * (len(self.leaves) - 1) // 2

    def _add(self, a: _Nic, b: _Nic) -> None:
        g = self.group
        self.probes[a.server].append(
            Probe(a.interface, a.address, b.server, b.address, g.plane, g.rail, a.leaf, b.leaf)
        )
        self.mine[a.server] += 1

    def build(self, share: dict[str, int]) -> None:
        for leaf in self.leaves:  # a ring under each leaf
            nics = self.by_leaf[leaf]
            if len(nics) > 1:
                for i, nic in enumerate(nics):
                    self._add(nic, nics[(i + 1) % len(nics)])
        self._round()
        self.group.covered_pairs = len({frozenset((p.src_leaf, p.dst_leaf)) for p in self._cross()})
        rounds = 1
        while self._miss() > TARGET_MISS and rounds < MAX_ROUNDS and self._fits(share):
            if not self._round():
                break  # no server pair left that is not probed already
            rounds += 1
        g = self.group
        g.rounds = rounds
        g.flows = sum(self.out_flows.values())
        g.cross_pod_flows = self.cross_pod if g.superspines else 0
        g.spine_miss, g.superspine_miss = self._spine_miss(), self._superspine_miss()

    def _cross(self) -> list[Probe]:
        g = self.group
        return [
            p for nics in self.by_leaf.values() for nic in nics for p in self.probes.get(nic.server, ())
            if p.plane == g.plane and p.rail == g.rail and p.src_leaf != p.dst_leaf
        ]  # fmt: skip

    def _fits(self, share: dict[str, int]) -> bool:
        """Another round keeps every server of the rail within its share (a round adds at most the most pairs
        one leaf sends over its servers, rounded up)."""
        count = len(self.leaves)
        most = {leaf: math.ceil(((count - 1) // 2 + 1) / len(nics)) for leaf, nics in self.by_leaf.items()}
        return all(
            self.mine[nic.server] + most[leaf] <= share[nic.server]
            for leaf, nics in self.by_leaf.items()
            for nic in nics
        )

    def _round(self) -> bool:
        """One pass of the tournament (leaf i probes leaf j when (j - i) mod L is at most L/2); False when it
        added no new server pair."""
        leaves, by_leaf, pod = self.leaves, self.by_leaf, self.tiers.pod
        count = len(leaves)
        added = False
        for i in range(count):
            for j in range(i + 1, count):
                src, dst = (leaves[i], leaves[j]) if (j - i) % count <= count // 2 else (leaves[j], leaves[i])
                a = by_leaf[src][self.sent[src] % len(by_leaf[src])]
                b = by_leaf[dst][self.answered[dst] % len(by_leaf[dst])]
                self.sent[src] += 1
                self.answered[dst] += 1
                if (a.address, b.address) in self.pairs:
                    continue
                self.pairs.add((a.address, b.address))
                self._add(a, b)
                self.out_flows[src] += self.ports
                self.cross_pod += self.ports if pod.get(src) != pod.get(dst) else 0
                added = True
        return added

    def _spine_miss(self) -> float:
        """Union bound over the spines of P(no flow reaches it): a flow from a leaf takes a spine with the share of
        the leaf's uplinks that go to it."""
        up, spines = self.tiers.up, set(self.group.spines)
        log_miss: dict[str, float] = defaultdict(float)
        for leaf in self.leaves:
            ups = [x for x in up.get(leaf, ()) if x in spines]
            flows = self.out_flows.get(leaf, 0)
            for x in set(ups):
                share = ups.count(x) / len(ups)
                log_miss[x] += flows * (math.log1p(-share) if share < 1 else -math.inf) if flows else 0.0
        # fsum: exact whatever the order, so a set's order (hash seeds differ run to run) never changes the figure
        return min(1.0, math.fsum(math.exp(log_miss.get(x, 0.0)) for x in spines))

    def _superspine_miss(self) -> float:
        k = len(self.group.superspines)
        if k < 2:
            return 0.0
        return min(1.0, k * math.exp(self.cross_pod * math.log1p(-1 / k)))

    def _miss(self) -> float:
        return max(self._spine_miss(), self._superspine_miss())


def covered_leaf_pairs(found: ProbePlan) -> dict[tuple[str, str], set[frozenset[str]]]:
    """(plane part, rail) -> the leaf pairs some probe covers (the tests' and the bench's check)."""
    out: dict[tuple[str, str], set[frozenset[str]]] = defaultdict(set)
    for mine in found.probes.values():
        for p in mine:
            if p.src_leaf != p.dst_leaf:
                out[(p.plane, p.rail)].add(frozenset((p.src_leaf, p.dst_leaf)))
    return out


def leaves_of(plan: Plan) -> dict[tuple[str, str], set[str]]:
    """(plane part, rail) -> every leaf with a NIC of a RoCE plane (what the mesh must cover)."""
    out: dict[tuple[str, str], set[str]] = defaultdict(set)
    for plane in plan.planes.values():
        if plane.carries_roce:
            for key, by_leaf in _nics(plan, plane).items():
                out[key].update(by_leaf)
    return out
