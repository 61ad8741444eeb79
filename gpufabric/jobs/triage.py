"""What NCCL's and PyTorch's errors name, mapped onto the plan, and the part they have in common.

Every address, GID, host name and rank a line names (gpufabric/jobs/nccl_log.py) is looked up in the plan:
an address or an IPv4-mapped GID (RoCE v2: ::ffff:a.b.c.d) is a NIC's address on a data plane (its rail, leaf
port and cable) or a server's management address; a host name is a server's name (or the name in the
management domain); a rank is the host NCCL's init lines place it on. What is not in the plan stays unresolved,
with the reason; nothing is inferred from it (a CUDA device is not taken for a rail: which NIC a GPU uses is
NCCL's choice at run time, and the log says it only through the GIDs).

The evidence is the errors that name the network (NCCL's NET/IB, verbs and socket warnings). Each is a set of
parts: for every end it names, the NIC (with its cable), the NIC's leaf and the server. An end known only as a
server (a host name, a bootstrap socket's address, a rank) names the server and allows any of its NICs and
their leaves. A part every error names or allows, and at least one names, is common to them; the suspects are
the common parts of the most specific kind (a NIC and its cable before a leaf, a leaf before a server).
PyTorch's watchdog timeouts are the evidence only when no network error is there: a hung collective times out
on every rank, so beside NCCL's own errors they point nowhere.
"""

from __future__ import annotations

import ipaddress
import shlex
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace

from gpufabric.jobs.footprint import NicPlace, host_cables, place_nics
from gpufabric.jobs.nccl_log import Reading, Said
from gpufabric.plan.model import HostNic, Plan, Server

SPECIFIC = ("nic", "leaf", "server")  # the kinds of part, the most specific first


@dataclass(frozen=True)
class End:
    """One end an error names, as the log gave it, and what the plan holds there."""

    said: str  # the GID, address, host name or rank, as written
    via: str  # local GID | remote GID | peer address | peer name | host | rank
    server: str | None = None
    nic: NicPlace | None = None
    note: str = ""  # why it is not resolved, or what it is when it is no data NIC

    def parts(self) -> list[tuple[str, str]]:
        if self.nic is not None:
            return [
                ("nic", f"{self.nic.node} {self.nic.interface}"),
                ("leaf", self.nic.leaf),
                ("server", self.nic.node),
            ]
        return [("server", self.server)] if self.server is not None else []

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"said": self.said, "via": self.via, "server": self.server}
        if self.nic is not None:
            n = self.nic
            out["nic"] = {
                "interface": n.interface,
                "plane": n.plane,
                "rail": n.rail,
                "address": n.address,
                "leaf": n.leaf,
                "leaf_port": n.leaf_port,
                "cable": n.cable,
            }
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class Event:
    said: Said
    ends: tuple[End, ...]
    notes: tuple[str, ...] = ()

    def parts(self) -> set[tuple[str, str]]:
        return {p for end in self.ends for p in end.parts()}

    def as_dict(self) -> dict[str, object]:
        s = self.said
        out: dict[str, object] = {
            "kind": s.kind,
            "layout": s.layout,
            "file": s.where.file,
            "line": s.where.line,
            "host": s.host,
            "cuda_device": s.device,
            "rank": s.rank,
            "detail": dict(s.detail),
            "ends": [e.as_dict() for e in self.ends],
        }
        if s.pg_rank is not None:
            out["process_group_rank"] = s.pg_rank
        if s.hca is not None:
            out["hca"] = s.hca
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass(frozen=True)
class Suspect:
    kind: str  # nic | leaf | server
    name: str
    events: int
    nic: NicPlace | None = None
    confirm: tuple[str, ...] = ()  # read-only commands that look at it

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "name": self.name, "events": self.events}
        if self.confirm:
            out["confirm"] = list(self.confirm)
        if self.nic is not None:
            out.update(
                plane=self.nic.plane,
                rail=self.nic.rail,
                cable=self.nic.cable,
                leaf=self.nic.leaf,
                leaf_port=self.nic.leaf_port,
            )
        return out


@dataclass
class Triage:
    reading: Reading
    events: list[Event]
    evidence: str  # network | timeouts | none
    weighed: int  # the errors the common part is sought in
    suspects: list[Suspect]
    common: list[tuple[str, str]]  # every part common to the evidence, the most specific first
    counts: list[tuple[tuple[str, str], int]]  # the parts named most often
    ranks_placed: int = 0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        r = self.reading
        return {
            "files": r.files,
            "lines": r.lines,
            "layouts": dict(sorted(r.layouts.items())),
            "errors_not_kept": r.dropped,
            "ranks_placed": self.ranks_placed,
            "unread": [{"file": w.file, "line": w.line, "text": text} for w, text in r.unread],
            "unread_count": r.unread_count,
            "evidence": self.evidence,
            "weighed": self.weighed,
            "suspects": [s.as_dict() for s in self.suspects],
            "common": [{"kind": k, "name": n} for k, n in self.common],
            "most_named": [{"kind": k, "name": n, "events": c} for (k, n), c in self.counts],
            "events": [e.as_dict() for e in self.events],
            "notes": self.notes,
        }


class _Index:
    """The plan's servers by name, and its addresses: each data NIC's and each management address."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.servers = {s.name: s for s in plan.servers}
        self.domain = plan.intent.management.domain
        self.address: dict[int, tuple[Server, HostNic | None]] = {}
        for s in plan.servers:
            if s.mgmt_ip is not None:
                self.address[s.mgmt_ip] = (s, None)
            for nic in s.nics:
                if nic.native:
                    self.address[nic.address] = (s, nic)
                for sub in nic.carried:
                    self.address[sub.address] = (s, nic)  # a tagged subinterface rides its NIC's cable
        self._placed: dict[tuple[str, str], NicPlace] = {}
        self._cables: dict[str, dict[tuple[str, str], str]] = {}  # plane -> every host port's cable, on first ask

    def host(self, name: str, via: str) -> End:
        short = name.rstrip(".")
        if short in self.servers:
            return End(name, via, short)
        if self.domain and short.endswith("." + self.domain) and short[: -len(self.domain) - 1] in self.servers:
            return End(name, via, short[: -len(self.domain) - 1])
        return End(name, via, note="not a server of the plan")

    def address_end(self, text: str, via: str) -> End:
        try:
            found = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            return self.host(text, "peer name") if via == "peer address" else End(text, via, note="not an address")
        if isinstance(found, ipaddress.IPv6Address):
            mapped = found.ipv4_mapped
            if mapped is None:
                what = "a GID" if "GID" in via else "an IPv6 address"
                return End(text, via, note=f"{what} of no IPv4 address: the plan holds IPv4 addresses only")
            found = mapped
        held = self.address.get(int(found))
        if held is None:
            return End(text, via, note=f"{found} is no address of the plan")
        server, nic = held
        if nic is None:
            return End(text, via, server.name, note="the server's management address")
        return End(text, via, server.name, self.place(server, nic))

    def server_parts(self, name: str) -> set[tuple[str, str]]:
        """Every data NIC of a server and its leaf, as parts."""
        server = self.servers[name]
        return {p for nic in server.nics for p in (("nic", f"{name} {nic.interface}"), ("leaf", nic.leaf))}

    def place(self, server: Server, nic: HostNic) -> NicPlace:
        key = (server.name, nic.interface)
        if key not in self._placed:
            plane = self.plan.planes[nic.plane]
            if nic.plane not in self._cables:
                self._cables[nic.plane] = host_cables(plane)
            (self._placed[key],) = place_nics(plane, [(server, nic)], self._cables[nic.plane])
        return self._placed[key]


def world_ranks(reading: Reading) -> dict[int, tuple[str, int]]:
    """rank -> (host, CUDA device) in the largest communicator the init lines show (the job's world), for the
    ranks every such line places on one host; a rank two lines place apart is left out."""
    world = max((r.nranks for r in reading.ranks), default=0)
    seen: dict[int, set[tuple[str, int]]] = defaultdict(set)
    for r in reading.ranks:
        if r.nranks == world:
            seen[r.rank].add((r.host, r.cuda_dev))
    return {rank: next(iter(places)) for rank, places in seen.items() if len({h for h, _ in places}) == 1}


def triage(plan: Plan, reading: Reading) -> Triage:
    index = _Index(plan)
    ranks = world_ranks(reading)
    events = [_resolve(index, ranks, said) for said in reading.said]
    network = [e for e in events if e.said.kind != "watchdog" and e.parts()]
    timeouts = [e for e in events if e.said.kind == "watchdog" and e.parts()]
    evidence, weighed = ("network", network) if network else ("timeouts", timeouts) if timeouts else ("none", [])
    suspects, common, counts = _common(weighed, index)
    suspects = [replace(s, confirm=confirm(plan, s)) for s in suspects]
    notes = []
    if reading.dropped:
        notes.append(f"{reading.dropped} more errors were read than kept; the common part is sought in those kept")
    unplaced = sorted({e.said.rank for e in events if e.said.rank is not None and e.said.rank not in ranks})
    if unplaced:
        notes.append(
            f"{len(unplaced)} rank(s) the log places on no host (no NCCL INFO init line: run with NCCL_DEBUG=INFO)"
        )
    return Triage(reading, events, evidence, len(weighed), suspects, common, counts, len(ranks), notes)


def _resolve(index: _Index, ranks: dict[int, tuple[str, int]], said: Said) -> Event:
    ends: list[End] = []
    notes: list[str] = []
    here = index.host(said.host, "host") if said.host is not None else None
    if said.local_gid is not None:
        local = index.address_end(said.local_gid, "local GID")
        ends.append(local)
        if here is not None and here.server and local.server and here.server != local.server:
            notes.append(f"the local GID is {local.server}'s, the line was written on {here.server}")
    elif here is not None:
        ends.append(here)
    if said.remote_gid is not None:
        ends.append(index.address_end(said.remote_gid, "remote GID"))
        if said.peer is not None:  # the bootstrap socket's address: the same host, another network
            peer = index.address_end(said.peer, "peer address")
            if peer.server and ends[-1].server and peer.server != ends[-1].server:
                notes.append(f"the remote GID is {ends[-1].server}'s, the peer socket {peer.server}'s")
    elif said.peer is not None:
        peer = index.address_end(said.peer, "peer address")
        if peer.nic is not None and said.kind == "ib-completion":
            # The socket of an IB connection is on the bootstrap network: it names the peer host, not the NIC
            # whose queue pair failed (that is the GID's, absent on InfiniBand's link layer).
            peer = End(peer.said, peer.via, peer.server, note="the peer's bootstrap socket: names its host only")
        ends.append(peer)
    if said.rank is not None:
        placed = ranks.get(said.rank)
        if placed is None:
            ends.append(End(f"rank {said.rank}", "rank", note="no NCCL init line places this rank"))
        else:
            end = index.host(placed[0], "rank")
            ends.append(End(f"rank {said.rank}", "rank", end.server, note=end.note))
    return Event(said, tuple(ends), tuple(notes))


COUNTER_WINDOW = 60  # seconds: a window long enough for a flapping link to flap, short enough to wait for


def confirm(plan: Plan, suspect: Suspect) -> tuple[str, ...]:
    """The read-only commands that look at a suspect: the leaf's ports (link state, flaps, errors, discards and
    PFC pauses over a window, `nornir validate --counter-window`), and a server's host settings read back
    (`playbooks/validate.yml`)."""
    source = shlex.quote(plan.source)
    leaf = suspect.nic.leaf if suspect.nic is not None else suspect.name if suspect.kind == "leaf" else None
    if leaf is not None:
        return (f"nornir validate {source} --device {shlex.quote(leaf)} --counter-window {COUNTER_WINDOW}",)
    return (f"ansible-playbook -i <inventory> playbooks/validate.yml --limit {shlex.quote(suspect.name)}",)


def _common(
    events: list[Event], index: _Index
) -> tuple[list[Suspect], list[tuple[str, str]], list[tuple[tuple[str, str], int]]]:
    """The parts every event allows, named by at least one: an end known only as a server (a host name, a
    socket on the bootstrap network, a rank) allows each of that server's NICs and their leaves, as it says
    nothing against them; it names only the server."""
    if not events:
        return [], [], []
    counts: Counter[tuple[str, str]] = Counter()
    nics: dict[str, NicPlace] = {}
    shared: set[tuple[str, str]] | None = None
    for event in events:
        named = event.parts()
        counts.update(named)
        allowed = set(named)
        for end in event.ends:
            if end.nic is not None:
                nics[f"{end.nic.node} {end.nic.interface}"] = end.nic
            elif end.server is not None:
                allowed.update(index.server_parts(end.server))
        shared = allowed if shared is None else shared & allowed
    common = sorted((p for p in shared or () if counts[p]), key=lambda p: (SPECIFIC.index(p[0]), p[1]))
    suspects: list[Suspect] = []
    if common:
        level = common[0][0]
        suspects = [Suspect(k, n, counts[(k, n)], nics.get(n) if k == "nic" else None) for k, n in common if k == level]
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], SPECIFIC.index(kv[0][0]), kv[0][1]))[:10]
    return suspects, common, ranked
