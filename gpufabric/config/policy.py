"""Business-plane policy: what may enter from hosts and the edge, and what the borders exchange.

The business plane is the only one reachable from outside the cluster, so its switches
refuse any packet toward the compute, storage or out-of-band address space even though
those planes are separate wires: a host or a mistake may bridge them.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufabric.config.context_types import Neighbor, Port
from gpufabric.intent.rules import address_pools
from gpufabric.plan.model import Device, Plan

# SSH, SNMP, gNMI (Arista 6030, the gNMI default 9339 on NX-OS and others)
MGMT_TCP_PORTS = (22, 6030, 9339)
MGMT_UDP_PORTS = (161,)
# NX-OS: NX-API (HTTPS 443, HTTP 80) takes no access list of its own (Cisco's `nxapi` commands set
# ports, VRF, certificate and TLS only), so the ACL on mgmt0 guards its ports together with SSH (and
# SCP), gNMI (9339, and NX-OS's older gRPC port 50051) and SNMP: only the management prefixes reach them.
NXOS_MGMT0_TCP_PORTS = (22, 80, 443, 9339, 50051)


@dataclass(slots=True)
class Acl:
    protected: list[str]  # compute, storage and OOB prefixes: never reachable from the business plane
    api_prefixes: list[str]
    api_ports: list[int]
    host_ports: list[str]  # ports the host ACL is applied to, inbound
    edge_ports: list[str]  # ports the edge ACL is applied to, inbound
    business_hosts: str  # the business plane's host pool: what the edge may reach on the API ports


@dataclass(slots=True)
class BorderRouting:
    default_route: str  # from-edge | originate | none
    accept: list[str]  # prefixes accepted from the edge
    announce: list[str]  # prefixes (with le 32) announced to the edge
    # With `originate` the border announces 0/0 to the fabric and routes it itself to the edge routers
    # (a static default over its edge links), so northbound traffic has somewhere to go.
    default_next_hops: list[str]


def protected_prefixes(plan: Plan) -> list[str]:
    # every plane's pools but the business plane's own, the pools of the planes it carries included
    return [str(net) for path, net in address_pools(plan.intent) if path[1] != "business" or "carries" in path]


def business_acl(plan: Plan, device: Device, ports: list[Port]) -> Acl | None:
    business = plan.intent.planes.business
    if device.plane != "business" or business is None:
        return None
    border = business.border
    a = business.addressing
    return Acl(
        protected=protected_prefixes(plan),
        api_prefixes=[str(p) for p in border.api_prefixes] if border else [],
        api_ports=list(border.api_ports) if border else [],
        # a host port with neither an address nor a bond carries only tagged planes (`native: false`): no ACL
        host_ports=[p.name for p in ports if p.kind == "host" and (p.address or p.bond is not None)],
        edge_ports=[p.name for p in ports if p.kind == "edge"],
        business_hosts=str(a.hosts),
    )


def border_routing(plan: Plan, device: Device, neighbors: list[Neighbor]) -> BorderRouting | None:
    business = plan.intent.planes.business
    if device.role != "border" or business is None or business.border is None:
        return None
    mode = business.border.default_route
    a = business.addressing
    return BorderRouting(
        default_route=mode,
        accept=["0.0.0.0/0"] if mode == "from-edge" else [],
        announce=[str(n) for n in (a.loopbacks, a.hosts)],
        default_next_hops=[n.address for n in neighbors if n.kind == "edge" and n.address]
        if mode == "originate"
        else [],
    )
