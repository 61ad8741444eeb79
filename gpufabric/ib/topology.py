"""The fabric in ibnetdiscover's topology format: written from the plan, read from the tools.

Written: one record per node (`Switch N "id"  # "description" ...` or `Ca N "id"  # "..."`),
then one line per cabled port, `[port] "peer id"[peer port]  # "peer description" lid 0 4xNDR`.
This is what ibsim reads as a fabric and what operators diff against ibnetdiscover's output.
Without GUIDs the ids are the planned names (S-/H- and the description); with a discovery the
records carry the GUIDs as ibnetdiscover prints them (`switchguid=0x...`, ids `S-<guid>`).

Read: ibnetdiscover's own output (the same format, GUID ids) into nodes and links named by
node description, so a live fabric compares with its plan name for name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpufabric.errors import printable
from gpufabric.ib import names
from gpufabric.ib.errors import IbError, Problem
from gpufabric.ib.model import IbFabric, IbNode, PortRef
from gpufabric.ib.names import NODE_DESCRIPTION_BYTES


def node_id(node: IbNode, guids: Mapping[str, int] | None = None) -> str:
    prefix = "S" if node.kind == "switch" else "H"
    if guids is not None:
        return f"{prefix}-{guids[node.name]:016x}"
    return f"{prefix}-{node.name}"


def render(fabric: IbFabric, guids: Mapping[str, int] | None = None) -> str:
    """The planned fabric in ibnetdiscover's format; `guids` (node description -> node GUID) optional."""
    design = fabric.design
    name = names.fabric_name(design.name)  # on a comment line of a file ibsim reads
    out = [
        f"# {name}: planned InfiniBand fabric ({fabric.tiers} tiers, {len(fabric.switches)} switches,",
        f"# {len(fabric.adapters)} adapters, {len(fabric.cables)} cables), in ibnetdiscover's topology format",
        "",
    ]
    ports: dict[str, list[tuple[int, PortRef, str]]] = {n.name: [] for n in fabric.nodes}
    for cable in fabric.cables:
        ports[cable.down.node].append((cable.down.port, cable.up, cable.rate.label))
        ports[cable.up.node].append((cable.up.port, cable.down, cable.rate.label))
    for node in fabric.nodes:
        out += _record(node, sorted(ports[node.name]), fabric, guids)
    return "\n".join(out) + "\n"


def _record(
    node: IbNode, ports: list[tuple[int, PortRef, str]], fabric: IbFabric, guids: Mapping[str, int] | None
) -> list[str]:
    lines = []
    nid = node_id(node, guids)
    names.node_description(node.name, "topology")  # written between double quotes, which it cannot hold
    if node.kind == "switch":
        if guids is not None:
            lines.append(f"switchguid=0x{guids[node.name]:x}({guids[node.name]:x})")
        lines.append(f'Switch\t{node.ports} "{nid}"\t\t# "{node.name}" enhanced port 0 lid 0 lmc 0')
    else:
        if guids is not None:
            lines.append(f"caguid=0x{guids[node.name]:x}")
        lines.append(f'Ca\t{node.ports} "{nid}"\t\t# "{node.name}"')
    for port, peer, label in ports:
        pid = node_id(fabric.by_name[peer.node], guids)
        lid = "lid 0 lmc 0 " if node.kind == "ca" else ""
        lines.append(f'[{port}]\t"{pid}"[{peer.port}]\t\t# {lid}"{peer.node}" lid 0 {label}')
    return [*lines, ""]


# --- reading ibnetdiscover's output --------------------------------------------------------

# Numbers and GUIDs bounded as the tools print them (ports below 256 on any switch, LIDs of 16 bits,
# GUIDs of 16 hex digits): a longer one is no output of theirs, and an unbounded run of digits would
# reach int() (which refuses 4,300 digits or more) and then the node-name map or a check line.
_HEADER = re.compile(r'^(Switch|Ca|Hca|Rt)\s+(\d{1,3})\s+"([^"]+)"\s*(?:#\s*"([^"]*)")?(.*)$')
_PORT = re.compile(
    r'^\[(\d{1,3})\](?:\(([0-9a-fA-F]{1,16})\))?\s+"([^"]+)"\[(\d{1,3})\](?:\(([0-9a-fA-F]{1,16})\))?\s*(?:#\s*(.*))?$'
)
_GUID = re.compile(r"^(switchguid|caguid|rtguid)=(0x[0-9a-fA-F]{1,16})(?![0-9a-fA-F])")
_GUID_LINE = re.compile(r"^(switchguid|caguid|rtguid)=")
_LID = re.compile(r"\blid (\d{1,5})\b")
# Every `lid` a line gives, whatever its length: checked before any is read (a 5,000-digit LID used to fail the
# 5-digit pattern above and be dropped). Node descriptions, between double quotes, are left out first.
_ANY_LID = re.compile(r"\blid\s+(\S*)")
_QUOTED = re.compile(r'"[^"]*"')
# IBA 1.4 vol. 1, 4.1.3 "Local Identifiers": unicast LIDs are 0x0001-0xBFFF, 0xC000-0xFFFE multicast, 0xFFFF
# the permissive LID. 0 is what a port reads before the subnet manager assigns one (and what an exported
# topology writes).
MAX_UNICAST_LID = 0xBFFF
_RATE = re.compile(r"\b(\d{1,2})x([A-Z0-9]{1,12})\s*$")
MAX_BYTES = 64 << 20  # ibnetdiscover's output for the largest subnet (49,151 LIDs) is well under this
MAX_ID = 128  # characters of a node id ("S-<guid>", or an exported topology's "H-<description>")


@dataclass
class SeenNode:
    id: str
    kind: str  # switch | ca
    ports: int
    name: str  # node description
    guid: int | None
    lid: int | None = None  # a switch's (port 0) or, for a CA, its first port's
    port_guids: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, order=True)
class SeenLink:
    a: PortRef
    b: PortRef
    rate: str  # 4xNDR, as the tool printed it


@dataclass
class Topology:
    nodes: dict[str, SeenNode]  # by node id
    links: list[SeenLink]  # each cable once, ends named by node description

    def by_name(self) -> dict[str, SeenNode]:
        return {n.name: n for n in self.nodes.values()}


def parse(text: str, source: str = "topology") -> Topology:
    """Read ibnetdiscover's output (or an exported topology) into nodes and links by description."""
    nodes: dict[str, SeenNode] = {}
    raw: list[tuple[str, int, str, int, str]] = []
    guid: int | None = None
    guid_line = 0
    current: SeenNode | None = None
    problems: list[Problem] = []
    claimed = _Claims(source, problems)
    for lineno, raw_line in enumerate(text.splitlines(), 1):
        line = raw_line.strip()
        if not line or line.startswith("#"):
            current = None if not line else current
            continue
        bad = _unfit(line) or _bad_lid(line)
        if bad:
            problems.append(Problem(f"{source}:{lineno}", bad, "give ibnetdiscover's own output"))
        elif m := _GUID.match(line):
            guid, guid_line = int(m[2], 16), lineno
        elif _GUID_LINE.match(line):
            problems.append(
                Problem(f"{source}:{lineno}", "a GUID of more than 16 hex digits", "give ibnetdiscover's output")
            )
        elif m := _HEADER.match(line):
            kind = "switch" if m[1] == "Switch" else "ca"
            lid = _LID.search(m[5] or "")
            current = SeenNode(m[3], kind, int(m[2]), m[4] or m[3], guid, int(lid[1]) if lid else None)
            if error := _name_error(current):
                problems.append(Problem(f"{source}:{lineno}", error, "give each node a node description of text"))
            claimed.node_id(current, lineno)
            if guid is not None:
                claimed.guid(guid, current, guid_line)
            nodes.setdefault(current.id, current)
            guid = None
        elif (m := _PORT.match(line)) and current is not None:
            _port(current, m, raw)
            if m[2]:
                claimed.guid(int(m[2], 16), current, lineno)
        elif "=" not in line:
            problems.append(
                Problem(f"{source}:{lineno}", f"unreadable line {line[:60]!r}", "give ibnetdiscover's output")
            )
    if problems:
        raise IbError(_counted(problems))
    return Topology(nodes, _links(nodes, raw, source))


class _Claims:
    """Who claimed each node id and GUID, at which line: one claimed twice is a problem naming both lines. Two
    nodes of one GUID would give a partition's membership (partitions.conf lists port GUIDs) to whichever
    host really owns it, another tenant's perhaps."""

    def __init__(self, source: str, problems: list[Problem]) -> None:
        self.source, self.problems = source, problems
        self.ids: dict[str, tuple[SeenNode, int]] = {}
        self.guids: dict[int, tuple[SeenNode, int]] = {}

    def node_id(self, node: SeenNode, line: int) -> None:
        first = self.ids.setdefault(node.id, (node, line))
        if first[0] is not node:
            self._twice(f"node id {printable(node.id)!r}", first, node, line)

    def guid(self, guid: int, node: SeenNode, line: int) -> None:
        first = self.guids.setdefault(guid, (node, line))
        if first[0] is not node:  # a switch's port 0 and a node's own ports share its GUIDs: only another node counts
            self._twice(f"GUID 0x{guid:016x}", first, node, line)

    def _twice(self, what: str, first: tuple[SeenNode, int], node: SeenNode, line: int) -> None:
        message = (
            f"{what} of {printable(node.name)!r} (line {line}) is also that of {printable(first[0].name)!r} "
            f"(line {first[1]})"
        )
        fix = "give ibnetdiscover's own output of one fabric: a GUID names one node"
        self.problems.append(Problem(f"{self.source}:{line}", message, fix))


def _bad_lid(line: str) -> str:
    """Why a LID on the line is none a port can have, or ""."""
    for found in _ANY_LID.finditer(_QUOTED.sub("", line)):
        lid = found[1]
        if not lid.isascii() or not lid.isdigit() or len(lid) > 5 or int(lid) > MAX_UNICAST_LID:
            shown = f"of {len(lid):,} digits" if len(lid) > 12 else repr(lid)
            return f"a LID {shown}: a port's LID is 1-{MAX_UNICAST_LID} (0x0001-0xbfff), or 0 before the SM assigns one"
    return ""


def _unfit(line: str) -> str:
    """Why a line is no line of ibnetdiscover's (a control character: a terminal escape in a node
    description would repaint the table a check prints), or ""."""
    bad = next((c for c in line if not c.isprintable() and c != "\t"), None)
    return f"holds the control character {bad!r}" if bad is not None else ""


def _name_error(node: SeenNode) -> str:
    if len(node.id) > MAX_ID:
        return f"a node id of {len(node.id)} characters (at most {MAX_ID})"
    if len(node.name.encode()) > NODE_DESCRIPTION_BYTES:
        return f"a node description of {len(node.name.encode())} bytes; a node description holds 64"
    return ""


MAX_LISTED = 20


def _counted(problems: list[Problem]) -> list[Problem]:
    if len(problems) <= MAX_LISTED:
        return problems
    rest = len(problems) - MAX_LISTED
    return [*problems[:MAX_LISTED], Problem(problems[MAX_LISTED].where, f"and {rest} more", "fix the ones above first")]


def _port(node: SeenNode, m: re.Match[str], raw: list[tuple[str, int, str, int, str]]) -> None:
    port = int(m[1])
    if m[2]:
        node.port_guids[port] = int(m[2], 16)
    comment = m[6] or ""
    if node.kind == "ca" and node.lid is None and (lid := _LID.search(_QUOTED.sub("", comment))):
        node.lid = int(lid[1])  # "# lid 4 lmc 0 ..." : the adapter port's own LID comes first
    rate = _RATE.search(comment)
    raw.append((node.id, port, m[3], int(m[4]), f"{rate[1]}x{rate[2]}" if rate else ""))


def _links(nodes: dict[str, SeenNode], raw: list[tuple[str, int, str, int, str]], source: str) -> list[SeenLink]:
    """Each cable once (both ends list it), ends renamed from ids to descriptions."""
    seen: dict[frozenset[tuple[str, int]], SeenLink] = {}
    for nid, port, peer, peer_port, rate in raw:
        if peer not in nodes:
            raise IbError(
                [
                    Problem(
                        source,
                        f"port {port} of {nodes[nid].name!r} names unknown node {peer!r}",
                        "give a whole topology",
                    )
                ]
            )
        key = frozenset({(nid, port), (peer, peer_port)})
        a, b = sorted([PortRef(nodes[nid].name, port), PortRef(nodes[peer].name, peer_port)])
        seen.setdefault(key, SeenLink(a, b, rate))
    return sorted(seen.values())
