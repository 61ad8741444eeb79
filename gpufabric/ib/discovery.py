"""Names to GUIDs: what the fabric says it is, checked against the plan, kept in a file.

GUIDs exist only on hardware (or in ibsim, from the exported topology): a discovery reads
ibnetdiscover's output, refuses a fabric whose node descriptions are not the planned ones,
and records each planned node's node GUID and (adapters) port GUID. The OpenSM files are
rendered from the plan plus a discovery. `compare()` names every cable that differs.
"""

from __future__ import annotations

import re
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
    sixteen hex digits (they are written into OpenSM's files as they are read here)."""
    body = json_text(text, source, WHAT)
    fix = "write it with 'gpufabric ib discover'"
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
    if problems:
        raise IbError(_listed(problems))
    return Discovery(body["fabric"], nodes)


def _guid(value: Any) -> int | None:
    if not isinstance(value, str) or not _GUID_TEXT.match(value):
        return None
    return int(value, 16) or None


def load(path: Path) -> Discovery:
    return loads(read_text(path, what=WHAT, max_bytes=MAX_BYTES), str(path))


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
