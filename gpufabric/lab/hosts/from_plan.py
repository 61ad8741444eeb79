"""Host containers for a plan's servers: the management address and data NICs the plan gives each."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from gpufabric.errors import GpufabricError
from gpufabric.lab.hosts.spec import LAB_PREFIX, HostNic, HostSpec
from gpufabric.plan.model import Plan, Server, ip


class UnknownHostError(ValueError, GpufabricError):
    pass


def servers(plan: Plan, names: list[str]) -> list[Server]:
    by_name = {s.name: s for s in plan.servers}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UnknownHostError(
            f"no server named {unknown[0]} in the plan; servers are {', '.join(sorted(by_name)[:8])} ..."
        )
    return [by_name[n] for n in names] if names else list(plan.servers)


def standin_specs(
    plan: Plan, names: list[str], router: str, mgmt_gateway: str, prefix: str = LAB_PREFIX
) -> list[HostSpec]:
    """Hosts whose data NICs all end in one stand-in router namespace holding the planned gateways.

    Used where no switches run (Molecule): the host side sees exactly what a leaf would give it
    (its gateway on a /31, the plane's MTU), and host-to-host traffic still crosses a routed hop.
    Management addresses are taken in order from `mgmt_gateway`'s subnet, after the gateway.
    """
    net = ipaddress.ip_interface(mgmt_gateway).network
    addresses = (a for a in net.hosts() if str(a) != mgmt_gateway.split("/", maxsplit=1)[0])
    mtu = {name: plane.mtu for name, plane in plan.planes.items()}
    specs = []
    for i, server in enumerate(servers(plan, names)):
        nics = tuple(
            HostNic(
                interface=n.interface,
                peer_netns=router,
                peer_port=f"h{i}-{n.interface}"[:15],
                peer_mtu=mtu[n.plane],
                peer_address=f"{ip(n.gateway)}/{n.prefixlen}",
            )
            for n in server.nics
        )
        address = f"{next(addresses)}/{net.prefixlen}"
        specs.append(HostSpec(server.name, server.mgmt_interface or "eth0", address, nics, prefix))
    return specs


def lab_specs(
    plan: Plan,
    mtu_of_port: dict[tuple[str, str], int],
    mgmt_prefixlen: int,
    *,
    prefix: str = LAB_PREFIX,
    netns: Callable[[str], str] = str,
) -> list[HostSpec]:
    """Every server of the plan, each data NIC cabled into its planned leaf port (the lab's switch namespace,
    `netns` of the leaf's name; `prefix` before each host's namespace: the lab's, LabNames).

    The leaf end gets its address from the switch's configuration when it is pushed, as on a real
    leaf, so no address is put on it here.
    """
    specs = []
    for server in plan.servers:
        if server.mgmt_ip is None:
            continue
        nics = tuple(
            HostNic(
                interface=n.interface,
                peer_netns=netns(n.leaf),
                peer_port=n.leaf_port,
                peer_mtu=mtu_of_port[(n.leaf, n.leaf_port)],
            )
            for n in server.nics
            if (n.leaf, n.leaf_port) in mtu_of_port
        )
        address = f"{ip(server.mgmt_ip)}/{mgmt_prefixlen}"
        specs.append(HostSpec(server.name, server.mgmt_interface or "eth0", address, nics, prefix))
    return specs
