"""The planned InfiniBand fabric: nodes (by node description), ports and cables.

A node's name is its InfiniBand node description, the name every tool shows: a switch's
planned hostname, and "<host> <adapter>" for a channel adapter (one per rail, one port each).
GUIDs are not part of the plan: they exist only once hardware (or ibsim) is read back.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from gpufabric.ib.design import IbDesign
from gpufabric.ib.hardware import Rate

NodeKind = Literal["switch", "ca"]
Role = Literal["leaf", "spine", "core", "compute", "fabric-manager"]
SWITCH_ROLES: tuple[Role, ...] = ("leaf", "spine", "core")


@dataclass(frozen=True, slots=True)
class IbNode:
    name: str  # node description
    kind: NodeKind
    role: Role
    ports: int  # ports the node reports (a switch's split ports count twice)
    model: str
    su: int | None = None  # leaves, compute and fabric-manager adapters
    rail: int | None = None  # leaves and adapters
    group: int | None = None  # spines and cores: their spine group / core group (3 tiers)
    host: str | None = None  # adapters: the server they sit in


@dataclass(frozen=True, slots=True, order=True)
class PortRef:
    node: str
    port: int

    def __str__(self) -> str:
        return f'"{self.node}"[{self.port}]'


@dataclass(frozen=True, slots=True)
class IbCable:
    """One cable: `down` is the end nearer the adapters, `up` the end nearer the top tier."""

    down: PortRef
    up: PortRef
    rate: Rate
    tier: Literal["node-leaf", "leaf-spine", "spine-core"]

    def ends(self) -> frozenset[PortRef]:
        return frozenset((self.down, self.up))


@dataclass(frozen=True)
class SmPlacement:
    """Where the subnet manager runs: an adapter port by node description (primary, standby)."""

    primary: str
    standby: str | None


@dataclass(frozen=True)
class IbFabric:
    design: IbDesign
    tiers: int
    nodes: tuple[IbNode, ...]
    cables: tuple[IbCable, ...]
    sm: SmPlacement

    @cached_property
    def by_name(self) -> dict[str, IbNode]:
        return {n.name: n for n in self.nodes}

    def role(self, role: Role) -> list[IbNode]:
        return [n for n in self.nodes if n.role == role]

    @property
    def switches(self) -> list[IbNode]:
        return [n for n in self.nodes if n.kind == "switch"]

    @property
    def adapters(self) -> list[IbNode]:
        return [n for n in self.nodes if n.kind == "ca"]

    @property
    def hosts(self) -> list[str]:
        """Compute hosts in plan order."""
        return list(dict.fromkeys(n.host for n in self.role("compute") if n.host))

    @property
    def roots(self) -> list[IbNode]:
        """The top tier: what up/down routing takes as roots and fat-tree routing as its top."""
        return self.role("core" if self.tiers == 3 else "spine")

    def counts(self) -> dict[str, int]:
        """Switches per role, compute nodes, and cables per tier."""
        roles = Counter(n.role for n in self.switches)
        tiers = Counter(c.tier for c in self.cables)
        return {
            "nodes": len(self.hosts),
            "leaf": roles["leaf"],
            "spine": roles["spine"],
            "core": roles["core"],
            "node_leaf_cables": tiers["node-leaf"],
            "leaf_spine_cables": tiers["leaf-spine"],
            "spine_core_cables": tiers["spine-core"],
        }

    @cached_property
    def peer(self) -> dict[PortRef, PortRef]:
        """Each cabled port to the port at the cable's other end."""
        out: dict[PortRef, PortRef] = {}
        for c in self.cables:
            out[c.down] = c.up
            out[c.up] = c.down
        return out
