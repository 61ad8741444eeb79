"""NCCL's and PyTorch's error output, read line by line into what each error says: the addresses, GIDs, host
names and ranks it names. Nothing here knows the plan (gpufabric/jobs/triage.py maps what is read onto it).

The layouts are NCCL's own message formats, releases 2.18 to 2.27 (each layout names the source file and the
releases that print it), and PyTorch's ProcessGroupNCCL watchdog message:
- the line prefix of every NCCL WARN (src/debug.cc): `[timestamp] host:pid:tid [cudaDev] file:line NCCL WARN
  message`. The host is the machine's name cut at its first dot; `[cudaDev]` is the CUDA device of the thread,
  not a rank. The timestamp (`[%F %T] ` by default) is printed from 2.26 on, and only for WARN by default.
- NCCL INFO `... comm 0x... rank R nranks N cudaDev D ...` init lines (src/init.cc, every release): the only
  place the log itself says which host a rank ran on.
- NET/IB completion errors (src/transport/net_ib.cc): `Got completion from peer ADDR<port> with ...`. The peer
  is the address of the connection's socket (the bootstrap network, NCCL_SOCKET_IFNAME), not of the RDMA NIC;
  the GIDs (RoCE only: the link layer is Ethernet) name the NICs themselves. A RoCE v2 GID of an IPv4 address
  is that address mapped into IPv6 (::ffff:a.b.c.d). From 2.20 on, the remote GID follows "remoteGids" with no
  space between.
- NET/IB asynchronous events (src/transport/net_ib.cc): the HCA and port, no address.
- failing verbs calls (src/misc/ibvwrap.cc): `Call to ibv_x failed ...`; from 2.24 on, a failing
  ibv_modify_qp names the device, the QP states and both GIDs.
- socket errors (src/misc/socket.cc, src/transport/net_socket.cc): the peer as `address<port>`; a closed
  connection names the peer by host name where it resolves (numericHostForm 0).
- PyTorch's watchdog (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp): `[Rank N] Watchdog caught collective
  operation timeout: WorkNCCL(SeqNum=S, OpType=OP, ...) ran for T milliseconds before timing out.`; since
  PyTorch 2.3 the prefix is `[PG ID p PG GUID g(desc) Rank N] `, N the rank within that process group.

A line that carries an NCCL WARN or a watchdog timeout in no layout here is kept as unread, never guessed at.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gpufabric.inputs import MiB, read_lines

MAX_LINE = 64 * 1024  # NCCL formats a line into 1,024 bytes; PyTorch's can be longer (a stack)
MAX_BYTES = 1024 * MiB  # per log file: an NCCL_DEBUG=INFO log of a large job runs to hundreds of MB
MAX_EVENTS = 200_000  # errors kept (the rest counted): a log of nothing else must not fill memory
MAX_UNREAD = 1_000  # unread lines kept with their text (the rest counted)
SHOWN = 300  # characters of an unread line kept

# libibverbs' enum ibv_wc_status (rdma-core, libibverbs/verbs.h): the completion statuses NCCL prints.
WC_STATUS = {
    1: "IBV_WC_LOC_LEN_ERR",
    2: "IBV_WC_LOC_QP_OP_ERR",
    3: "IBV_WC_LOC_EEC_OP_ERR",
    4: "IBV_WC_LOC_PROT_ERR",
    5: "IBV_WC_WR_FLUSH_ERR",
    6: "IBV_WC_MW_BIND_ERR",
    7: "IBV_WC_BAD_RESP_ERR",
    8: "IBV_WC_LOC_ACCESS_ERR",
    9: "IBV_WC_REM_INV_REQ_ERR",
    10: "IBV_WC_REM_ACCESS_ERR",
    11: "IBV_WC_REM_OP_ERR",
    12: "IBV_WC_RETRY_EXC_ERR",  # the transport retry counter ran out: no ACK from the peer (a path lost packets)
    13: "IBV_WC_RNR_RETRY_EXC_ERR",
    14: "IBV_WC_LOC_RDD_VIOL_ERR",
    15: "IBV_WC_REM_INV_RD_REQ_ERR",
    16: "IBV_WC_REM_ABORT_ERR",
    17: "IBV_WC_INV_EECN_ERR",
    18: "IBV_WC_INV_EEC_STATE_ERR",
    19: "IBV_WC_FATAL_ERR",
    20: "IBV_WC_RESP_TIMEOUT_ERR",
    21: "IBV_WC_GENERAL_ERR",
}

# `host:pid:tid [cudaDev] file:line NCCL WARN ` (file:line since before 2.18), after whatever a launcher or
# NCCL_DEBUG_TIMESTAMP_FORMAT put in front. The host is NCCL's, cut at its first dot.
# Each pattern runs on a bounded window around a fixed marker, never across a whole line: a line of 64 KiB
# built to make a search retry at every position costs what its window does, not the square of its length.
WINDOW = 320  # before a marker: a launcher's label, a timestamp, host:pid:tid [dev] file:line
MESSAGE = 1024  # after it: NCCL formats a whole line into 1,024 bytes (src/debug.cc); PyTorch's watchdog is short
# `host:pid:tid [cudaDev] file:line ` right before "NCCL WARN" (file:line since before 2.18), after whatever a
# launcher or NCCL_DEBUG_TIMESTAMP_FORMAT put in front. The host is NCCL's, cut at its first dot.
_PREFIX = re.compile(
    r"(?:^|[\s\]:>])(?P<host>[A-Za-z0-9][A-Za-z0-9_-]*):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] (?:\S+:\d+ )?$"
)
_INFO_PREFIX = re.compile(r"(?:^|[\s\]:>])(?P<host>[A-Za-z0-9][A-Za-z0-9_-]*):\d+:\d+ \[(?P<dev>\d+)\] $")
_INIT = re.compile(
    r"comm (?P<comm>0x[0-9a-fA-F]+|\(nil\)) rank (?P<rank>\d+) nranks (?P<nranks>\d+) cudaDev (?P<cuda>\d+) "
)
_WATCHDOG_WHO = re.compile(
    r"(?:\[PG ID (?P<pg>\d+) PG GUID (?P<guid>[^\s(\]]+)(?:\((?P<desc>[^)]*)\))? Rank (?P<pg_rank>\d+)\]"
    r"|\[Rank (?P<rank>\d+)\]) $"
)
_WATCHDOG_WHAT = re.compile(
    r"WorkNCCL\((?:SeqNum=(?P<seq>\d+), )?OpType=(?P<op>\w+)(?P<rest>[^\n]*?)\) "
    r"ran for (?P<ms>\d+) milliseconds before timing out"
)
WARN_MARK, INFO_MARK = "NCCL WARN ", "NCCL INFO "
WATCHDOG_MARK = "Watchdog caught collective operation timeout: "
_LAUNCHER_RANK = re.compile(r"^\[rank(?P<rank>\d+)\]:")  # torchrun's log line prefix: the global rank
_PEER = re.compile(r"(?P<address>[^<>\s]+)<(?P<port>\d+)>")


@dataclass(frozen=True)
class Layout:
    """One message format: its kind, the NCCL source file and releases that print it, and its pattern."""

    name: str
    kind: str  # ib-completion | ib-async | ibv-call | socket
    source: str  # "src/transport/net_ib.cc, NCCL 2.20-2.21"
    pattern: re.Pattern[str]


_GID = r"\S+"
LAYOUTS: tuple[Layout, ...] = (
    Layout(
        "ib-completion-2.18",
        "ib-completion",
        "src/transport/net_ib.cc, NCCL 2.18-2.19",
        re.compile(
            r"NET/IB : Got completion from peer (?P<peer>\S+) with error (?P<status>\d+), opcode (?P<opcode>\d+), "
            r"len (?P<len>-?\d+), vendor err (?P<vendor>-?\d+) \((?P<req>\w+)\)"
            rf"(?: localGid (?P<local_gid>{_GID}))?(?: remoteGid (?P<remote_gid>{_GID}))?$"
        ),
    ),
    Layout(
        "ib-completion-2.20",
        "ib-completion",
        "src/transport/net_ib.cc, NCCL 2.20-2.21",
        re.compile(
            r"NET/IB : Got completion from peer (?P<peer>\S+) with status=(?P<status>\d+) opcode=(?P<opcode>\d+) "
            r"len=(?P<len>-?\d+) vendor err (?P<vendor>-?\d+) \((?P<req>\w+)\)"
            rf"(?: localGid (?P<local_gid>{_GID}))?(?: remoteGids(?P<remote_gid>{_GID}))?$"
        ),
    ),
    Layout(
        "ib-completion-2.22",
        "ib-completion",
        "src/transport/net_ib.cc, NCCL 2.22-2.27",
        re.compile(
            r"NET/IB: Got completion from peer (?P<peer>\S+) with status=(?P<status>\d+) opcode=(?P<opcode>\d+) "
            r"len=(?P<len>-?\d+) vendor err (?P<vendor>-?\d+) \((?P<req>\w+)\)"
            rf"(?: localGid (?P<local_gid>{_GID}))?(?: remoteGids(?P<remote_gid>{_GID}))? hca (?P<hca>\S+)$"
        ),
    ),
    Layout(
        "ib-async-2.18",
        "ib-async",
        "src/transport/net_ib.cc, NCCL 2.18-2.19",
        re.compile(r"NET/IB : Got async event : (?P<event>.+)$"),
    ),
    Layout(
        "ib-async-2.20",
        "ib-async",
        "src/transport/net_ib.cc, NCCL 2.20-2.22",
        re.compile(r"NET/IB : (?P<hca>[^\s:]+):(?P<port>\d+) Got async event : (?P<event>.+)$"),
    ),
    Layout(
        "ib-async-2.23",
        "ib-async",
        "src/transport/net_ib.cc, NCCL 2.23-2.27",
        re.compile(
            r"NET/IB : (?P<hca>[^\s:]+):(?P<port>\d+) (?:Got async error event|async fatal event"
            r"(?: on (?:CQ|QP|SRQ, unused for now) \([^)]*\))?): (?P<event>.+)$"
        ),
    ),
    Layout(
        "ibv-modify-qp-2.24",
        "ibv-call",
        "src/misc/ibvwrap.cc, NCCL 2.24-2.27",
        re.compile(
            r"Call to (?P<call>ibv_modify_qp) failed with (?P<errno>\d+) (?P<error>[^,]+), on dev (?P<hca>[^\s:]+):"
            r"(?P<port>-?\d+), curr state (?P<state>\S+), next state (?P<next>\S+), local GID index -?\d+, "
            rf"local GID (?P<local_gid>{_GID}), remote GID (?P<remote_gid>{_GID})$"
        ),
    ),
    Layout(
        "ibv-call-errno",
        "ibv-call",
        "src/misc/ibvwrap.cc, NCCL 2.20-2.27",
        re.compile(r"Call to (?P<call>ibv_\w+) failed with error (?P<error>.+?) errno (?P<errno>\d+)$"),
    ),
    Layout(
        "ibv-call-error",
        "ibv-call",
        "src/misc/ibvwrap.cc, NCCL 2.18-2.27",
        re.compile(r"Call to (?P<call>ibv_\w+) failed with error (?P<error>.+)$"),
    ),
    Layout(
        "ibv-call",
        "ibv-call",
        "src/misc/ibvwrap.cc, NCCL 2.18-2.27",
        re.compile(r"Call to (?P<call>ibv_\w+) failed$"),
    ),
    Layout(
        "socket-truncated",
        "socket",
        "src/transport/net_socket.cc, NCCL 2.18-2.27",
        re.compile(r"NET/Socket : peer (?P<peer>\S+) message truncated : receiving \d+ bytes instead of \d+\."),
    ),
    Layout(
        "socket-progress-error",
        "socket",
        "src/transport/net_socket.cc, NCCL 2.18-2.27",
        re.compile(r"NET/Socket : (?P<error>socket progress error)$"),
    ),
    Layout(
        "socket-call",
        "socket",
        "src/misc/socket.cc, NCCL 2.18-2.27 (recv from; send to from 2.24)",
        re.compile(r"socketProgressOpt: Call to (?P<op>recv from|send to) (?P<peer>\S+) failed : (?P<error>.+)$"),
    ),
    Layout(
        "socket-closed",
        "socket",
        "src/misc/socket.cc, NCCL 2.18-2.27",
        re.compile(r"socketProgress: (?P<error>Connection closed by remote peer) (?P<peer>\S+)$"),
    ),
    Layout(
        "socket-connect",
        "socket",
        "src/misc/socket.cc, NCCL 2.18-2.27",
        re.compile(r"(?P<func>\w+): [Cc]onnect to (?P<peer>\S+) failed : (?P<error>.+)$"),
    ),
    Layout(
        "socket-connect-retries-2.27",
        "socket",
        "src/misc/socket.cc, NCCL 2.27",
        re.compile(
            r"(?P<func>\w+): connect to (?P<peer>\S+) returned (?P<error>.+?), exceeded error retry count after "
            r"\d+ attempts$"
        ),
    ),
    Layout(
        "socket-poll-connect-2.20",
        "socket",
        "src/misc/socket.cc, NCCL 2.20-2.23",
        re.compile(r"socketPollConnect: Connect to (?P<peer>\S+) returned \d+\((?P<error>[^)]*)\) errno \d+\([^)]*\)$"),
    ),
    Layout(
        "socket-poll-connect-2.27",
        "socket",
        "src/misc/socket.cc, NCCL 2.27",
        re.compile(r"socketPollConnect to (?P<peer>\S+) failed with error (?P<error>.+)$"),
    ),
)
WATCHDOG_SOURCE = "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp (PyTorch 2.1-2.9: [Rank N], from 2.3 [PG ID ...])"


@dataclass(frozen=True, slots=True)
class Where:
    file: str
    line: int


@dataclass(frozen=True)
class Said:
    """One error a log line states, in its own words: nothing is resolved yet."""

    kind: str  # ib-completion | ib-async | ibv-call | socket | watchdog
    layout: str
    where: Where
    host: str | None = None  # NCCL's prefix: the host the line was written on
    device: int | None = None  # NCCL's prefix: the CUDA device
    rank: int | None = None  # a global rank (a watchdog of process group 0, or torchrun's [rankN]: prefix)
    pg_rank: int | None = None  # a watchdog's rank within a process group other than 0 (not mapped)
    peer: str | None = None  # an address, or a host name, with its port stripped
    local_gid: str | None = None
    remote_gid: str | None = None
    hca: str | None = None
    detail: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RankSeen:
    """A rank as an NCCL init line states it: the host and CUDA device it ran on, in a communicator of nranks."""

    rank: int
    nranks: int
    host: str
    cuda_dev: int
    comm: str


@dataclass
class Reading:
    """What the logs say: the errors, the ranks the init lines place, and the lines that could not be read."""

    files: list[str] = field(default_factory=list)
    lines: int = 0
    said: list[Said] = field(default_factory=list)
    dropped: int = 0  # errors past MAX_EVENTS, counted only
    ranks: list[RankSeen] = field(default_factory=list)
    unread: list[tuple[Where, str]] = field(default_factory=list)
    unread_count: int = 0
    layouts: Counter[str] = field(default_factory=Counter)


def read_logs(paths: Iterable[str | Path]) -> Reading:
    """Every line of every log (regular files, UTF-8, bounded in size and line length: a located error, exit 2,
    otherwise)."""
    reading = Reading()
    for path in paths:
        reading.files.append(str(path))
        lines = read_lines(path, what="an NCCL or PyTorch log", max_line=MAX_LINE, max_bytes=MAX_BYTES)
        read_lines_into(reading, str(path), lines)
    return reading


def read_lines_into(reading: Reading, name: str, lines: Iterable[tuple[int, str]]) -> None:
    for number, text in lines:
        reading.lines += 1
        _read_line(reading, Where(name, number), text)


def _read_line(reading: Reading, where: Where, text: str) -> None:
    at = text.find(WARN_MARK)
    if at >= 0:
        _keep(reading, where, text, _warn(text, at, where))
        return
    at = text.find(WATCHDOG_MARK)
    if at >= 0:
        _keep(reading, where, text, _watchdog(text, at, where))
        return
    at = text.find(INFO_MARK)
    if at >= 0 and "Init" in text:
        prefix = _INFO_PREFIX.search(text, max(0, at - WINDOW), at)
        init = _INIT.search(text, at, at + MESSAGE)
        if prefix is not None and init is not None:
            reading.ranks.append(
                RankSeen(int(init["rank"]), int(init["nranks"]), prefix["host"], int(init["cuda"]), init["comm"])
            )


def _keep(reading: Reading, where: Where, text: str, said: Said | None) -> None:
    if said is None:
        reading.unread_count += 1
        if len(reading.unread) < MAX_UNREAD:
            reading.unread.append((where, text[:SHOWN]))
        return
    reading.layouts[said.layout] += 1
    if len(reading.said) < MAX_EVENTS:
        reading.said.append(said)
    else:
        reading.dropped += 1


def _warn(text: str, at: int, where: Where) -> Said | None:
    prefix = _PREFIX.search(text, max(0, at - WINDOW), at)
    message = text[at + len(WARN_MARK) :].rstrip()
    if prefix is None or len(message) > MESSAGE:
        return None  # no NCCL prefix, or more than NCCL can print: not NCCL's line
    for layout in LAYOUTS:
        found = layout.pattern.match(message)
        if found is None:
            continue
        fields = {k: v for k, v in found.groupdict().items() if v is not None}
        peer = fields.pop("peer", None)
        if peer is not None:
            address = _PEER.fullmatch(peer)
            if address is None:
                return None  # a peer NCCL prints as address<port>; anything else is not this layout
            peer = address["address"]
        local_gid = _gid(fields.pop("local_gid", None))
        remote_gid = _gid(fields.pop("remote_gid", None))
        hca = fields.pop("hca", None)
        if "status" in fields:
            fields["status_name"] = WC_STATUS.get(int(fields["status"]), "unknown")
        return Said(
            kind=layout.kind,
            layout=layout.name,
            where=where,
            host=prefix["host"],
            device=int(prefix["dev"]),
            peer=peer,
            local_gid=local_gid,
            remote_gid=remote_gid,
            hca=hca,
            detail=fields,
        )
    return None


def _gid(text: str | None) -> str | None:
    return None if text in (None, "", "N/A") else text


def _watchdog(text: str, at: int, where: Where) -> Said | None:
    who = _WATCHDOG_WHO.search(text, max(0, at - WINDOW), at)
    what = _WATCHDOG_WHAT.match(text, at + len(WATCHDOG_MARK), at + MESSAGE)
    if who is None or what is None:
        return None
    found = {**who.groupdict(), **what.groupdict()}
    launcher = _LAUNCHER_RANK.match(text)
    rank: int | None = int(launcher["rank"]) if launcher else None
    pg_rank: int | None = None
    if found["pg_rank"] is not None:
        if found["pg"] == "0":
            rank = int(found["pg_rank"]) if rank is None else rank  # the default group's rank is the global one
        else:
            pg_rank = int(found["pg_rank"])
    elif rank is None:
        pg_rank = int(found["rank"])  # `[Rank N]`: the rank in a process group the line does not name
    detail = {"op": found["op"], "ms": found["ms"]}
    if found["seq"] is not None:
        detail["seq"] = found["seq"]
    if found["pg"] is not None:
        detail["pg"] = found["pg"] + (f" ({found['desc']})" if found["desc"] else "")
    return Said(kind="watchdog", layout="pytorch-watchdog", where=where, rank=rank, pg_rank=pg_rank, detail=detail)


def lines_of(text: str) -> Iterator[tuple[int, str]]:
    """(number, line) of text already in memory, as read_lines gives a file's (tests, and standard input)."""
    yield from enumerate(text.splitlines(), 1)
