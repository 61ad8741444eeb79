"""MLAG (EOS, Cumulus) and vPC (NX-OS) toward LACP-bonded hosts.

The two leaves of a unit share the unit's host subnet: each has its own SVI address
(.2 and .3) and both answer for the virtual gateway (.1), so a host keeps its gateway
when either leaf goes away. The pair also peers in BGP over the peer link, so a leaf that loses
its uplinks still routes its hosts' traffic through its partner: on EOS and NX-OS over an SVI of
a VLAN carried only by the peer link, on the /31 the plan gives the pair; on Cumulus unnumbered
over `peerlink.4094`, as NVIDIA documents for MLAG with routing.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufabric.config.context_types import Neighbor, Port
from gpufabric.plan.model import Device, ip
from gpufabric.platforms import platform

HOST_VLAN = 100
PEER_VLAN = 4094
# The peer link is a private two-switch segment: a link-local /31 is the same on every pair.
PEER_NET = 0xA9FE0000  # 169.254.0.0


@dataclass(slots=True)
class Bond:
    id: int
    host: str
    members: list[str]


@dataclass(slots=True)
class Mlag:
    domain: int  # MLAG domain / vPC domain id: the unit number
    peer: str
    peer_port: str
    primary: bool
    local_ip: str  # on the peer VLAN, "a.b.c.d/31"
    peer_ip: str
    peer_mgmt_ip: str | None  # keepalive / backup IP over the OOB plane
    vlan: int
    svi: str  # this leaf's address in the unit subnet, "a.b.c.d/len"
    gateway: str  # the virtual gateway both leaves answer for
    bonds: list[Bond]
    peer_asn: int | None = None  # the partner's ASN: the routed peering over the peer link
    l3_vlan: int | None = None  # the VLAN of that peering's SVI (EOS, NX-OS)
    l3_local: str | None = None  # this leaf's address on it, "a.b.c.d/31"
    l3_peer: str | None = None  # the partner's


def mlag(device: Device, ports: list[Port], peer: Device | None) -> Mlag | None:
    peer_link = next((p for p in ports if p.kind == "peer"), None)
    if peer_link is None or peer is None or device.svi_ip is None or device.host_subnet is None:
        return None
    primary = (device.side or 1) < (peer.side or 1)
    bonds: dict[str, Bond] = {}
    # Bonds are numbered here and nowhere else, so each host port learns its bond id here too.
    for p in ports:
        if p.kind == "host":
            bond = bonds.get(p.peer)
            if bond is None:
                bond = bonds[p.peer] = Bond(len(bonds) + 1, p.peer, [])
            bond.members.append(p.name)
            p.bond = bond.id
    return Mlag(
        domain=device.unit or 1,
        peer=peer.name,
        peer_port=peer_link.name,
        primary=primary,
        local_ip=f"{ip(PEER_NET + (0 if primary else 1))}/31",
        peer_ip=ip(PEER_NET + (1 if primary else 0)) or "",
        peer_mgmt_ip=ip(peer.mgmt_ip),
        vlan=HOST_VLAN,
        svi=f"{ip(device.svi_ip)}/{device.host_prefixlen}",
        gateway=ip(device.host_subnet + 1) or "",
        bonds=list(bonds.values()),
        peer_asn=peer.asn,
        l3_vlan=platform(device.platform).facts.mlag_l3_vlan if device.peer_l3_ip is not None else None,
        l3_local=f"{ip(device.peer_l3_ip)}/31" if device.peer_l3_ip is not None else None,
        l3_peer=ip(peer.peer_l3_ip),
    )


def peer_session(device: Device, m: Mlag) -> Neighbor | None:
    """The BGP session between the two leaves of a pair, over the peer link."""
    if m.peer_asn is None:
        return None
    interface = platform(device.platform).facts.mlag_l3_interface
    if interface is not None:
        return Neighbor(m.peer, m.peer_asn, "mlag", interface=interface)
    if m.l3_vlan is not None and m.l3_peer:
        return Neighbor(m.peer, m.peer_asn, "mlag", address=m.l3_peer)
    return None
