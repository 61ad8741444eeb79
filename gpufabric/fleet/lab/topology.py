"""What the lab builds for a plan: namespaces, veth pairs, the management bridge. Pure data.

Every planned platform runs as `frr` in the lab (there is no EOS, NX-OS or Cumulus image
here), so the lab re-plans the intent with every switch on frr: the port names are then
Linux names (swpN) and the configs are the ones `render` writes for frr. The kernel has no
bonding or VLANs, so a plane with LACP hosts cannot be brought up and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpufabric.fleet.lab.names import DEFAULT_BRIDGE, DEFAULT_LAB, DEFAULT_MGMT_PREFIX, LabNames
from gpufabric.intent.errors import IntentError, Problem
from gpufabric.intent.loader import LoadedIntent
from gpufabric.intent.model import Intent
from gpufabric.intent.rules import address_pools
from gpufabric.plan import build_plan
from gpufabric.plan.model import Plan, ip

# The default lab's OOB bridge in the root namespace; another lab's is named by LabNames (names.py).
BRIDGE = DEFAULT_BRIDGE
# Root-side ends of the default lab's management veths, named by the switch's management address (gfm ac140005
# for 172.20.0.5): stable when the fabric grows, where a running number would shift onto another switch.
ROOT_MGMT_PREFIX = DEFAULT_MGMT_PREFIX


@dataclass(frozen=True, slots=True)
class Node:
    name: str  # the switch, and its namespace
    platform: str  # what the plan says it is; the lab runs every switch as frr (`lab status` says so)
    mgmt_ip: str | None  # "a.b.c.d/len" on eth0
    loopback: str | None
    ns: str = ""  # its network namespace and FRR pathspace: the lab's name for it (LabNames.netns)

    @property
    def netns(self) -> str:
        return self.ns or self.name


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
    names: LabNames = field(default_factory=LabNames)  # what this lab's things are called on the machine
    oob_subnet: str | None = None  # held in the root namespace (the gateway on the bridge): one lab's at a time

    @property
    def bridge(self) -> str:
        return self.names.bridge

    def ns(self, switch: str) -> str:
        """The switch's network namespace (and FRR pathspace) in this lab."""
        return self.names.netns(switch)


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


def topology(loaded: LoadedIntent, lab: str = DEFAULT_LAB) -> LabTopology:
    planned = {d.name: d.platform for d in build_plan(loaded).devices()}
    plan = build_plan(as_frr(loaded))
    intent = plan.intent
    oob = intent.planes.oob
    if oob is None:
        raise IntentError(
            loaded.file, [Problem(("planes", "oob"), "the lab reaches switches over the OOB plane", "add planes.oob")]
        )
    names = LabNames(lab)
    topo = LabTopology(intent.fabric.name, plan, names=names, oob_subnet=str(oob.subnet))
    prefixlen = oob.subnet.prefixlen
    topo.gateway = f"{oob.gateway_address}/{prefixlen}"
    for i, d in enumerate(plan.devices()):
        topo.nodes.append(
            Node(
                d.name,
                planned[d.name],
                f"{ip(d.mgmt_ip)}/{prefixlen}" if d.mgmt_ip is not None else None,
                ip(d.loopback),
                names.netns(d.name),
            )
        )
        topo.mgmt.append(MgmtAttachment(d.name, names.mgmt_root_end(d.mgmt_ip, i), d.mgmt_port))
    switches = {n.name for n in topo.nodes}
    for link in plan.links():
        if link.kind == "fabric" and link.a in switches and link.b in switches:
            topo.cables.append(Cable(link.a, link.a_port, link.b, link.b_port, link.mtu))
        elif link.kind in ("host", "edge") and (link.a in switches) != (link.b in switches):
            node, port, other = (link.a, link.a_port, link.b) if link.a in switches else (link.b, link.b_port, link.a)
            topo.stubs.append(Stub(node, port, link.mtu, other if link.kind == "host" else None))
    topo.loopback_space = [str(net) for path, net in address_pools(intent) if path[-1] == "loopbacks"]
    return topo
