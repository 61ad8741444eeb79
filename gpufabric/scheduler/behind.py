"""Which servers depend on one switch alone: from the plan, never from a switch.

A server is behind a switch when one of its data-plane attachments has no way around it:

- an attachment is a NIC with its own leaf, or the NICs of one bond together (a bond to an
  MLAG/vPC pair reaches both leaves of the pair, so losing one leaf costs it half its links, not
  its path);
- it is cut off when none of its leaves is left (a rail leaf, a storage leaf without a pair), or
  when what is left of its leaves no longer reaches the rest of its plane through the fabric's
  links (a spine that is some leaf's only way up). In a plane that loses a piece, the side with
  the most host leaves is "the rest"; every attachment outside it is cut off (all of them, when the
  plane falls into equal halves).

The out-of-band plane carries no job traffic and is not looked at; an InfiniBand compute plane is
the subnet manager's and is not in `plan.planes` either.
"""

from __future__ import annotations

from collections.abc import Iterable
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


def _main_piece(piece: dict[str, int], host_leaves: Iterable[str]) -> set[int]:
    """The piece holding the most host leaves: "the rest of the plane". On a tie no piece is: the
    plane fell apart into equals, and every attachment counts as cut off (draining more is the safe side)."""
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
    """The servers with some data-plane attachment whose only path is `switch`, in plan order.

    Raises KeyError for a switch the plan does not hold."""
    device = plan.device(switch)
    plane = plan.planes[device.plane]
    if device.role == "mgmt" or plane.name == "oob":
        return []
    host_leaves = {nic.leaf for s in plan.servers for nic in s.nics if nic.plane == plane.name} - {switch}
    piece = _components(plane, switch)
    main = _main_piece(piece, host_leaves)
    out: list[BehindServer] = []
    for server in plan.servers:
        cut: list[CutNic] = []
        for bond, nics in _attachments(server, plane.name):
            leaves = tuple(dict.fromkeys(nic.leaf for nic in nics))
            if any(piece.get(leaf) in main for leaf in leaves if leaf != switch):
                continue  # a leaf of its own (the other of an MLAG pair, say) still reaches the plane
            cut.append(CutNic(plane.name, tuple(n.interface for n in nics), leaves, bond))
        if cut:
            out.append(BehindServer(server.name, server.group, tuple(cut)))
    return out
