"""What a host container is: its name, management address and data NICs, and where each NIC's far end goes."""

from __future__ import annotations

from dataclasses import dataclass

LAB_PREFIX = "h-"


def netns_of(host: str, prefix: str = LAB_PREFIX) -> str:
    """The network namespace name a host container's NICs live in (ip netns). Another prefix (Molecule's)
    lets a second set of hosts of the same plan run beside the lab's."""
    return f"{prefix}{host}"


def root_port_of(netns: str) -> str:
    """The management veth's end on the bridge, in the root namespace, named after the host's namespace."""
    return f"v{netns}"[:15]


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
