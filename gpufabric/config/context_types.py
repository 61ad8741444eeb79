"""The per-port and per-session facts a switch template prints."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class Port:
    name: str
    kind: str  # fabric | host | edge | peer | mgmt (a port of an OOB switch)
    peer: str
    peer_port: str
    speed: int
    mtu: int
    address: str | None = None  # "a.b.c.d/len"
    unnumbered: bool = False
    bond: int | None = None  # LACP host ports: the MLAG/vPC port-channel id
    cage: int = 0  # the physical cage this logical port is on (1-based; 0 when the plan has none)
    split: int = 1  # how many ways that cage is split (breakout)


@dataclass(slots=True)
class Neighbor:
    """A BGP session: by interface (unnumbered) or by address, always with the peer's planned ASN."""

    peer: str
    remote_asn: int
    kind: str  # fabric | edge | mlag (the two leaves of an MLAG/vPC pair, over their peer link)
    interface: str | None = None
    address: str | None = None

    @property
    def key(self) -> str:
        """How the session is named on the switch (and in NAPALM's getters): its interface or peer address."""
        return self.interface or self.address or ""
