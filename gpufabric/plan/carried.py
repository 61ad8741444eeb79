"""The plan's records of carried planes (a converged plane's `carries`): one per logical plane, one per host
subinterface. Apart from the builder (gpufabric/plan/converged.py) so that the plan model can name them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CarriedPlan:
    """One logical plane on a physical plane's switches."""

    name: str  # storage | inband
    vrf: str
    vlan: int
    lossless: bool  # in the physical plane's RoCE class (its QoS profile's priority and DSCP)
    priority: int | None  # lossy planes: their switch priority / traffic class
    dscp: tuple[int, ...]  # lossy planes: the DSCP values mapped to `priority`
    bandwidth_percent: int
    groups: frozenset[str]  # server groups whose hosts join it
    hosts: str  # the pool, as written ("10.11.0.0/16")
    hosts_offset: int  # its first address minus the physical plane's hosts pool's
    p2p_offset: int | None  # the same for fabric /31s; None on an unnumbered plane

    def host_address(self, physical: int) -> int:
        return physical + self.hosts_offset

    def p2p_address(self, physical: int) -> int:
        assert self.p2p_offset is not None
        return physical + self.p2p_offset

    def subinterface(self, port: str) -> str:
        return f"{port}.{self.vlan}"


@dataclass(frozen=True, slots=True)
class CarriedNic:
    """A host's tagged subinterface in a carried plane, on one of its NICs of the physical plane."""

    plane: str
    vrf: str
    vlan: int
    interface: str  # "eth4.20"
    parent: str  # "eth4"
    address: int
    prefixlen: int
    gateway: int
