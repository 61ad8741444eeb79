"""A job's footprint, read from the plan: its nodes, their NICs per plane and rail, the leaf ports and cables
behind them, and the spines and superspines the plan's ECMP paths between the job's leaves cross, and the same
for the way to storage.

Which switches traffic can cross is the plan's own routing: the eBGP path vector of gpufabric/plan/ecmp.py,
whose equal-cost next hops, followed from one leaf toward another, are every path ECMP may hash a flow onto.
On a rail-optimized plane the job's traffic is taken rail by rail (NCCL's rings and trees join the NICs of
one rail; traffic between rails goes over NVLink first, PXN): its leaves are paired within a rail. All nodes
under one leaf per rail: no spine at all. The storage path pairs the job's leaves on a plane that holds
storage servers with those servers' leaves.

Leaves with the same neighbours are alike to the path vector (the same spines, the same ways on from them), so
it runs once per such class of leaves, not once per leaf: a 1,024-node job on the 32k example has 128 leaves in
2 classes (its 2 pods).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpufabric.errors import GpufabricError
from gpufabric.export.cabling import cable_id
from gpufabric.plan.ecmp import next_hops
from gpufabric.plan.model import Device, HostNic, Link, Plan, PlanePlan, Server, ip
from gpufabric.plan.multiplane import part_name
from gpufabric.scheduler.slurm import Slurm, read_jobs

COMPUTE = "compute"
MAX_SHOWN = 10  # unknown nodes named in an error, the rest counted


class FootprintError(GpufabricError):
    """The job cannot be placed on the plan (a node the plan does not hold): exit 2, naming it."""


@dataclass(frozen=True, slots=True)
class NicPlace:
    """One of the job's NICs: where it plugs in, and the cable label a technician finds there."""

    node: str
    plane: str  # as the exports name it: compute-p2 for plane 2 of a multi-plane compute plane
    rail: int | None  # the leaf's rail (rail-optimized planes only)
    interface: str
    address: str
    leaf: str
    leaf_port: str
    cable: str
    bond: str | None = None


@dataclass(frozen=True, slots=True)
class LinkEnds:
    """A fabric link on a job's paths, by its two ends (names in order) and its cable label."""

    a: str
    a_port: str
    b: str
    b_port: str
    cable: str


@dataclass(frozen=True, slots=True)
class Crossing:
    """What traffic between some leaves can cross on the plan's ECMP paths: its spines, superspines and the
    fabric cables between them. `toward`: the far side's leaves (storage servers'), empty for the job's own."""

    plane: str
    leaves: tuple[str, ...]
    toward: tuple[str, ...]
    spines: tuple[str, ...]
    superspines: tuple[str, ...]
    cables: tuple[str, ...]
    servers: tuple[str, ...] = ()  # the storage servers on the far side
    links: tuple[LinkEnds, ...] = ()  # the fabric links behind `cables`, by their ends (the telemetry join's ports)


@dataclass(frozen=True)
class Footprint:
    job: str | None
    nodes: tuple[str, ...]
    nics: tuple[NicPlace, ...]
    planes: tuple[Crossing, ...]  # the job's own traffic, per compute plane
    storage: tuple[Crossing, ...]  # the way to storage, per plane holding storage servers
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, object]:
        return {
            "job": self.job,
            "nodes": list(self.nodes),
            "nics": [_nic_dict(n) for n in self.nics],
            "planes": [_crossing_dict(c) for c in self.planes],
            "storage": [_crossing_dict(c) for c in self.storage],
            "notes": list(self.notes),
        }


def _nic_dict(nic: NicPlace) -> dict[str, object]:
    return {
        "node": nic.node,
        "plane": nic.plane,
        "rail": nic.rail,
        "interface": nic.interface,
        "address": nic.address,
        "leaf": nic.leaf,
        "leaf_port": nic.leaf_port,
        "cable": nic.cable,
        "bond": nic.bond,
    }


def _crossing_dict(c: Crossing) -> dict[str, object]:
    out: dict[str, object] = {
        "plane": c.plane,
        "leaves": list(c.leaves),
        "spines": list(c.spines),
        "superspines": list(c.superspines),
        "cables": list(c.cables),
    }
    if c.servers or c.toward:
        out["servers"] = list(c.servers)
        out["toward"] = list(c.toward)
    return out


def footprint(plan: Plan, nodes: Sequence[str], job: str | None = None) -> Footprint:
    """The footprint of a job on `nodes` (names as the plan writes them; duplicates taken once)."""
    return Footprints(plan).footprint(nodes, job)


class Footprints:
    """The footprints of many jobs on one plan: the plan's indexes (servers, host cables, each plane's ECMP
    graph and its walks) are built on the first job that needs them and kept for the next ones, so a thousand
    jobs cost the plan's walks once (the telemetry join places every running job at each refresh)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.servers = {s.name: s for s in plan.servers}
        self._targets = _storage_servers(plan)
        self._graphs: dict[str, _Graph] = {}
        self._cables: dict[str, dict[tuple[str, str], str]] = {}
        self._leaves: dict[str, dict[str, Device]] = {}

    def warm(self) -> None:
        """Build every index a job's footprint may need now (each plane's graph, leaves and host cables), so the
        first job placed does not pay for them."""
        for name, plane in self.plan.planes.items():
            self._host_cables(name)
            self._leaves.setdefault(name, plane_leaves(plane))
            if name == COMPUTE or name in self._targets:
                self._graph(name)

    def _graph(self, name: str) -> _Graph:
        found = self._graphs.get(name)
        if found is None:
            found = self._graphs[name] = _Graph(self.plan.planes[name])
        return found

    def _host_cables(self, name: str) -> dict[tuple[str, str], str]:
        found = self._cables.get(name)
        if found is None:
            found = self._cables[name] = host_cables(self.plan.planes[name])
        return found

    def footprint(self, nodes: Sequence[str], job: str | None = None) -> Footprint:
        plan, servers = self.plan, self.servers
        wanted = list(dict.fromkeys(nodes))
        unknown = [n for n in wanted if n not in servers]
        if unknown:
            more = f" and {len(unknown) - MAX_SHOWN} more" if len(unknown) > MAX_SHOWN else ""
            raise FootprintError(
                f"not a server of the plan ({plan.source}): {', '.join(unknown[:MAX_SHOWN])}{more}; "
                "name the nodes as the plan does (gpufabric export inventory)"
            )
        if not wanted:
            raise FootprintError("no node named: give a job id or --nodes")
        chosen = [servers[n] for n in wanted]
        nics: list[NicPlace] = []
        planes: list[Crossing] = []
        storage: list[Crossing] = []
        targets = self._targets
        for name, plane in plan.planes.items():
            mine = [(s, nic) for s in chosen for nic in s.nics if nic.plane == name]
            if not mine:
                continue
            leaves = self._leaves.get(name)
            if leaves is None:
                leaves = self._leaves[name] = plane_leaves(plane)
            placed = place_nics(plane, mine, self._host_cables(name), leaves)
            nics += placed
            if name != COMPUTE and name not in targets:
                continue  # a plane the job's traffic does not cross between its nodes (business): its NICs only
            graph = self._graph(name)
            if name == COMPUTE:
                planes += _own(graph, placed)
            if name in targets:
                storage.append(_to_storage(graph, placed, targets[name]))
        notes = []
        if plan.infiniband is not None:
            notes.append(
                f"the {plan.infiniband.plane} plane is InfiniBand: its adapters and cables are not in this footprint"
            )
        return Footprint(
            job,
            tuple(wanted),
            tuple(nics),
            tuple(planes),
            tuple(storage),
            tuple(notes),
        )


def _storage_servers(plan: Plan) -> dict[str, list[Server]]:
    """plane -> the storage servers with a NIC on it."""
    out: dict[str, list[Server]] = defaultdict(list)
    for s in plan.servers:
        if s.kind == "storage":
            for plane in dict.fromkeys(nic.plane for nic in s.nics):
                out[plane].append(s)
    return out


def host_cables(plane: PlanePlan, ports: set[tuple[str, str]] | None = None) -> dict[tuple[str, str], str]:
    """(server, interface) -> the label of its cable, for `ports` (every host port when None), in one pass over
    the plane's links."""
    return {
        (link.a, link.a_port): cable_id(plane.prefix, link.number)
        for link in plane.links
        if link.kind == "host" and (ports is None or (link.a, link.a_port) in ports)
    }


def plane_leaves(plane: PlanePlan) -> dict[str, Device]:
    return {d.name: d for d in plane.devices if d.role == "leaf"}


def place_nics(
    plane: PlanePlan,
    mine: list[tuple[Server, HostNic]],
    cables: dict[tuple[str, str], str] | None = None,
    leaves: dict[str, Device] | None = None,
) -> list[NicPlace]:
    """The NICs with their plane part, rail and host cable (`cables` as host_cables gives them, else read for
    these NICs in one pass over the plane's links; `leaves` the plane's leaves by name, else read here)."""
    if cables is None:
        cables = host_cables(plane, {(s.name, nic.interface) for s, nic in mine})
    if leaves is None:
        leaves = plane_leaves(plane)
    out = []
    for s, nic in mine:
        leaf = leaves.get(nic.leaf)
        index = plane.plane_of.get(nic.leaf)
        out.append(
            NicPlace(
                node=s.name,
                plane=part_name(plane.name, index) if index is not None else plane.name,
                rail=leaf.rail if leaf is not None else None,
                interface=nic.interface,
                address=ip(nic.address) or "",
                leaf=nic.leaf,
                leaf_port=nic.leaf_port,
                cable=cables.get((s.name, nic.interface), ""),
                bond=nic.bond,
            )
        )
    return out


def _own(graph: _Graph, placed: list[NicPlace]) -> list[Crossing]:
    """Per plane part, what traffic between the job's leaves of one rail can cross."""
    groups: dict[str, dict[int | None, list[str]]] = defaultdict(lambda: defaultdict(list))
    for nic in placed:
        group = groups[nic.plane][nic.rail]
        if nic.leaf not in group:
            group.append(nic.leaf)
    out = []
    for part, by_rail in groups.items():
        switches: set[str] = set()
        edges: set[tuple[str, str]] = set()
        for leaves in by_rail.values():
            found, used = graph.between(leaves, leaves)
            switches |= found
            edges |= used
        every = [leaf for leaves in by_rail.values() for leaf in leaves]
        out.append(graph.crossing(part, every, (), switches, edges))
    return out


def _to_storage(graph: _Graph, placed: list[NicPlace], servers: list[Server]) -> Crossing:
    plane = graph.plane.name
    leaves = list(dict.fromkeys(nic.leaf for nic in placed))
    toward = list(dict.fromkeys(nic.leaf for s in servers for nic in s.nics if nic.plane == plane))
    switches, edges = graph.between(leaves, toward)
    return graph.crossing(plane, leaves, toward, switches, edges, servers=tuple(s.name for s in servers))


@dataclass
class _Walk:
    """The ECMP paths from one leaf to another: the switches between, the links among those switches, and the
    switches next to each end (the ends' own links to them are each leaf's)."""

    switches: set[str] = field(default_factory=set)
    inner: set[tuple[str, str]] = field(default_factory=set)
    first: set[str] = field(default_factory=set)
    last: set[str] = field(default_factory=set)


def _edge(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


class _Graph:
    """A plane's BGP switches and fabric links, the path vector's next hops per class of leaves, and the
    cable labels of the links the paths use."""

    def __init__(self, plane: PlanePlan) -> None:
        self.plane = plane
        self.role = {d.name: d.role for d in plane.devices}
        self.asn = {d.name: d.asn for d in plane.devices if d.asn is not None}
        self.adjacent: dict[str, list[str]] = defaultdict(list)
        # The links of each pair of switches, kept in the same pass (labelled only when used).
        self._edge_links: dict[tuple[str, str], list[Link]] = defaultdict(list)
        adjacent, asn, links = self.adjacent, self.asn, self._edge_links
        for link in plane.links:
            a, b = link.a, link.b
            if link.kind == "fabric" and a in asn and b in asn:
                adjacent[a].append(b)
                adjacent[b].append(a)
                links[(a, b) if a < b else (b, a)].append(link)
        self._class: dict[str, frozenset[str]] = {}
        self._members: dict[frozenset[str], list[str]] | None = None
        self._hops: dict[frozenset[str], tuple[str, dict[str, list[str]]]] = {}
        self._walks: dict[tuple[frozenset[str], frozenset[str]], _Walk] = {}

    def key(self, leaf: str) -> frozenset[str]:
        found = self._class.get(leaf)
        if found is None:
            found = self._class[leaf] = frozenset(self.adjacent.get(leaf, ()))
        return found

    def members(self, key: frozenset[str]) -> list[str]:
        """Every leaf of the plane with these neighbours (computed once, on the first ask)."""
        if self._members is None:
            self._members = defaultdict(list)
            for name, role in self.role.items():
                if role == "leaf" and name in self.asn:
                    self._members[self.key(name)].append(name)
        return self._members.get(key, [])

    def between(self, sources: Iterable[str], targets: Iterable[str]) -> tuple[set[str], set[tuple[str, str]]]:
        """The switches (leaves left out) and links on ECMP paths between a source leaf and a different target
        leaf, over every such pair."""
        by_source: dict[frozenset[str], set[str]] = defaultdict(set)
        by_target: dict[frozenset[str], set[str]] = defaultdict(set)
        for s in sources:
            if s in self.asn:
                by_source[self.key(s)].add(s)
        for t in targets:
            if t in self.asn:
                by_target[self.key(t)].add(t)
        switches: set[str] = set()
        edges: set[tuple[str, str]] = set()
        for tk, targets_here in by_target.items():
            for sk, sources_here in by_source.items():
                if len(targets_here | sources_here) < 2:
                    continue  # one leaf on both sides: its traffic turns on the leaf itself
                walk = self._walk(sk, tk)
                switches |= walk.switches
                edges |= walk.inner
                # A class's leaves have the same neighbours, not the same cables: each leaf's own links to
                # the first (or last) switches of the walk.
                edges.update(_edge(leaf, x) for leaf in sources_here for x in walk.first)
                edges.update(_edge(leaf, x) for leaf in targets_here for x in walk.last)
        return switches, edges

    def _walk(self, sk: frozenset[str], tk: frozenset[str]) -> _Walk:
        """Every ECMP path from a leaf of class `sk` to the path vector's origin of class `tk` (another leaf)."""
        done = self._walks.get((sk, tk))
        if done is not None:
            return done
        origin, hops = self._origin(tk)
        start = next((m for m in self.members(sk) if m != origin), None)
        walk = _Walk()
        if start is not None and start in hops:
            walk.first = set(hops[start])
            seen = {start}
            stack = [start]
            while stack:
                here = stack.pop()
                for there in set(hops.get(here, ())):
                    if there == origin:
                        walk.last.add(here)
                    elif here != start:
                        walk.inner.add(_edge(here, there))
                    if there != origin and there not in seen:
                        seen.add(there)
                        stack.append(there)
            walk.switches = {s for s in seen if self.role.get(s) != "leaf"}
        self._walks[(sk, tk)] = walk
        return walk

    def _origin(self, key: frozenset[str]) -> tuple[str, dict[str, list[str]]]:
        found = self._hops.get(key)
        if found is None:
            origin = self.members(key)[0]
            found = self._hops[key] = (origin, next_hops(origin, self.asn, self.adjacent))  # type: ignore[arg-type]
        return found

    def crossing(
        self,
        part: str,
        leaves: Sequence[str],
        toward: Sequence[str],
        switches: set[str],
        edges: set[tuple[str, str]],
        *,
        servers: tuple[str, ...] = (),
    ) -> Crossing:
        by_role: dict[str, list[str]] = defaultdict(list)
        for name in switches:
            by_role[self.role[name]].append(name)
        crossing = Crossing(
            part,
            tuple(leaves),
            tuple(toward),
            tuple(_natural(by_role["spine"])),
            tuple(_natural(by_role["superspine"])),
            tuple(sorted(label for edge in edges for label in self.cables(edge))),
            servers,
            tuple(self.ends(edges)),
        )
        return crossing

    def cables(self, edge: tuple[str, str]) -> list[str]:
        """The labels of the fabric cables between two switches (names in order), as the cabling export
        writes them."""
        return [cable_id(self.plane.prefix, link.number) for link in self._edge_links.get(edge, ())]

    def ends(self, edges: Iterable[tuple[str, str]]) -> list[LinkEnds]:
        """The fabric links between these pairs of switches, by their ends, in cable order."""
        found = [link for edge in edges for link in self._edge_links.get(edge, ())]
        found.sort(key=lambda link: link.number)
        prefix = self.plane.prefix
        return [LinkEnds(k.a, k.a_port, k.b, k.b_port, cable_id(prefix, k.number)) for k in found]


def _natural(names: Iterable[str]) -> list[str]:
    """Names in the order a person counts them: spine2 before spine10."""
    return sorted(names, key=lambda n: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", n)])


JOB_ID = re.compile(r"[0-9]{1,10}")  # a Slurm job id as squeue --json gives it (`job_id`, an integer)


def slurm_job_nodes(job: str, slurm: Slurm) -> list[str]:
    """The nodes a running Slurm job holds, from `squeue --json` through the Slurm reader (read-only). A job
    that is pending or ended holds no node there: that is an error naming it, never an empty footprint."""
    if not JOB_ID.fullmatch(job):
        raise FootprintError(f"{job[:40]!r} is not a Slurm job id (digits; for a job array, its own job id)")
    holding = read_jobs(slurm.squeue())  # the reader's public, read-only squeue
    tag = f"job {int(job)} "  # how read_jobs names a job holding a node: "job <id> <state>"
    nodes = [node for node, jobs in holding.items() if any(j.startswith(tag) for j in jobs)]
    if not nodes:
        raise FootprintError(
            f"Slurm job {job} holds no node now (pending, ended, or not a job of this cluster): name its nodes "
            "with --nodes (sacct -j JOB -o NodeList)"
        )
    return nodes
