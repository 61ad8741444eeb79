"""What a pair of NICs' traffic may cross: switches and cables, from the plan's links."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufabric.export.cabling import cable_id
from gpufabric.plan.model import Plan


@dataclass(slots=True)
class Fabric:
    """Uplinks per switch and the cable of every host NIC, on one plane."""

    up: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # switch -> [(upper switch, cable)]
    host_cable: dict[tuple[str, str], str] = field(default_factory=dict)  # (server, interface) -> cable
    host_speed: dict[tuple[str, str], int] = field(default_factory=dict)  # (server, interface) -> Gb/s
    ends: dict[str, tuple[tuple[str, str], tuple[str, str]]] = field(default_factory=dict)  # fabric cable -> ports

    @classmethod
    def of(cls, plan: Plan, plane: str) -> Fabric:
        fabric = cls()
        p = plan.planes[plane]
        for link in p.links:
            cable = cable_id(p.prefix, link.number)
            if link.kind == "fabric":
                fabric.up.setdefault(link.a, []).append((link.b, cable))
                fabric.ends[cable] = ((link.a, link.a_port), (link.b, link.b_port))
            elif link.kind == "host":
                fabric.host_cable[(link.a, link.a_port)] = cable
                fabric.host_speed[(link.a, link.a_port)] = link.speed
        return fabric

    def uppers(self, switches: set[str]) -> set[str]:
        return {b for s in switches for b, _ in self.up.get(s, [])}

    def cables_between(self, lower: set[str], upper: set[str]) -> set[str]:
        return {c for s in lower for b, c in self.up.get(s, []) if b in upper}

    def between_leaves(self, a: str, b: str, tiers: int) -> tuple[set[str], set[str]]:
        """Switches and fabric cables on the equal-cost paths from leaf a up and down to leaf b."""
        if a == b:
            return {a}, set()
        spines_a, spines_b = self.uppers({a}), self.uppers({b})
        common = spines_a & spines_b
        if common:  # one spine layer joins them: leaf, spine, leaf
            return {a, b, *common}, self.cables_between({a, b}, common)
        if tiers < 3:
            return {a, b}, set()
        tops = self.uppers(spines_a) & self.uppers(spines_b)
        # leaf, spine, superspine, spine, leaf: only the spines that reach a common superspine
        via_a = {s for s in spines_a if self.uppers({s}) & tops}
        via_b = {s for s in spines_b if self.uppers({s}) & tops}
        cables = self.cables_between({a}, via_a) | self.cables_between({b}, via_b)
        cables |= self.cables_between(via_a | via_b, tops)
        return {a, b, *via_a, *via_b, *tops}, cables
