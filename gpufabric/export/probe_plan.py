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
  construction. The plan states, per rail, the flows that can reach each tier and the chance that a spine
  (or superspine) receives none of them if the switches hash uniformly over their equal-cost next hops:
  (1 - 1/k)^F per switch for F flows over k next hops, summed over the tier (a union bound). A hash that is
  not uniform (polarisation between tiers, a seed shared by every switch) can leave a spine out whatever
  that figure says.

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
MAX_PROBES = 64  # per host, over all its NICs
PORT = 17990  # UDP: the responders' port (RoCE's own is 4791: never used here)
SOURCE_PORTS = 16  # probes of a pair go out from PORT + 1 .. PORT + SOURCE_PORTS in turn
INTERVAL = 1.0  # seconds between two probes of one peer
TIMEOUT = 1.0  # seconds after which a probe without an answer is lost


class ProbePlanError(GpufabricError):
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
    flows: int = 0  # leaf-to-leaf flows: cross-leaf probes x source ports
    cross_pod_flows: int = 0
    spine_miss: float = 0.0  # union bound: some spine receives no flow, under uniform hashing
    superspine_miss: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "plane": self.plane, "rail": self.rail, "dscp": self.dscp, "leaves": self.leaves, "nics": self.nics,
            "leaf_pairs": self.leaf_pairs, "covered_pairs": self.covered_pairs, "spines": len(self.spines),
            "superspines": len(self.superspines), "flows": self.flows, "cross_pod_flows": self.cross_pod_flows,
            "spine_miss_probability": self.spine_miss, "superspine_miss_probability": self.superspine_miss,
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
    for plane in plan.planes.values():
        if not plane.carries_roce:
            continue
        profile = plan.intent.qos_profiles.get(plane.qos) if plane.qos else None
        dscp = profile.roce_dscp if profile is not None else 0
        by_group = _nics(plan, plane)
        tiers = _Tiers.of(plane)
        for (part, rail), by_leaf in sorted(by_group.items(), key=lambda kv: (natural(kv[0][0]), natural(kv[0][1]))):
            dscps[part] = dscp
            group = Group(part, rail, dscp)
            _mesh(group, by_leaf, probes)
            _spines(group, tiers, by_leaf, source_ports)
            groups.append(group)
            for nics in by_leaf.values():
                for nic in nics:
                    responders[nic.server].append((nic.interface, nic.address, dscp))
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
            out[(part, "" if rail is None else str(rail))][nic.leaf].append(
                _Nic(s.name, nic.interface, address, nic.leaf)
            )
    return out


def _mesh(group: Group, by_leaf: dict[str, list[_Nic]], probes: dict[str, list[Probe]]) -> None:
    leaves = sorted(by_leaf, key=natural)
    count = len(leaves)
    group.leaves, group.nics = count, sum(len(v) for v in by_leaf.values())
    group.leaf_pairs = count * (count - 1) // 2

    def add(a: _Nic, b: _Nic) -> None:
        probes[a.server].append(
            Probe(a.interface, a.address, b.server, b.address, group.plane, group.rail, a.leaf, b.leaf)
        )

    for leaf in leaves:  # a ring under each leaf
        nics = by_leaf[leaf]
        if len(nics) > 1:
            for i, nic in enumerate(nics):
                add(nic, nics[(i + 1) % len(nics)])
    sent: dict[str, int] = defaultdict(int)
    answered: dict[str, int] = defaultdict(int)
    for i in range(count):
        for j in range(i + 1, count):
            d = (j - i) % count
            src, dst = (leaves[i], leaves[j]) if d <= count // 2 else (leaves[j], leaves[i])
            a = by_leaf[src][sent[src] % len(by_leaf[src])]
            b = by_leaf[dst][answered[dst] % len(by_leaf[dst])]
            sent[src] += 1
            answered[dst] += 1
            add(a, b)
            group.covered_pairs += 1


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


def _spines(group: Group, tiers: _Tiers, by_leaf: dict[str, list[_Nic]], source_ports: int) -> None:
    """The spines and superspines above the rail's leaves, and the chance one receives no probe flow."""
    role, pod, up = tiers.role, tiers.pod, tiers.up
    leaves = sorted(by_leaf, key=natural)
    spines = {s for leaf in leaves for s in up.get(leaf, ()) if role.get(s) == "spine"}
    pods = {pod.get(leaf) for leaf in leaves}
    supers = {x for s in spines for x in up.get(s, ()) if role.get(x) == "superspine"} if len(pods) > 1 else set()
    group.spines, group.superspines = sorted(spines, key=natural), sorted(supers, key=natural)
    count = len(leaves)
    # The flows each leaf sends to another leaf: its share of the tournament, times the source ports.
    out_pairs = {leaf: 0 for leaf in leaves}
    cross_pod = 0
    for i in range(count):
        for j in range(i + 1, count):
            src = leaves[i] if (j - i) % count <= count // 2 else leaves[j]
            out_pairs[src] += 1
            cross_pod += pod.get(leaves[i]) != pod.get(leaves[j])
    group.flows = sum(out_pairs.values()) * source_ports
    group.cross_pod_flows = cross_pod * source_ports if supers else 0
    # log P(spine s gets no flow) = sum over source leaves of flows x log(1 - links to s / uplinks).
    log_miss: dict[str, float] = defaultdict(float)
    for leaf, pairs in out_pairs.items():
        ups = [s for s in up.get(leaf, ()) if s in spines]
        for s in set(ups):
            share = ups.count(s) / len(ups)
            log_miss[s] += pairs * source_ports * (math.log1p(-share) if share < 1 else -math.inf)
    group.spine_miss = min(1.0, sum(math.exp(log_miss.get(s, 0.0)) for s in spines))
    if supers:
        k = len(supers)
        group.superspine_miss = min(1.0, k * math.exp(group.cross_pod_flows * math.log1p(-1 / k))) if k > 1 else 0.0


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
