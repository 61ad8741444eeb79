"""Names to GUIDs: what the fabric says it is, checked against the plan, kept in a file.

GUIDs exist only on hardware (or in ibsim, from the exported topology): a discovery reads
ibnetdiscover's output, refuses a fabric whose node descriptions are not the planned ones,
and records each planned node's node GUID and (adapters) port GUID. The OpenSM files are
rendered from the plan plus a discovery. `compare()` names every cable that differs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpufabric.ib import names
from gpufabric.ib.errors import IbError, Problem
from gpufabric.ib.model import IbFabric, PortRef
from gpufabric.ib.topology import Topology
from gpufabric.inputs import MiB, json_text, read_text
from gpufabric.intent.errors import printable
from gpufabric.outputs import json_dumps

MAX_LISTED = 20  # problems named one by one before the rest are counted
# A discovery of the largest subnet (49,151 LIDs) as `dumps` writes it is under 7 MiB.
MAX_BYTES = 16 * MiB
WHAT = "a discovery file (what 'gpufabric ib discover' writes)"
_GUID_TEXT = re.compile(r"^0x[0-9a-fA-F]{1,16}$")


@dataclass(frozen=True)
class Guids:
    node: int
    port: int  # the port an adapter is addressed by (port 1); a switch's port 0 is its node GUID
    lid: int | None = None


@dataclass(frozen=True)
class Discovery:
    fabric: str
    nodes: dict[str, Guids]

    def node_guids(self) -> dict[str, int]:
        return {name: g.node for name, g in self.nodes.items()}

    def dumps(self) -> str:
        body = {
            "fabric": self.fabric,
            "nodes": {
                n: {"node_guid": f"0x{g.node:016x}", "port_guid": f"0x{g.port:016x}"}
                for n, g in sorted(self.nodes.items())
            },
        }
        return json_dumps(body, indent=2) + "\n"


def loads(text: str, source: str) -> Discovery:
    """A discovery as `dumps` writes it: every name a node description, every GUID 0x and at most
    sixteen hex digits (they are written into OpenSM's files as they are read here), no node named
    twice and no GUID of two nodes (each refused naming both lines)."""
    body = json_text(text, source, WHAT)
    fix = "write it with 'gpufabric ib discover'"
    _no_name_twice(text, source)
    if not isinstance(body, dict) or not isinstance(body.get("fabric"), str) or not isinstance(body.get("nodes"), dict):
        raise IbError([Problem(source, "not a discovery file (it needs fabric and nodes)", fix)])
    nodes: dict[str, Guids] = {}
    problems: list[Problem] = []
    for name, entry in body["nodes"].items():
        shown = printable(name[:70])
        if not names.NODE.match(name) or len(name.encode()) > names.NODE_DESCRIPTION_BYTES:
            problems.append(Problem(source, f"not a discovery file: {shown!r} is no planned node description", fix))
            continue
        node, port = (_guid(entry.get(k)) if isinstance(entry, dict) else None for k in ("node_guid", "port_guid"))
        if node is None or port is None:
            problems.append(
                Problem(
                    source,
                    f"not a discovery file: node {shown!r} needs node_guid and port_guid of 0x and 1-16 hex digits",
                    fix,
                )
            )
            continue
        nodes[name] = Guids(node, port)
    problems += _shared_guids(nodes, source, _key_lines(text, nodes))
    if problems:
        raise IbError(_listed(problems))
    return Discovery(body["fabric"], nodes)


def _key_lines(text: str, names: Iterable[str]) -> dict[str, int]:
    """The line of each node's key in the file (as `dumps` writes it: one key a line), for messages."""
    wanted = {json_dumps(name): name for name in names}  # as `dumps` writes a key
    out: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        key = line.strip().split(":", 1)[0].strip()
        if key in wanted:
            out.setdefault(wanted[key], number)
    return out


def _no_name_twice(text: str, source: str) -> None:
    """A key given twice in one object (a node named twice in `nodes`): JSON's reader keeps the last silently,
    and the file holds two GUIDs for one node."""
    twice: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        twice.extend(k for i, k in enumerate(keys) if k in keys[:i])
        return dict(items)

    json.loads(text, object_pairs_hook=pairs)  # depth and form checked by json_text already
    if twice:
        key = json_dumps(twice[0]) + ":"
        lines = [n for n, line in enumerate(text.splitlines(), 1) if line.strip().startswith(key)]
        where = " and ".join(f"line {n}" for n in lines) if len(lines) > 1 else "twice in one object"
        message = f"{printable(twice[0][:70])!r} is given twice ({where}); JSON keeps one of them silently"
        raise IbError([Problem(source, message, "discover the fabric again: a discovery names each node once")])


def _shared_guids(nodes: Mapping[str, Guids], source: str, lines: Mapping[str, int] | None = None) -> list[Problem]:
    """Each GUID two nodes claim (as node or port GUID), naming both. A switch's port GUID is its node GUID:
    one node's own GUIDs never clash. Two nodes of one GUID would make whichever host owns it a member of the
    other's partitions (partitions.conf lists port GUIDs)."""
    owner: dict[int, str] = {}
    problems = []
    for name, g in nodes.items():
        for guid in dict.fromkeys((g.node, g.port)):
            first = owner.setdefault(guid, name)
            if first != name:
                where = {n: f" (line {lines[n]})" if lines and n in lines else "" for n in (first, name)}
                problems.append(
                    Problem(
                        f"{source}:{lines[name]}" if lines and name in lines else source,
                        f"GUID 0x{guid:016x} of {name!r}{where[name]} is also that of {first!r}{where[first]}",
                        "discover the fabric again: a GUID names one node",
                    )
                )
    return problems


def check(found: Discovery, fabric: IbFabric, source: str = "discovery") -> None:
    """Refuse a discovery that is not of `fabric`: another fabric's name, a node the plan does not hold or a
    planned node it has no GUID for, or a GUID of two nodes. The plan knows no GUID (only hardware has them): its
    fabric's name and its node descriptions are what identifies it, and a discovery records both."""
    problems: list[Problem] = []
    fix = "discover this fabric: gpufabric ib discover FILE --from ..."
    if found.fabric != fabric.design.name:
        problems.append(
            Problem(
                source,
                f"a discovery of the fabric {printable(found.fabric[:70])!r}, not of {fabric.design.name!r}",
                fix,
            )
        )
    problems += [
        Problem(source, f"node {name!r} is not in the plan of {fabric.design.name!r}", fix)
        for name in found.nodes
        if name not in fabric.by_name
    ]
    problems += [
        Problem(source, f"no GUID for the planned node {name!r}", fix)
        for name in fabric.by_name
        if name not in found.nodes
    ]
    problems += _shared_guids(found.nodes, source)
    if problems:
        raise IbError(_listed(problems))


def _guid(value: Any) -> int | None:
    if not isinstance(value, str) or not _GUID_TEXT.match(value):
        return None
    return int(value, 16) or None


def load(path: Path, fabric: IbFabric | None = None) -> Discovery:
    """The discovery file at `path`; with `fabric`, refused unless it is that fabric's (`check`)."""
    found = loads(read_text(path, what=WHAT, max_bytes=MAX_BYTES), str(path))
    if fabric is not None:
        check(found, fabric, str(path))
    return found


def discover(fabric: IbFabric, seen: Topology, source: str = "ibnetdiscover") -> Discovery:
    """Planned name -> GUIDs from a live topology; refuses missing, unplanned or doubled names."""
    problems: list[Problem] = []
    found: dict[str, Guids] = {}
    for node in seen.nodes.values():
        if node.name not in fabric.by_name:
            problems.append(
                Problem(source, f"unplanned node {node.name!r}", "name it as planned or add it to the plan")
            )
        elif node.name in found:
            problems.append(
                Problem(
                    source, f"two nodes describe themselves as {node.name!r}", "give each a unique node description"
                )
            )
        elif node.guid is None:
            problems.append(Problem(source, f"no GUID for {node.name!r}", "give ibnetdiscover's own output"))
        else:
            port = node.guid if node.kind == "switch" else node.port_guids.get(1, node.guid)
            found[node.name] = Guids(node.guid, port, node.lid)
    problems += [
        Problem(source, f"planned node {name!r} not found", "cable and power it, and set its node description")
        for name in fabric.by_name
        if name not in found and name not in {p.message for p in problems}
    ]
    if problems:
        raise IbError(_listed(problems))
    return Discovery(fabric.design.name, found)


def _listed(problems: list[Problem]) -> list[Problem]:
    if len(problems) <= MAX_LISTED:
        return problems
    rest = len(problems) - MAX_LISTED
    return [*problems[:MAX_LISTED], Problem(problems[MAX_LISTED].where, f"and {rest} more", "fix the ones above first")]


@dataclass
class CablingDiff:
    missing: list[tuple[PortRef, PortRef]] = field(default_factory=list)  # planned, not found
    unplanned: list[tuple[PortRef, PortRef]] = field(default_factory=list)  # found, not planned
    rate: list[tuple[PortRef, PortRef, str, str]] = field(default_factory=list)  # planned label, found label

    @property
    def clean(self) -> bool:
        return not (self.missing or self.unplanned or self.rate)

    def lines(self) -> list[str]:
        out = [f"missing cable {a} - {b}" for a, b in self.missing]
        out += [f"unplanned cable {a} - {b}" for a, b in self.unplanned]
        out += [f"cable {a} - {b} runs at {found}, planned {want}" for a, b, want, found in self.rate]
        return out


def compare(fabric: IbFabric, seen: Topology, *, rates: bool = True) -> CablingDiff:
    """Every planned cable port for port, and nothing else; a swapped cable shows as both."""
    planned = {frozenset(c.ends()): c for c in fabric.cables}
    found = {frozenset((link.a, link.b)): link for link in seen.links}
    diff = CablingDiff()
    for key, cable in planned.items():
        link = found.get(key)
        if link is None:
            diff.missing.append((cable.down, cable.up))
        elif rates and link.rate and link.rate != cable.rate.label:
            diff.rate.append((cable.down, cable.up, cable.rate.label, link.rate))
    diff.unplanned = [
        (link.a, link.b) for key, link in sorted(found.items(), key=lambda kv: kv[1]) if key not in planned
    ]
    diff.missing.sort()
    return diff
