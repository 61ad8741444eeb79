"""Which servers depend on one switch alone: from the plan, never from a switch.

A server is behind a switch when one of its data-plane attachments has no way around it:

- an attachment is a NIC with its own leaf, or the NICs of one bond together (a bond to an
  MLAG/vPC pair reaches both leaves of the pair, so losing one leaf costs it half its links, not
  its path);
- it is cut off when none of its leaves is left (a rail leaf, a storage leaf without a pair), or
  when what is left of its leaves no longer reaches the rest of its plane through the fabric's
  links (a spine that is some leaf's only way up). In a plane that loses a piece, the side with
  the most host leaves is "the rest"; every attachment outside it is cut off (all of them, when the
  plane falls into equal halves: draining more is the safe side). A compute plane built as several
  planes (`multiplane`) is read plane by plane: its planes never reach each other by design, so
  they are not a plane fallen into equal halves, and a plane-1 leaf cuts off only what hangs on it.

The out-of-band plane carries no job traffic and is not looked at; an InfiniBand compute plane is
the subnet manager's and is not in `plan.planes` either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from gpufabric.plan.model import HostNic, Plan, PlanePlan, Server

FABRIC_KINDS = frozenset({"fabric", "peer"})  # links between switches of one plane (edge links leave it)


@dataclass(frozen=True, slots=True)
class CutNic:
    """One of a server's attachments that a switch's loss cuts off."""

    plane: str
    interfaces: tuple[str, ...]  # one NIC, or the members of a bond
    leaves: tuple[str, ...]  # the leaves it is cabled to
    bond: str | None = None


@dataclass(frozen=True, slots=True)
class BehindServer:
    """A server that loses a data-plane path with the switch, and which of its NICs do."""

    name: str
    group: str
    nics: tuple[CutNic, ...]

    @property
    def planes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(nic.plane for nic in self.nics))


def _attachments(server: Server, plane: str) -> list[tuple[str | None, list[HostNic]]]:
    """A server's attachments on one plane: each bond whole, each other NIC alone, in NIC order."""
    out: list[tuple[str | None, list[HostNic]]] = []
    bonds: dict[str, list[HostNic]] = {}
    for nic in server.nics:
        if nic.plane != plane:
            continue
        if nic.bond is None:
            out.append((None, [nic]))
        elif nic.bond in bonds:
            bonds[nic.bond].append(nic)
        else:
            bonds[nic.bond] = [nic]
            out.append((nic.bond, bonds[nic.bond]))
    return out


def _components(plane: PlanePlan, without: str) -> dict[str, int]:
    """Each switch of the plane but `without` -> the number of its piece once `without` is gone."""
    neighbours: dict[str, list[str]] = {d.name: [] for d in plane.devices if d.name != without}
    for link in plane.links:
        if link.kind in FABRIC_KINDS and without not in (link.a, link.b):
            neighbours.setdefault(link.a, []).append(link.b)
            neighbours.setdefault(link.b, []).append(link.a)
    return _pieces(neighbours)


def _main_piece(piece: Mapping[str, int], host_leaves: Iterable[str]) -> set[int]:
    """The piece holding the most host leaves (of the lost switch's plane of a multi-plane fabric): "the rest".
    On a tie no piece is: the plane fell apart into equals, and every attachment counts as cut off (draining
    more is the safe side)."""
    counts: dict[int, int] = {}
    for leaf in host_leaves:
        if leaf in piece:
            counts[piece[leaf]] = counts.get(piece[leaf], 0) + 1
    if not counts:
        return set()
    best = max(counts.values())
    winners = {number for number, count in counts.items() if count == best}
    return winners if len(winners) == 1 else set()


def servers_behind(plan: Plan, switch: str) -> list[BehindServer]:
    """The servers with some data-plane attachment whose only path is `switch`, in plan order. For many
    switches of one plan, ask one `Behind` (each plane read once).

    Raises KeyError for a switch the plan does not hold."""
    return Behind(plan)(switch)


@dataclass(frozen=True, slots=True)
class _Attachment:
    server: int  # the server's place in plan order (attachments are listed in plan order, then NIC order)
    bond: str | None
    nics: tuple[HostNic, ...]
    leaves: tuple[str, ...]


class _PlaneIndex:
    """One plane read once: its servers' attachments by leaf, and its switches' graph (fabric and peer links),
    its pieces and the switches whose loss splits one (articulation points)."""

    def __init__(self, plan: Plan, plane: PlanePlan) -> None:
        self.plane = plane
        self.attachments: list[_Attachment] = []
        self.by_leaf: dict[str, list[int]] = {}
        for number, server in enumerate(plan.servers):
            for bond, nics in _attachments(server, plane.name):
                leaves = tuple(dict.fromkeys(nic.leaf for nic in nics))
                self.attachments.append(_Attachment(number, bond, tuple(nics), leaves))
                for leaf in leaves:
                    self.by_leaf.setdefault(leaf, []).append(len(self.attachments) - 1)
        self.host_leaves = set(self.by_leaf)
        names = {d.name for d in plane.devices}
        self.neighbours: dict[str, set[str]] = {name: set() for name in names}
        for link in plane.links:
            if link.kind in FABRIC_KINDS:
                self.neighbours.setdefault(link.a, set()).add(link.b)
                self.neighbours.setdefault(link.b, set()).add(link.a)
        # A link to a switch the plane does not list would make a piece of its own that a switch's loss may
        # drop entirely: such a plane is always read the long way, one switch at a time.
        self.plain = set(self.neighbours) == names
        self.piece = _pieces(self.neighbours)
        self.leaves_of: dict[int, set[str]] = {}  # a multi-plane fabric's host leaves by plane (all in 0 on one plane)
        for leaf in self.host_leaves:
            self.leaves_of.setdefault(plane.plane_of.get(leaf, 0), set()).add(leaf)
        self.splitting = _articulation_points(self.neighbours)


def _pieces(neighbours: Mapping[str, Iterable[str]]) -> dict[str, int]:
    piece: dict[str, int] = {}
    for start in neighbours:
        if start in piece:
            continue
        number = len(piece)
        piece[start] = number
        stack = [start]
        while stack:
            for other in neighbours[stack.pop()]:
                if other not in piece:
                    piece[other] = number
                    stack.append(other)
    return piece


def _articulation_points(neighbours: dict[str, set[str]]) -> set[str]:
    """The switches whose loss leaves more pieces than before (Hopcroft and Tarjan's depth-first search,
    without recursion: a plane holds thousands of switches)."""
    found: set[str] = set()
    seen: dict[str, int] = {}  # when the search reached each switch
    low: dict[str, int] = {}  # the earliest switch reachable from its subtree by one back edge
    for root, first in neighbours.items():
        if root in seen:
            continue
        seen[root] = low[root] = len(seen)
        children = 0
        stack: list[tuple[str, str | None, Iterator[str]]] = [(root, None, iter(first))]
        while stack:
            node, parent, rest = stack[-1]
            went = False
            for other in rest:
                if other == parent:
                    continue
                if other in seen:
                    low[node] = min(low[node], seen[other])
                    continue
                seen[other] = low[other] = len(seen)
                stack.append((other, node, iter(neighbours[other])))
                went = True
                break
            if went:
                continue
            stack.pop()
            if parent is None:
                continue
            low[parent] = min(low[parent], low[node])
            if parent == root:
                children += 1
            elif low[node] >= seen[parent]:
                found.add(parent)
        if children > 1:
            found.add(root)
    return found


class Behind:
    """`servers_behind` for any number of switches of one plan: each plane's attachments and graph are read
    once (on the first switch of that plane asked), and each switch's answer is kept. The plan must not
    change meanwhile."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self._devices = {d.name: d for d in plan.devices()}
        self._planes: dict[str, _PlaneIndex] = {}
        self._known: dict[str, list[BehindServer]] = {}

    def __call__(self, switch: str) -> list[BehindServer]:
        """As `servers_behind(plan, switch)`. Raises KeyError for a switch the plan does not hold."""
        if switch not in self._known:
            self._known[switch] = self._find(switch)
        return list(self._known[switch])

    def _find(self, switch: str) -> list[BehindServer]:
        device = self._devices[switch]
        plane = self.plan.planes[device.plane]
        if device.role == "mgmt" or plane.name == "oob":
            return []
        index = self._planes.get(plane.name)
        if index is None:
            index = self._planes[plane.name] = _PlaneIndex(self.plan, plane)
        part = plane.plane_of.get(switch, 0)
        home = index.leaves_of.get(part, set())  # the host leaves of the switch's plane of a multi-plane fabric
        reaches = self._reaches(index, switch, part, home)
        # Only an attachment with a leaf left out of the rest (or on the switch itself) can be cut off.
        outside = {leaf for leaf in home if leaf == switch or not reaches(leaf)}
        chosen = sorted({i for leaf in outside for i in index.by_leaf[leaf]})
        cut: dict[int, list[CutNic]] = {}
        for i in chosen:
            a = index.attachments[i]
            if any(reaches(leaf) for leaf in a.leaves if leaf != switch):
                continue  # a leaf of its own (the other of an MLAG pair, say) still reaches the plane
            cut.setdefault(a.server, []).append(
                CutNic(plane.name, tuple(n.interface for n in a.nics), a.leaves, a.bond)
            )
        servers = self.plan.servers
        return [BehindServer(servers[n].name, servers[n].group, tuple(nics)) for n, nics in sorted(cut.items())]

    @staticmethod
    def _reaches(index: _PlaneIndex, switch: str, part: int, home: set[str]) -> Callable[[str], bool]:
        """Whether a host leaf still reaches the rest of the plane once `switch` is gone. A leaf of another plane
        of a multi-plane fabric is untouched by it."""
        of = index.plane.plane_of
        if index.plain and switch not in index.splitting:  # its loss splits nothing: the pieces stay, less it
            piece: Mapping[str, int] = index.piece
        else:
            piece = _components(index.plane, switch)
        main = _main_piece(piece, home - {switch})
        return lambda leaf: of.get(leaf, 0) != part or (leaf != switch and piece.get(leaf) in main)
