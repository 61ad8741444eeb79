"""Which part of a job's footprint is at fault: its links, NICs (and their optics), switches and BGP sessions,
ranked from what the fabric measured and said (docs/jobs.md).

The evidence, each from a reader the caller gives (the tests give fakes):

- latency and loss, flow by flow: probes between the job's NICs on different leaves. The probe mesh's own
  results when Prometheus has them for the job's pairs (`gpufabric:probe_*` over the window); else, or to
  localise what the mesh shows, a short active probe across the footprint (the prober of
  gpufabric/telemetry/prober.py, one agent per host, a few source ports per pair so ECMP spreads each pair
  over the spines, bounded in probes and time). Pairs are taken across rails too where the plane's spines
  are shared: within one rail of two leaves, a spine's two links are always crossed together and no
  measurement could tell them apart.
- where each flow went: a path reader (in the lab, the switches' own kernels: `ip route get` with the flow's
  addresses and ports, the very hash the leaf forwards with), read before the probe and after it, a flow
  whose path changed in between left out; without one, each flow may have taken any of
  its leaves' equal-cost paths, and a link is weighed by its share of them.
- counters: errors, discards, link flaps and FEC on the footprint's ports, and BGP sessions that went down,
  over the window (Prometheus, from gpufabric's exporter).
- events: what `gpufabric job timeline` lists for the job (pushes, drains, restarts, BGP and link events).
- the job's own errors: `triage nccl` on its logs.

Localisation is network tomography on the flows: for each directed link, the flows that crossed it and those
that did not; a link whose crossing flows lost (or waited) clearly more than the others is a suspect. The most
telling link is taken first and the flows it explains are set aside before the next is sought, so that a link
merely sharing flows with a faulty one is not named with it.
"""

from __future__ import annotations

import shlex
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gpufabric.errors import GpufabricError
from gpufabric.export.probe_plan import FORMAT, flow_ports
from gpufabric.jobs.footprint import Footprint, LinkEnds, NicPlace

PORT = 17970  # UDP: triage's responders (the mesh's `probe serve` holds 17990 on the same addresses)
FLOW_PORTS = 4  # source ports per pair: flows per pair, spread by ECMP
INTERVAL = 0.05  # seconds between two probes of one peer
TIMEOUT = 0.5  # seconds after which a probe is lost
COUNT = 40  # probes per peer: 2 s at the interval above
MAX_PEERS = 64  # per host (the mesh's bound)
LOSS_FLOOR = 0.01  # a link's crossing flows lose this much more than the others, at least
MIN_LOST = 3  # probes, at least, before loss is evidence
DELAY_FLOOR = 0.001  # seconds: a link's crossing flows wait this much longer (median) than the others, at least
DELAY_FACTOR = 3.0  # ... and this many times the others' median
COUNTER_KINDS = {
    "errors": "errored frames",
    "discards": "frames dropped",
    "flaps": "link flaps",
    "fec": "uncorrected FEC codewords",
}


# -- the parts ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Part:
    """A part of the footprint, by the plan's own names: a link by its two ends (a the lower tier), a NIC by its
    server and interface (with its leaf port), a BGP session by its two switches, a switch by its name."""

    kind: str  # link | nic | bgp | switch
    device: str
    port: str = ""
    peer: str = ""
    peer_port: str = ""
    cable: str = ""

    @property
    def name(self) -> str:
        if self.kind == "link":
            return f"{self.device} {self.port} - {self.peer} {self.peer_port} ({self.cable})"
        if self.kind == "nic":
            return f"{self.device} {self.port} ({self.peer} {self.peer_port}, {self.cable})"
        if self.kind == "bgp":
            return f"BGP {self.device} - {self.peer}"
        return self.device

    def as_dict(self) -> dict[str, str]:
        if self.kind == "nic":
            return {"kind": "nic", "node": self.device, "interface": self.port, "leaf": self.peer,
                    "leaf_port": self.peer_port, "cable": self.cable}  # fmt: skip
        out = {"kind": self.kind, "device": self.device}
        if self.kind in ("link", "bgp"):
            out.update(port=self.port, peer=self.peer, peer_port=self.peer_port, cable=self.cable)
        return out


def link_part(k: LinkEnds) -> Part:
    return Part("link", k.a, k.a_port, k.b, k.b_port, k.cable)


def nic_part(n: NicPlace) -> Part:
    return Part("nic", n.node, n.interface, n.leaf, n.leaf_port, n.cable)


class Parts:
    """The footprint's parts, and each switch port's part (a fabric link's two ends, a NIC's leaf port)."""

    def __init__(self, found: Footprint) -> None:
        self.links = [link_part(k) for c in found.planes for k in c.links]
        self.nics = [nic_part(n) for n in found.nics if n.plane.startswith("compute")]
        self.by_port: dict[tuple[str, str], Part] = {}
        for p in self.links:
            self.by_port[(p.device, p.port)] = p
            self.by_port[(p.peer, p.peer_port)] = p
        for p in self.nics:
            self.by_port[(p.peer, p.peer_port)] = p
        self.between: dict[frozenset[str], Part] = {frozenset((p.device, p.peer)): p for p in self.links}
        self.switches = sorted({x for p in self.links for x in (p.device, p.peer)} | {p.peer for p in self.nics})


# -- evidence -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    part: Part
    source: str  # probe | counters | events | nccl
    strength: float  # 1 at its threshold; more is clearer
    said: str
    time: str = ""


Edge = tuple[str, str, str, str]  # a directed link: (from device, its port, to device, its port)


@dataclass(frozen=True)
class FlowSample:
    """One flow's probes: from a NIC's address and source port to a peer NIC's, and back."""

    src: str
    source: str
    dst: str
    address: str
    sport: int
    sent: int
    lost: int
    rtts: tuple[float, ...]

    @property
    def median(self) -> float | None:
        return statistics.median(self.rtts) if self.rtts else None


class PathReader(Protocol):
    def edges(self, flows: Sequence[FlowSample], dport: int) -> list[dict[Edge, float] | None]:
        """Per flow, the directed links its probe and its answer crossed (weight 1), or may have crossed (the
        share of the equal-cost paths that cross it); None where it cannot be told."""
        ...


class ProbeRunner(Protocol):
    def run(self, hosts: dict[str, dict[str, object]], count: int) -> list[FlowSample]: ...


class CounterReader(Protocol):
    def increases(self, ports: Sequence[tuple[str, str]], window: str) -> dict[tuple[str, str], dict[str, float]]:
        """(device, port) -> counter kind (COUNTER_KINDS) -> its increase over the window, for ports that rose."""
        ...

    def sessions_down(self, switches: Sequence[str], window: str) -> list[tuple[str, str, str]]:
        """(device, peer device, what) for each BGP session of these switches not up all the window."""
        ...

    def mesh(self, nodes: Sequence[str], window: str) -> list[dict[str, object]]:
        """The probe mesh's pairs between these nodes: {src, dst, src_leaf, dst_leaf, sent, lost, p99}."""
        ...


@dataclass(frozen=True)
class TimelineEvent:
    time: str
    kind: str
    device: str
    port: str
    node: str
    summary: str


# -- the active probe's plan --------------------------------------------------------------------------------


def probe_hosts(found: Footprint, dscp: int, count: int = COUNT) -> dict[str, dict[str, object]]:
    """Each host's share of the active probe, as `probe serve` reads a plan: its compute NICs answer, and each
    probes the job's compute NICs under other leaves of its plane part (rails crossed: see the module's note),
    at most MAX_PEERS a host, taken round-robin over the other leaves."""
    nics = [n for n in found.nics if n.plane.startswith("compute") and n.address]
    by_part: dict[str, list[NicPlace]] = defaultdict(list)
    for n in nics:
        by_part[n.plane].append(n)
    hosts: dict[str, dict[str, object]] = {}
    parts = sorted(by_part)
    for n in nics:
        doc = hosts.setdefault(n.node, _host_doc(n.node, dict.fromkeys(parts, dscp)))
        doc["responders"].append([n.interface, n.address, dscp])  # type: ignore[attr-defined]
    per_host: dict[str, int] = defaultdict(int)
    for part, mine in by_part.items():
        share = max(1, MAX_PEERS // max(1, len({n.plane for n in nics if n.node in {m.node for m in mine}})))
        for n in mine:
            others: dict[str, list[NicPlace]] = defaultdict(list)
            for m in mine:
                if m.leaf != n.leaf:
                    others[m.leaf].append(m)
            for m in _round_robin(list(others.values())):
                if per_host[n.node] >= share:
                    break
                per_host[n.node] += 1
                rail = "" if n.rail is None else str(n.rail)
                row = [n.interface, n.address, m.node, m.address, part, rail, n.leaf, m.leaf]
                hosts[n.node]["probes"].append(row)  # type: ignore[attr-defined]
    return hosts


def _host_doc(node: str, dscp: dict[str, int]) -> dict[str, object]:
    """A host's share as `probe serve` reads one; `dscp`: each compute plane part's RoCE DSCP."""
    return {"format": FORMAT, "node": node, "port": PORT, "source_ports": FLOW_PORTS, "source_base": PORT + 1,
            "interval": INTERVAL, "timeout": TIMEOUT, "dscp": dscp, "responders": [], "probes": []}  # fmt: skip


def _round_robin(groups: list[list[NicPlace]]) -> Iterable[NicPlace]:
    depth = max((len(g) for g in groups), default=0)
    for i in range(depth):
        for g in groups:
            if i < len(g):
                yield g[i]


def flows_of(answers: Iterable[dict[str, object]]) -> list[FlowSample]:
    """The agents' answers (gpufabric/telemetry/probe_agent.py) as flows."""
    out = []
    for answer in answers:
        node = str(answer["node"])
        for peer in answer["peers"]:  # type: ignore[attr-defined]
            for f in peer["flows"]:
                out.append(FlowSample(node, peer["source"], peer["dst"], peer["address"], int(f["sport"]),
                                      int(f["sent"]), int(f["lost"]), tuple(float(x) for x in f["rtts"])))  # fmt: skip
    return out


# -- tomography ---------------------------------------------------------------------------------------------


@dataclass
class LinkScore:
    edge: Edge
    kind: str  # loss | delay
    excess: float  # loss share, or seconds of median round trip, above the flows not crossing
    crossing: int
    others: int
    said: str
    either_way: bool = False  # the flows crossing it cross its other direction too: which way is not told
    # Delay: of the flows crossing it, how many are slower than the others by the floors, and how many are not.
    slower: int = 0
    not_slower: int = 0


def localise(flows: Sequence[FlowSample], paths: Sequence[dict[Edge, float] | None]) -> list[LinkScore]:
    """The directed links the flows' loss and delay point at, the clearest first (greedy: each link found sets
    aside the flows it explains)."""
    known = [(f, p) for f, p in zip(flows, paths, strict=True) if p]
    found = _greedy(known, "loss") + _greedy(known, "delay")
    return sorted(found, key=lambda s: -_strength(s))


def _strength(s: LinkScore) -> float:
    if s.kind == "loss":
        return s.excess / LOSS_FLOOR
    return s.excess / DELAY_FLOOR


def _greedy(known: list[tuple[FlowSample, dict[Edge, float]]], kind: str) -> list[LinkScore]:
    left = list(known)
    out: list[LinkScore] = []
    while left:
        best = max((s for s in _scores(left, kind) if _passes(s, left)), key=_choice, default=None)
        if best is None:
            break
        back = (best.edge[2], best.edge[3], best.edge[0], best.edge[1])
        best.either_way = all((p.get(best.edge, 0.0) > 0) == (p.get(back, 0.0) > 0) for _, p in left)
        out.append(best)
        left = [(f, p) for f, p in left if p.get(best.edge, 0.0) == 0.0]  # the flows it explains, set aside
    return out


def _choice(s: LinkScore) -> tuple[float, ...]:
    """Which passing link the greedy takes first. Loss: the clearest. Delay: the link that the most of the slow
    flows cross, then the fewest flows that are not slow, then the clearest. A full queue delays every flow
    crossing it, so the slow link is crossed by all its slow flows and by no other; a link beside it that most of
    them also cross (their other way, by ECMP's draw) can have the higher median, by which slow flows it drew:
    a choice by the median named such a link once in the lab's triage test."""
    if s.kind == "loss":
        return (_strength(s),)
    return (s.slower, -s.not_slower, _strength(s))


def _scores(known: list[tuple[FlowSample, dict[Edge, float]]], kind: str) -> list[LinkScore]:
    edges = {e for _, p in known for e in p}
    out = []
    for edge in edges:
        cross = [(f, p[edge]) for f, p in known if p.get(edge, 0.0) > 0]
        rest = [f for f, p in known if p.get(edge, 0.0) == 0]
        if not cross or not rest:
            continue
        if kind == "loss":
            sent = sum(f.sent * w for f, w in cross)
            lost = sum(f.lost * w for f, w in cross)
            base_sent = sum(f.sent for f in rest)
            base = sum(f.lost for f in rest) / base_sent if base_sent else 0.0
            if not sent:
                continue
            share = lost / sent
            said = f"{lost:g} of {sent:g} probes lost on the flows crossing it ({share:.1%}); {base:.1%} on the rest"
            out.append(LinkScore(edge, "loss", share - base, len(cross), len(rest), said))
        else:
            mine = [f.median for f, w in cross if w >= 1.0 and f.median is not None]
            theirs = [f.median for f in rest if f.median is not None]
            if not mine or not theirs:
                continue
            a, b = statistics.median(mine), statistics.median(theirs)
            said = (f"median round trip {a * 1e3:.2f} ms on the {len(mine)} flows crossing it, {b * 1e3:.2f} ms on "
                    f"the {len(theirs)} others")  # fmt: skip
            slower = sum(1 for m in mine if _slower(m, b))
            out.append(LinkScore(edge, "delay", a - b, len(mine), len(theirs), said, slower=slower,
                                 not_slower=len(mine) - slower))  # fmt: skip
    return out


def _slower(median: float, base: float) -> bool:
    """A flow's median round trip is slower than `base` (the other flows') by both of the delay floors."""
    return median - base >= DELAY_FLOOR and median >= DELAY_FACTOR * base


def _passes(s: LinkScore, known: list[tuple[FlowSample, dict[Edge, float]]]) -> bool:
    if s.kind == "loss":
        lost = sum(f.lost * p.get(s.edge, 0.0) for f, p in known)
        return s.excess >= LOSS_FLOOR and lost >= MIN_LOST
    base = statistics.median([f.median for f, p in known if p.get(s.edge, 0.0) == 0 and f.median is not None])
    return s.excess >= DELAY_FLOOR and s.excess + base >= DELAY_FACTOR * base


def ecmp_edges(found: Footprint, leaf_of: dict[str, str]) -> PathReader:
    """A path reader that knows only the plan: a flow may take any of its leaves' spines, each with its share."""
    return _PlanPaths(found, leaf_of)


class _PlanPaths:
    def __init__(self, found: Footprint, leaf_of: dict[str, str]) -> None:
        self.leaf_of = leaf_of  # NIC address -> its leaf
        self.up: dict[str, list[LinkEnds]] = defaultdict(list)
        for c in found.planes:
            for k in c.links:
                self.up[k.a].append(k)

    def edges(self, flows: Sequence[FlowSample], dport: int) -> list[dict[Edge, float] | None]:
        out: list[dict[Edge, float] | None] = []
        for f in flows:
            a, b = self.leaf_of.get(f.source), self.leaf_of.get(f.address)
            if a is None or b is None:
                out.append(None)
                continue
            found: dict[Edge, float] = {}
            for x, y in ((a, b), (b, a)):
                spines = {k.b for k in self.up[x]} & {k.b for k in self.up[y]}
                for k in self.up[x]:
                    if k.b in spines:
                        found[(k.a, k.a_port, k.b, k.b_port)] = 1 / len(spines)
                for k in self.up[y]:
                    if k.b in spines:
                        found[(k.b, k.b_port, k.a, k.a_port)] = 1 / len(spines)
            out.append(found)
        return out


# -- the report ---------------------------------------------------------------------------------------------


@dataclass
class Suspect:
    part: Part
    evidence: list[Evidence]
    confirm: list[str]

    @property
    def strength(self) -> float:
        return sum(e.strength for e in self.evidence)

    def as_dict(self) -> dict[str, object]:
        return {
            **self.part.as_dict(),
            "name": self.part.name,
            "strength": round(self.strength, 2),
            "evidence": [_evidence_dict(e) for e in self.evidence],
            "confirm": self.confirm,
        }


def _evidence_dict(e: Evidence) -> dict[str, object]:
    out: dict[str, object] = {"source": e.source, "said": e.said, "strength": round(e.strength, 2)}
    if e.time:
        out["time"] = e.time
    return out


@dataclass
class JobTriage:
    job: str | None
    nodes: tuple[str, ...]
    suspects: list[Suspect]
    probed: dict[str, object]  # how latency was measured, and its figures
    sources: dict[str, str]  # evidence source -> read | not given | what went wrong
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"job": self.job, "nodes": list(self.nodes), "suspects": [s.as_dict() for s in self.suspects],
                "probe": self.probed, "sources": self.sources, "notes": self.notes}  # fmt: skip


def rank(evidence: Iterable[Evidence], intent: str, window: int) -> list[Suspect]:
    """Evidence gathered per part, the parts ranked by the sum of their evidence's strength."""
    by_part: dict[Part, list[Evidence]] = defaultdict(list)
    for e in evidence:
        by_part[e.part].append(e)
    out = [Suspect(p, es, confirm(p, intent, window)) for p, es in by_part.items()]
    out.sort(key=lambda s: (-s.strength, s.part.kind, s.part.name))
    return out


def confirm(part: Part, intent: str, window: int) -> list[str]:
    """The read-only commands that look at a part: its switches' ports, counters and sessions over a window
    (`nornir validate --counter-window`), or for a NIC its leaf's and the host's read-back."""
    src = shlex.quote(intent)
    if part.kind in ("link", "bgp"):
        devices = " ".join(f"--device {shlex.quote(d)}" for d in (part.device, part.peer))
        return [f"nornir validate {src} {devices} --counter-window {window}"]
    if part.kind == "nic":
        return [
            f"nornir validate {src} --device {shlex.quote(part.peer)} --counter-window {window}",
            f"ansible-playbook -i <inventory> playbooks/validate.yml --limit {shlex.quote(part.device)}",
        ]
    return [f"nornir validate {src} --device {shlex.quote(part.device)} --counter-window {window}"]


def probe_evidence(scores: Sequence[LinkScore], parts: Parts) -> list[Evidence]:
    out = []
    for s in scores:
        a, a_port, b, b_port = s.edge
        part = parts.by_port.get((a, a_port)) or parts.by_port.get((b, b_port))
        if part is None:
            continue
        what = "loss" if s.kind == "loss" else "queueing delay"
        # A switch that hashes both directions of a flow alike (Linux's does) sends its answer back over the
        # same link: which way is at fault is then not told, and not claimed.
        way = "<->" if s.either_way else "->"
        out.append(Evidence(part, "probe", _strength(s), f"{what} {a} {a_port} {way} {b} {b_port}: {s.said}"))
    return out


def counter_evidence(
    rose: dict[tuple[str, str], dict[str, float]], down: Sequence[tuple[str, str, str]], parts: Parts, window: str
) -> list[Evidence]:
    out = []
    for (device, port), kinds in sorted(rose.items()):
        part = parts.by_port.get((device, port))
        if part is None:
            continue
        for kind, value in sorted(kinds.items()):
            if value > 0:
                what = COUNTER_KINDS.get(kind, kind)
                out.append(Evidence(part, "counters", 1.0, f"{device} {port}: {value:g} {what} in {window}"))
    said: dict[Part, list[str]] = defaultdict(list)  # a session, as each of its ends reports it: one fact
    for device, peer, what in down:
        link = parts.between.get(frozenset((device, peer)))
        if link is not None:
            part = Part("bgp", link.device, link.port, link.peer, link.peer_port, link.cable)
            said[part].append(f"{device}'s session with {peer}: {what} in {window}")
    out += [Evidence(part, "counters", 1.0, "; ".join(texts)) for part, texts in said.items()]
    return out


def event_evidence(events: Iterable[TimelineEvent], parts: Parts) -> list[Evidence]:
    """What the job's timeline lists on its parts (a push, a drain, a restart, a BGP or link event), weighed half
    of a measurement together, however many there are: they say what happened there, not that it hurt."""
    found = _placed_events(events, parts)
    count: dict[Part, int] = defaultdict(int)
    for part, _ in found:
        count[part] += 1
    return [Evidence(part, "events", 0.5 / count[part], f"{e.kind}: {e.summary}", e.time) for part, e in found]


def _placed_events(events: Iterable[TimelineEvent], parts: Parts) -> list[tuple[Part, TimelineEvent]]:
    out = []
    nic_of = {(p.device, p.port): p for p in parts.nics}
    for e in events:
        part = None
        if e.device and e.port:
            part = parts.by_port.get((e.device, e.port))
        if part is None and e.node and e.port:
            part = nic_of.get((e.node, e.port))
        if part is None and e.kind == "bgp" and e.device:
            peers = [p for p in parts.links if e.device in (p.device, p.peer) and _other(p, e.device) in e.summary]
            if len(peers) == 1:
                p = peers[0]
                part = Part("bgp", p.device, p.port, p.peer, p.peer_port, p.cable)
        if part is None and e.device in parts.switches:
            part = Part("switch", e.device)
        if part is not None:
            out.append((part, e))
    return out


def _other(link: Part, device: str) -> str:
    return link.peer if link.device == device else link.device


def mesh_evidence(pairs: Sequence[dict[str, object]], paths: PathReader, found: Footprint) -> list[FlowSample]:
    """The mesh's pairs as flows of unknown path (one per pair): the plan's equal-cost paths weigh them."""
    address = {n.node + "/" + n.leaf: n.address for n in found.nics}
    flows = []
    for p in pairs:
        src = address.get(f"{p['src']}/{p['src_leaf']}")
        dst = address.get(f"{p['dst']}/{p['dst_leaf']}")
        if src is None or dst is None:
            continue
        p99 = p.get("p99")
        rtts = (float(p99),) if isinstance(p99, int | float) else ()  # type: ignore[arg-type]
        flows.append(FlowSample(str(p["src"]), src, str(p["dst"]), dst, 0, int(p["sent"]), int(p["lost"]), rtts))  # type: ignore[call-overload]
    return flows


# -- the whole triage ---------------------------------------------------------------------------------------


@dataclass
class Readers:
    """Where the evidence comes from; None: not read (said so in the report)."""

    counters: CounterReader | None = None
    probe: ProbeRunner | None = None
    paths: PathReader | None = None
    events: list[TimelineEvent] | None = None
    nccl: list[Evidence] | None = None  # the NCCL triage's suspects, as evidence (nccl_evidence)


def _window_seconds(window: str) -> int:
    """The window in seconds for the confirming command's counter window (`nornir validate` takes 1 h at most)."""
    units = {"s": 1, "m": 60, "h": 3600}
    seconds = int(window[:-1]) * units[window[-1]] if window[-1:] in units and window[:-1].isdigit() else 60
    return max(1, min(seconds, 3600))


def triage_job(
    found: Footprint, readers: Readers, *, intent: str, dscp: int, window: str = "5m", count: int = COUNT
) -> JobTriage:
    parts = Parts(found)
    evidence: list[Evidence] = []
    sources: dict[str, str] = {}
    notes: list[str] = []
    mesh: list[dict[str, object]] = []
    if readers.counters is not None:
        ports = sorted(parts.by_port)
        rose = readers.counters.increases(ports, window)
        down = readers.counters.sessions_down(parts.switches, window)
        evidence += counter_evidence(rose, down, parts, window)
        mesh = readers.counters.mesh(list(found.nodes), window)
        sources["counters"] = f"read: {len(rose)} port(s) rose, {len(down)} BGP session(s) down in {window}"
    else:
        sources["counters"] = "not read (give --prometheus)"
    leaf_of = {n.address: n.leaf for n in found.nics}
    planned = ecmp_edges(found, leaf_of)
    mesh_flows = mesh_evidence(mesh, planned, found)
    probed: dict[str, object] = {"source": "none"}
    flows: list[FlowSample] = []
    before: dict[FlowKey, dict[Edge, float] | None] = {}
    if mesh_flows and not _degraded(mesh_flows):
        flows, probed = mesh_flows, {"source": "mesh", "pairs": len(mesh_flows)}
        sources["latency"] = f"the probe mesh: {len(mesh_flows)} pair(s), none degraded"
    elif readers.probe is not None:
        hosts = probe_hosts(found, dscp, count)
        if any(h["probes"] for h in hosts.values()):
            if readers.paths is not None:
                before = _paths_by_flow(readers.paths, planned_flows(hosts))
            flows = readers.probe.run(hosts, count)
            why = "the mesh shows degraded pairs: localised" if mesh_flows else "no probe mesh data for the job"
            probed = {"source": "active", "flows": len(flows), "count": count, "why": why}
            sources["latency"] = f"active probe ({why}): {len(flows)} flow(s), {count} probes a peer"
        else:
            sources["latency"] = "nothing to probe: every compute NIC of the job under one leaf"
    elif mesh_flows:
        flows, probed = mesh_flows, {"source": "mesh", "pairs": len(mesh_flows)}
        sources["latency"] = f"the probe mesh: {len(mesh_flows)} pair(s), some degraded (no --lab: not localised)"
    else:
        sources["latency"] = "no probe data (give --prometheus with the mesh, or --lab to probe)"
    if flows:
        paths = readers.paths if readers.paths is not None and probed["source"] == "active" else planned
        routes = paths.edges(flows, PORT)
        moved: list[FlowSample] = []
        if paths is not planned:
            routes, moved = _set_aside_moved(flows, routes, before)
        scores = localise(flows, routes)
        evidence += probe_evidence(scores, parts)
        probed.update(_figures(flows, routes))
        if paths is not planned:
            probed["paths_moved"] = len(moved)
        if paths is planned and scores:
            notes.append("flows' paths not read: each may have taken any equal-cost path, weighed by its share")
        if moved:
            notes.append(_moved_note(moved, flows))
    if readers.events is not None:
        evidence += event_evidence(readers.events, parts)
        sources["events"] = f"the job's timeline: {len(readers.events)} event(s)"
    else:
        sources["events"] = "not read"
    if readers.nccl is not None:
        evidence += readers.nccl
        sources["nccl"] = f"{len(readers.nccl)} suspect(s) from the job's NCCL errors"
    suspects = rank(evidence, intent, _window_seconds(window))
    return JobTriage(found.job, found.nodes, suspects, probed, sources, notes)


FlowKey = tuple[str, str, int]  # a probe flow: its source address, its destination address, its source port


def _key(f: FlowSample) -> FlowKey:
    return (f.source, f.address, f.sport)


def planned_flows(hosts: dict[str, dict[str, object]]) -> list[FlowSample]:
    """The flows the active probe will send, before it runs: each probe row of each host's share from each of the
    source ports the prober binds (flow_ports)."""
    out = []
    for node, doc in hosts.items():
        ports = flow_ports(int(doc["source_base"]), int(doc["source_ports"]))  # type: ignore[call-overload]
        for row in doc["probes"]:  # type: ignore[attr-defined]
            out += [FlowSample(node, str(row[1]), str(row[2]), str(row[3]), port, 0, 0, ()) for port in ports]
    return out


def _paths_by_flow(paths: PathReader, flows: Sequence[FlowSample]) -> dict[FlowKey, dict[Edge, float] | None]:
    return {_key(f): r for f, r in zip(flows, paths.edges(flows, PORT), strict=True)}


def _set_aside_moved(
    flows: Sequence[FlowSample],
    routes: Sequence[dict[Edge, float] | None],
    before: dict[FlowKey, dict[Edge, float] | None],
) -> tuple[list[dict[Edge, float] | None], list[FlowSample]]:
    """The paths read after the probe, a flow whose path differs from the one read before it set aside (None): a
    route changed while it ran (a BGP session reset, a link that went down or came back), so its probes may have
    crossed either path, and placing them on the later one named links they never crossed. A flow whose path was
    not told before the probe keeps the one read after it, as without the earlier read."""
    kept: list[dict[Edge, float] | None] = []
    moved: list[FlowSample] = []
    for f, after in zip(flows, routes, strict=True):
        earlier = before.get(_key(f))
        if earlier and after and earlier != after:
            kept.append(None)
            moved.append(f)
        else:
            kept.append(after)
    return kept, moved


def _moved_note(moved: Sequence[FlowSample], flows: Sequence[FlowSample]) -> str:
    sources = sorted({f.src for f in moved})
    return (
        f"{len(moved)} of {len(flows)} flow(s) took another path after the probe than before it (from "
        f"{', '.join(sources[:5])}{' and more' if len(sources) > 5 else ''}): a route changed while the probe ran, "
        "so they are left out of the localisation; triage again once the routes have settled"
    )


def _degraded(flows: Sequence[FlowSample]) -> bool:
    """The mesh shows a pair losing probes or slower than the floor (its p99)."""
    return any(f.lost >= MIN_LOST or (f.rtts and max(f.rtts) >= DELAY_FLOOR) for f in flows)


def _figures(flows: Sequence[FlowSample], routes: Sequence[dict[Edge, float] | None]) -> dict[str, object]:
    sent = sum(f.sent for f in flows)
    lost = sum(f.lost for f in flows)
    medians = [m for m in (f.median for f in flows) if m is not None]
    return {
        "sent": sent,
        "lost": lost,
        "median_rtt": statistics.median(medians) if medians else None,
        "paths_known": sum(1 for r in routes if r),
    }


def nccl_evidence(suspects: Iterable[object], found: Footprint) -> list[Evidence]:
    """`triage nccl`'s suspects (gpufabric/jobs/triage.py) as evidence on the job's parts."""
    out = []
    nics = {f"{n.node} {n.interface}": n for n in found.nics}
    for s in suspects:
        kind, name, events = getattr(s, "kind", ""), getattr(s, "name", ""), getattr(s, "events", 0)
        if kind == "nic" and name in nics:
            part = nic_part(nics[name])
        elif kind in ("leaf", "server"):
            part = Part("switch" if kind == "leaf" else "server", name)
        else:
            continue
        out.append(Evidence(part, "nccl", 1.0, f"named by every NCCL error weighed ({events} of them)"))
    return out


MAX_TIMELINE = 64 << 20  # bytes
EVENT_KINDS = frozenset({"push", "drain", "restart", "upgrade", "remediation", "alert", "bgp", "link", "counter"})


def read_timeline(path: str | Path) -> list[TimelineEvent]:
    """`gpufabric job timeline --json`'s events, each field checked (a string; a kind of the timeline's)."""
    from gpufabric.inputs import json_text, read_bytes

    raw = read_bytes(path, what="timeline", max_bytes=MAX_TIMELINE)
    try:
        doc = json_text(raw.decode("utf-8"), path, "timeline")
    except UnicodeDecodeError:
        raise TimelineError(f"{path}: the timeline is not UTF-8") from None
    events = doc.get("events") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise TimelineError(f"{path}: no 'events' list: give `gpufabric job timeline JOB --json`'s output")
    out = []
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            raise TimelineError(f"{path}: events[{i}] is not an object")
        fields = {}
        for key in ("time", "kind", "device", "port", "node", "summary"):
            value = e.get(key) if e.get(key) is not None else ""
            if not isinstance(value, str) or len(value) > 2000:
                raise TimelineError(f"{path}: events[{i}].{key} is not a string (at most 2000 characters)")
            fields[key] = value
        if fields["kind"] not in EVENT_KINDS:
            raise TimelineError(f"{path}: events[{i}].kind {fields['kind'][:40]!r} is none of {sorted(EVENT_KINDS)}")
        out.append(TimelineEvent(**fields))
    return out


class TimelineError(GpufabricError):
    """A timeline file that is not `job timeline --json`'s (the message names the field)."""
