"""The probe mesh on one host: a responder on each of its RoCE NICs' addresses, and a prober that sends its
planned peers UDP probes in the RoCE class and measures the round trip (gpufabric/export/probe_plan.py plans
who probes whom).

- Every socket carries the plane's RoCE DSCP: `IP_TOS` = DSCP << 2 (the low two bits, ECN, left 0: the kernel's
  UDP sets no ECT), so the switches queue probes with RoCE's traffic class. The responder answers with the same.
- A probe leaves from the NIC's own address (the host's per-rail routing rule, from the host_network role, takes
  it out of that NIC) and from one of the plan's source ports in turn, so one pair is several flows and the
  switches' ECMP hash spreads them over the spines as it spreads RoCE's.
- A probe is 64 bytes: a magic, the prober's sequence number, padding. The responder echoes exactly that and
  nothing else (a datagram of another length or magic is dropped); the prober takes an answer only from the
  address and port it probed, for a sequence it has outstanding. The round trip is timed with the prober's
  own monotonic clock, never a time carried in the packet.
- Each probe of a peer goes every `interval` seconds (start times spread over the interval); one without an
  answer within `timeout` is lost. At most 64 peers a host (the plan's bound), so at most 64 packets per
  interval.

Exported (prometheus_client): `gpufabric_probe_rtt_seconds` (histogram), `gpufabric_probe_sent_total` and
`gpufabric_probe_lost_total`, labelled plane, rail, src, dst, src_leaf, dst_leaf.
"""

from __future__ import annotations

import contextlib
import gzip
import ipaddress
import itertools
import re
import selectors
import socket
import struct
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from gpufabric.errors import GpufabricError
from gpufabric.export.probe_plan import FORMAT, MAX_PROBES, flow_ports
from gpufabric.inputs import json_text, read_bytes

MAGIC = b"GFPROBE1"
PACKET = 64
_HEADER = struct.Struct("!8sQ")
MAX_PLAN_BYTES = 16 << 20  # the whole fabric's plan, compressed or not
MAX_EXPANDED = 256 << 20  # a compressed plan's text
# Histogram buckets (seconds): a UDP round trip through the kernels of two hosts and one to five switches is
# tens of microseconds when idle; a congested lossless queue adds up to milliseconds.
BUCKETS = (0.00002, 0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.25, 1.0)
LABELS = ("plane", "rail", "src", "dst", "src_leaf", "dst_leaf")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")  # a node, interface, leaf or plane name, as the plan's
RAIL = re.compile(r"[0-9]{0,3}")


class ProbeInputError(GpufabricError):
    """A probe plan that is not one (the message names the file and field)."""


@dataclass(frozen=True, slots=True)
class Peer:
    interface: str
    source: str
    dst: str
    address: str
    plane: str
    rail: str
    src_leaf: str
    dst_leaf: str

    @property
    def labels(self) -> dict[str, str]:
        return {"plane": self.plane, "rail": self.rail, "src": "", "dst": self.dst, "src_leaf": self.src_leaf,
                "dst_leaf": self.dst_leaf}  # fmt: skip


@dataclass(frozen=True)
class HostPlan:
    node: str
    port: int  # the responders' UDP port
    source_ports: int
    source_base: int  # first source port; 0: the kernel's ephemeral ports
    interval: float
    timeout: float
    dscp: dict[str, int]  # plane -> DSCP
    responders: tuple[tuple[str, str, int], ...]  # (interface, address, dscp)
    peers: tuple[Peer, ...]


def tos(dscp: int) -> int:
    return dscp << 2


# -- the plan file ------------------------------------------------------------------------------------------


def read_plan(path: str | Path, node: str) -> HostPlan:
    """`node`'s share of a probe plan (`gpufabric probe plan`'s file, whole or one host's; `.gz` too)."""
    raw = read_bytes(path, what="probe plan", max_bytes=MAX_PLAN_BYTES)
    if raw[:2] == b"\x1f\x8b":
        try:
            inflate = zlib.decompressobj(wbits=31)
            raw = inflate.decompress(raw, MAX_EXPANDED)
            if inflate.unconsumed_tail:
                raise ProbeInputError(f"{path}: the compressed probe plan expands beyond {MAX_EXPANDED >> 20} MiB")
        except (zlib.error, EOFError, gzip.BadGzipFile) as exc:
            raise ProbeInputError(f"{path}: not a readable gzip file ({exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProbeInputError(f"{path}: the probe plan is not UTF-8") from None
    return host_plan(json_text(text, path, "probe plan"), node, str(path))


def _get(doc: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = doc.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise ProbeInputError(f"{where}: field {key!r} missing or not {name}")
    return value


def _name(value: Any, where: str, pattern: re.Pattern[str] = NAME) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ProbeInputError(
            f"{where}: {str(value)[:40]!r} is not a name of the plan (letters, digits, '.', '_', '-')"
        )
    return value


def _address(value: Any, where: str) -> str:
    try:
        return str(ipaddress.IPv4Address(value if isinstance(value, str) else ""))
    except ValueError:
        raise ProbeInputError(f"{where}: {str(value)[:40]!r} is not an IPv4 address") from None


def host_plan(doc: Any, node: str, where: str = "probe plan") -> HostPlan:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ProbeInputError(f"{where}: not a probe plan (format {FORMAT!r}): write it with `gpufabric probe plan`")
    _name(node, f"{where}: node")
    if "hosts" in doc:
        hosts = _get(doc, "hosts", dict, where)
        mine = hosts.get(node)
        if not isinstance(mine, dict):
            raise ProbeInputError(f"{where}: no host {node!r} in the probe plan (a server of a RoCE plane)")
    else:
        if doc.get("node") != node:
            raise ProbeInputError(f"{where}: this is {str(doc.get('node'))[:40]!r}'s share, not {node!r}'s")
        mine = doc
    port = _get(doc, "port", int, where)
    count = _get(doc, "source_ports", int, where)
    base = doc.get("source_base", port + 1)
    interval = _get(doc, "interval", (int, float), where)
    timeout = _get(doc, "timeout", (int, float), where)
    if not 0 < port < 65536 or not isinstance(base, int) or not (base == 0 or (base > 0 and base + count <= 65536)):
        raise ProbeInputError(f"{where}: ports out of range (port {port}, source ports {base}+{count})")
    if not 1 <= count <= 64 or not 0.01 <= interval <= 3600 or not 0.001 <= timeout <= 60:
        raise ProbeInputError(f"{where}: source_ports 1-64, interval 0.01-3600 s and timeout 0.001-60 s")
    dscps = _get(doc, "dscp", dict, where)
    dscp = {_name(k, f"{where}: dscp"): v for k, v in dscps.items()}
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 63 for v in dscp.values()):
        raise ProbeInputError(f"{where}: dscp: a DSCP is 0-63")
    responders = []
    for i, row in enumerate(_get(mine, "responders", list, f"{where}: {node}")):
        at = f"{where}: {node} responders[{i}]"
        if not isinstance(row, list) or len(row) != 3 or not isinstance(row[2], int) or not 0 <= row[2] <= 63:
            raise ProbeInputError(f"{at}: [interface, address, dscp]")
        responders.append((_name(row[0], at), _address(row[1], at), row[2]))
    peers = []
    rows = _get(mine, "probes", list, f"{where}: {node}")
    if len(rows) > MAX_PROBES:
        raise ProbeInputError(f"{where}: {node} has {len(rows)} probes, more than {MAX_PROBES}")
    for i, row in enumerate(rows):
        at = f"{where}: {node} probes[{i}]"
        if not isinstance(row, list) or len(row) != 8:
            raise ProbeInputError(f"{at}: [interface, source, dst, address, plane, rail, src_leaf, dst_leaf]")
        plane = _name(row[4], at)
        if plane not in dscp:
            raise ProbeInputError(f"{at}: plane {plane!r} has no DSCP in the plan")
        peers.append(
            Peer(
                _name(row[0], at),
                _address(row[1], at),
                _name(row[2], at),
                _address(row[3], at),
                plane,
                _name(row[5], at, RAIL),
                _name(row[6], at),
                _name(row[7], at),
            )
        )
    return HostPlan(node, port, count, base, float(interval), float(timeout), dscp, tuple(responders), tuple(peers))


# -- sockets ------------------------------------------------------------------------------------------------


class ProbeSocketError(GpufabricError):
    """A probe socket that cannot be opened (an address that is not this host's, a port taken)."""


def udp_socket(address: str, port: int, dscp: int) -> socket.socket:
    """A UDP socket bound to (address, port) whose datagrams carry `dscp` (IP_TOS)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos(dscp))
        sock.bind((address, port))
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise ProbeSocketError(
            f"cannot open UDP {address}:{port} ({exc.strerror or exc}): is the address this host's (the plan's "
            "NIC address, set by the host_network role) and the port free?"
        ) from None
    return sock


class Responder:
    """Echoes probes on each (address, port) it is given, with the plan's DSCP, until closed."""

    def __init__(self, binds: list[tuple[str, int, int]]) -> None:
        self.sockets = []
        try:
            for address, port, dscp in binds:
                self.sockets.append(udp_socket(address, port, dscp))
        except ProbeSocketError:
            self.close()
            raise
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.answered = 0
        self.dropped = 0

    @property
    def addresses(self) -> list[tuple[str, int]]:
        return [s.getsockname() for s in self.sockets]

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="gpufabric-probe-responder", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with selectors.DefaultSelector() as sel:
            for s in self.sockets:
                sel.register(s, selectors.EVENT_READ)
            while not self._stop.is_set():
                for key, _ in sel.select(0.2):
                    sock: socket.socket = key.fileobj  # type: ignore[assignment]
                    try:
                        data, peer = sock.recvfrom(PACKET + 1)
                    except OSError:
                        continue
                    if len(data) != PACKET or not data.startswith(MAGIC):
                        self.dropped += 1
                        continue
                    try:
                        sock.sendto(data, peer)
                        self.answered += 1
                    except OSError:
                        self.dropped += 1

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
        for s in self.sockets:
            s.close()


# -- the prober ---------------------------------------------------------------------------------------------


KEPT = 10_000  # round trips kept per peer (the last ones): `serve` runs for months, its histograms count the rest


@dataclass
class FlowResult:
    """One source port's share of a peer's probes: one flow, one ECMP path (job triage localises with it)."""

    sent: int = 0
    lost: int = 0
    rtts: deque[float] = field(default_factory=lambda: deque(maxlen=KEPT))


@dataclass
class PeerResult:
    peer: Peer
    sent: int = 0
    lost: int = 0
    rtts: deque[float] = field(default_factory=lambda: deque(maxlen=KEPT))
    flows: dict[int, FlowResult] = field(default_factory=dict)  # source port -> its flow's results

    def flow(self, sock: socket.socket) -> FlowResult:
        port = sock.getsockname()[1]
        found = self.flows.get(port)
        if found is None:
            found = self.flows[port] = FlowResult()
        return found


class Metrics:
    def __init__(self, registry: CollectorRegistry, node: str) -> None:
        self.node = node
        self.rtt = Histogram(
            "gpufabric_probe_rtt_seconds", "round trip of a probe to a planned peer, in the RoCE class",
            LABELS, registry=registry, buckets=BUCKETS,
        )  # fmt: skip
        self.sent = Counter("gpufabric_probe_sent", "probes sent to a planned peer", LABELS, registry=registry)
        self.lost = Counter("gpufabric_probe_lost", "probes without an answer in time", LABELS, registry=registry)

    def labels(self, peer: Peer) -> dict[str, str]:
        return {**peer.labels, "src": self.node}


class Prober:
    """Probes `plan.peers` from `plan`'s source addresses; `metrics`, when given, count and time each."""

    def __init__(
        self, plan: HostPlan, metrics: Metrics | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.plan, self.metrics, self.clock = plan, metrics, clock
        self.results = [PeerResult(p) for p in plan.peers]
        self._sockets: dict[str, list[socket.socket]] = {}
        self._seq = itertools.count(1)
        self._pending: dict[int, tuple[int, float, socket.socket]] = {}  # seq -> (peer index, sent at, socket)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        ports = flow_ports(plan.source_base, plan.source_ports)
        try:
            for peer in plan.peers:
                if peer.source not in self._sockets:
                    dscp = plan.dscp[peer.plane]
                    self._sockets[peer.source] = [udp_socket(peer.source, port, dscp) for port in ports]
        except ProbeSocketError:
            self.close()
            raise
        self._turn = {source: itertools.cycle(socks) for source, socks in self._sockets.items()}
        if metrics is not None:  # every planned pair is a series from the start (a pair never answered too)
            for peer in plan.peers:
                labels = metrics.labels(peer)
                metrics.sent.labels(**labels)
                metrics.lost.labels(**labels)
                metrics.rtt.labels(**labels)

    def sockets(self) -> list[socket.socket]:
        return [s for socks in self._sockets.values() for s in socks]

    def run(self, count: int | None = None, deadline: float | None = None) -> list[PeerResult]:
        """Probe every peer each interval, `count` times each (None: until stopped), then wait for the last
        answers; never past `deadline` (monotonic seconds)."""
        plan = self.plan
        if not plan.peers:
            return self.results
        start = self.clock()
        step = plan.interval / len(plan.peers)
        due = [start + i * step for i in range(len(plan.peers))]  # spread over the interval
        left = [count if count is not None else -1] * len(plan.peers)
        with selectors.DefaultSelector() as sel:
            for sock in self.sockets():
                sel.register(sock, selectors.EVENT_READ)
            while not self._stop.is_set():
                now = self.clock()
                if deadline is not None and now >= deadline:
                    break
                for i, when in enumerate(due):
                    if left[i] != 0 and now >= when:
                        self._send(i)
                        left[i] -= 1
                        due[i] = when + plan.interval
                self._expire(now)
                if all(n == 0 for n in left) and not self._pending:
                    break
                waits = [d for i, d in enumerate(due) if left[i] != 0]
                waits += [sent + plan.timeout for _, sent, _ in self._pending.values()]
                timeout = max(0.0, min(waits) - self.clock()) if waits else 0.05
                if deadline is not None:
                    timeout = min(timeout, max(0.0, deadline - self.clock()))
                for key, _ in sel.select(min(timeout, 0.5)):
                    self._receive(key.fileobj)  # type: ignore[arg-type]
        for seq in list(self._pending):  # what is still out when the run ends is lost
            self._lose(seq)
        return self.results

    def _send(self, i: int) -> None:
        peer = self.plan.peers[i]
        seq = next(self._seq)
        sock = next(self._turn[peer.source])
        packet = _HEADER.pack(MAGIC, seq).ljust(PACKET, b"\0")
        with contextlib.suppress(OSError):  # unreachable now (no route, a NIC down): lost when its time is up
            sock.sendto(packet, (peer.address, self.plan.port))
        self._pending[seq] = (i, self.clock(), sock)
        self.results[i].sent += 1
        self.results[i].flow(sock).sent += 1
        if self.metrics is not None:
            self.metrics.sent.labels(**self.metrics.labels(peer)).inc()

    def _receive(self, sock: socket.socket) -> None:
        for _ in range(64):  # what is queued now, a bounded number at a time
            try:
                data, (address, port) = sock.recvfrom(PACKET + 1)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # an ICMP error queued on the socket (port unreachable): the probe will time out
            now = self.clock()
            if len(data) != PACKET:
                continue
            magic, seq = _HEADER.unpack_from(data)
            found = self._pending.get(seq)
            if magic != MAGIC or found is None:
                continue
            i, sent, via = found
            peer = self.plan.peers[i]
            if via is not sock or address != peer.address or port != self.plan.port:
                continue  # not the answer of the peer probed from this socket
            del self._pending[seq]
            rtt = now - sent
            self.results[i].rtts.append(rtt)
            self.results[i].flow(sock).rtts.append(rtt)
            if self.metrics is not None:
                self.metrics.rtt.labels(**self.metrics.labels(peer)).observe(rtt)

    def _expire(self, now: float) -> None:
        for seq, (_, sent, _) in list(self._pending.items()):
            if now - sent >= self.plan.timeout:
                self._lose(seq)

    def _lose(self, seq: int) -> None:
        i, _, sock = self._pending.pop(seq)
        self.results[i].lost += 1
        self.results[i].flow(sock).lost += 1
        if self.metrics is not None:
            self.metrics.lost.labels(**self.metrics.labels(self.plan.peers[i])).inc()

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="gpufabric-prober", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
        for sock in self.sockets():
            sock.close()


def quantile(values: Iterable[float], q: float) -> float | None:
    """The q-quantile of `values` (nearest rank), None when there are none."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.999999) - 1))]
