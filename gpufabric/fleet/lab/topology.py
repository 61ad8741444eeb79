"""What the lab builds for a plan: namespaces, veth pairs, the management bridge. Pure data.

Every planned platform runs as `frr` in the lab (there is no EOS, NX-OS or Cumulus image
here), so the lab re-plans the intent with every switch on frr: the port names are then
Linux names (swpN) and the configs are the ones `render` writes for frr. The kernel has no
bonding or VLANs, so a plane with LACP hosts cannot be brought up and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpufabric.intent.errors import IntentError, Problem
from gpufabric.intent.loader import LoadedIntent
from gpufabric.intent.model import Intent
from gpufabric.intent.rules import address_pools
from gpufabric.plan import build_plan
from gpufabric.plan.model import Plan, ip

BRIDGE = "gf-oob"  # the OOB plane in the root namespace; one lab per machine
# Root-side ends of the management veths, named by the switch's management address (gfm ac140005 for
# 172.20.0.5): stable when the fabric grows, where a running number would shift onto another switch.
ROOT_MGMT_PREFIX = "gfm"


@dataclass(frozen=True, slots=True)
class Node:
    name: str  # the switch, and its namespace
    platform: str  # what the plan says it is; the lab runs every switch as frr (`lab status` says so)
    mgmt_ip: str | None  # "a.b.c.d/len" on eth0
    loopback: str | None


@dataclass(frozen=True, slots=True)
class Cable:
    a: str
    a_port: str
    b: str
    b_port: str
    mtu: int


@dataclass(frozen=True, slots=True)
class Stub:
    """A switch port cabled to something outside the lab (a server, the edge router): a veth whose
    other end stays in the switch's namespace, so the port is up with its planned MTU and address."""

    node: str
    port: str
    mtu: int
    server: str | None = None  # the planned server on the other end; `lab up` puts its container there

    @property
    def far_end(self) -> str:
        return f"p-{self.port}"[:15]


@dataclass(frozen=True, slots=True)
class MgmtAttachment:
    node: str
    root_end: str  # in the root namespace, enslaved to BRIDGE
    node_end: str  # in the node's namespace


@dataclass
class LabTopology:
    fabric: str
    plan: Plan
    nodes: list[Node] = field(default_factory=list)
    cables: list[Cable] = field(default_factory=list)
    stubs: list[Stub] = field(default_factory=list)
    mgmt: list[MgmtAttachment] = field(default_factory=list)
    gateway: str | None = None  # "a.b.c.d/len" on the bridge: the OOB gateway
    loopback_space: list[str] = field(default_factory=list)  # made unreachable in the root namespace


def as_frr(loaded: LoadedIntent) -> LoadedIntent:
    """The same intent with every switch role on frr, or a located error for what the lab cannot run."""
    data: dict[str, Any] = loaded.intent.model_dump(mode="json", exclude_none=True)
    problems = []
    for name, plane in data["planes"].items():
        for role in plane.get("switches", {}).values():
            role["platform"] = "frr"
        if plane.get("host_links") == "lacp":
            problems.append(
                Problem(
                    ("planes", name, "host_links"),
                    "the lab cannot bond host NICs (this kernel has no bonding or VLANs)",
                    "use host_links: routed for a lab run; LACP/MLAG is proven offline by `nornir verify`",
                )
            )
        if plane.get("carries"):
            problems.append(
                Problem(
                    ("planes", name, "carries"),
                    "the lab cannot run carried planes (this kernel has no VRF or 802.1Q devices)",
                    "leave carries out for a lab run; carried planes are proven offline (`verify`, the vendor models)",
                )
            )
    if problems:
        raise loaded.error(problems)
    return LoadedIntent(Intent.model_validate(data), loaded.file, loaded.lines)


def topology(loaded: LoadedIntent) -> LabTopology:
    planned = {d.name: d.platform for d in build_plan(loaded).devices()}
    plan = build_plan(as_frr(loaded))
    intent = plan.intent
    oob = intent.planes.oob
    if oob is None:
        raise IntentError(
            loaded.file, [Problem(("planes", "oob"), "the lab reaches switches over the OOB plane", "add planes.oob")]
        )
    topo = LabTopology(intent.fabric.name, plan)
    prefixlen = oob.subnet.prefixlen
    topo.gateway = f"{oob.gateway_address}/{prefixlen}"
    for i, d in enumerate(plan.devices()):
        topo.nodes.append(
            Node(
                d.name,
                planned[d.name],
                f"{ip(d.mgmt_ip)}/{prefixlen}" if d.mgmt_ip is not None else None,
                ip(d.loopback),
            )
        )
        root_end = f"{ROOT_MGMT_PREFIX}{d.mgmt_ip:08x}" if d.mgmt_ip is not None else f"{ROOT_MGMT_PREFIX}{i}"
        topo.mgmt.append(MgmtAttachment(d.name, root_end, d.mgmt_port))
    names = {n.name for n in topo.nodes}
    for link in plan.links():
        if link.kind == "fabric" and link.a in names and link.b in names:
            topo.cables.append(Cable(link.a, link.a_port, link.b, link.b_port, link.mtu))
        elif link.kind in ("host", "edge") and (link.a in names) != (link.b in names):
            node, port, other = (link.a, link.a_port, link.b) if link.a in names else (link.b, link.b_port, link.a)
            topo.stubs.append(Stub(node, port, link.mtu, other if link.kind == "host" else None))
    topo.loopback_space = [str(net) for path, net in address_pools(intent) if path[-1] == "loopbacks"]
    return topo
