"""What a host container is: its name, management address and data NICs, and where each NIC's far end goes."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

LAB_PREFIX = "h-"
# A named lab's hosts (LabNames.host_prefix): h<tag>-; their bridge ports are hashed when the name is too long.
_NAMED_LAB_HOST = re.compile(r"h[0-9a-f]{6}-.+")


def netns_of(host: str, prefix: str = LAB_PREFIX) -> str:
    """The network namespace name a host container's NICs live in (ip netns). Another prefix (Molecule's)
    lets a second set of hosts of the same plan run beside the lab's."""
    return f"{prefix}{host}"


def root_port_of(netns: str) -> str:
    """The management veth's end on the bridge, in the root namespace, named after the host's namespace. A
    named lab's host whose name does not fit in 15 characters gets its lab's tag and a hash of its namespace's
    name: cutting the name short would give two hosts of that lab one name."""
    port = f"v{netns}"
    if len(port) > 15 and _NAMED_LAB_HOST.fullmatch(netns):
        return f"v{netns[1:7]}{hashlib.sha256(netns.encode()).hexdigest()[:8]}"
    return port[:15]


@dataclass(frozen=True)
class HostNic:
    interface: str  # the name inside the host, as the plan has it (eth1, ...)
    peer_netns: str  # the namespace holding the far end: the planned leaf, or a stand-in router
    peer_port: str  # the far end's name there (the leaf's planned port)
    peer_mtu: int  # the switch port's MTU; the host's NIC starts at the kernel's 1500 until a role sets it
    peer_address: str | None = None  # "a.b.c.d/len" put on the far end; None when the switch's config sets it


@dataclass(frozen=True)
class HostSpec:
    name: str
    mgmt_interface: str
    mgmt_address: str  # "a.b.c.d/len" inside the host
    nics: tuple[HostNic, ...] = ()
    prefix: str = LAB_PREFIX

    @property
    def netns(self) -> str:
        return netns_of(self.name, self.prefix)

    @property
    def mgmt_ip(self) -> str:
        return self.mgmt_address.split("/")[0]

    @property
    def root_port(self) -> str:
        return root_port_of(self.netns)
