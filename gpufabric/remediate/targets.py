"""Which servers an alert takes a path from, read from the plan (never from the alert's own words).

The alert's labels only name parts; the servers come from the plan:

- a switch port (`device`, `port`) cabled to a server's NIC: that server, and only it (the cable's
  other end, exactly as planned); the cable's label (the cabling plan's) names it in the drain's reason;
- a switch port between switches (a fabric, peer or edge link): nobody, the servers keep their other
  paths through the fabric's other links;
- a switch that does not answer (`GpufabricSwitchUnreachable`): the servers that depend on it alone
  (`gpufabric.scheduler.servers_behind`: its rail's servers behind a rail leaf, none behind a spine);
- a host's NIC (`host`, `interface`), a host's side of an optic (`device` naming a server) or a GPU
  (`node`, dcgm-exporter's Hostname): that server;
- an InfiniBand switch port (`node`, `port`, as `gpufabric ib metrics` labels it): the host of the adapter
  cabled there (a leaf's node port), nobody for a port between switches;
- a server's BMC reporting a failed part (`node`, as the exporter labels a BMC's series): that server;
- a part the slow-node screen found behind slow results (`part`, as `acceptance screen report` names it):
  the servers behind that part (none for a fabric cable or a spine).

Only the alerts of `ACTED` act: they say a part is failing. The others (congestion, ECN marks, a
narrower ECMP, a deep queue) say the fabric is busy, and draining a node would not help; they are
recorded and left to a person.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from gpufabric.acceptance.screen import SLOW_ALERT, parts_index
from gpufabric.export.cabling import cable_id, cable_labels
from gpufabric.plan.model import Plan
from gpufabric.scheduler import servers_behind

# The alerts of `gpufabric telemetry rules` that say a part is failing, and what kind of part.
ACTED: dict[str, str] = {
    "GpufabricSwitchUnreachable": "switch",
    "GpufabricLinkDown": "port",
    "GpufabricLinkFlapping": "port",
    "GpufabricOpticsRxPowerLow": "port",
    "GpufabricPreFecBerHigh": "port",
    "GpufabricFecUncorrectable": "port",
    "GpufabricSymbolErrors": "port",
    "GpufabricPfcWatchdogTripped": "port",
    "GpufabricNicLinkDown": "nic",
    "GpufabricNicLinkFlapping": "nic",
    "GpufabricNicPcieAerUncorrectable": "nic",
    "GpufabricGpuXidError": "gpu",
    "GpufabricGpuEccUncorrectable": "gpu",
    "GpufabricGpuNvlinkRecovery": "gpu",
    "GpufabricGpuRowRemapFailure": "gpu",
    "GpufabricIbSymbolErrors": "ib-port",
    "GpufabricIbLinkDowned": "ib-port",
    "GpufabricIbLinkErrorRecovery": "ib-port",
    "GpufabricIbReceiveErrors": "ib-port",
    "GpufabricBmcPsuFailed": "bmc",
    "GpufabricBmcFanFailed": "bmc",
    "GpufabricBmcTemperatureCritical": "bmc",
    "GpufabricBmcHealthCritical": "bmc",
    SLOW_ALERT: "slow",
}
# The label naming the failed part of a BMC alert, and the word for it in the part's name.
BMC_PARTS = (("psu", "psu"), ("fan", "fan"), ("sensor", "temperature"), ("system", "system"))
BMC_PART = re.compile(r"[A-Za-z0-9._:-]{1,64}")
GPU = re.compile(r"[0-9]{1,3}")


@dataclass(frozen=True, slots=True)
class Target:
    """What one alert is about, and the servers to take out for it (none: nothing to do)."""

    part: str  # the part, in the plan's names: "leaf:port", "server:interface", "server:gpuN", "switch"
    nodes: tuple[str, ...]
    why: str  # one line: how the plan got from the part to the nodes (or why to none)
    cable: str = ""  # the label of the cable the part is an end of, as the cabling plan writes it


@dataclass(frozen=True)
class _Index:
    servers: frozenset[str]
    switches: frozenset[str]
    host_ports: dict[tuple[str, str], str]  # (leaf, port) -> the server cabled there
    switch_ports: dict[tuple[str, str], str]  # (switch, port) -> the link's kind, for links between switches
    cables: dict[tuple[str, str], str]  # (switch or server, port) -> the cable's label
    ib_ports: dict[tuple[str, str], tuple[str, str, str]]  # (IB switch, port) -> (host or "", cable, tier)
    slow_parts: dict[str, tuple[str, ...]] = field(default_factory=dict)  # the screen's parts, read when asked


_INDEXES: dict[int, tuple[Plan, _Index]] = {}  # id(plan) -> the plan (kept alive) and its index


def _index(plan: Plan) -> _Index:
    kept = _INDEXES.get(id(plan))
    if kept is not None and kept[0] is plan:
        return kept[1]
    host_ports = {(nic.leaf, nic.leaf_port): s.name for s in plan.servers for nic in s.nics}
    switch_ports: dict[tuple[str, str], str] = {}
    for link in plan.links():
        if link.kind != "host":
            switch_ports[(link.a, link.a_port)] = link.kind
            switch_ports[(link.b, link.b_port)] = link.kind
    ib_ports: dict[tuple[str, str], tuple[str, str, str]] = {}
    if plan.infiniband is not None:
        fabric = plan.infiniband.fabric
        for number, cable in enumerate(fabric.cables, 1):
            label = cable_id("ib", number)
            for end, far in ((cable.up, cable.down), (cable.down, cable.up)):
                if fabric.by_name[end.node].kind != "switch":
                    continue
                peer = fabric.by_name[far.node]
                host = (peer.host or "") if peer.kind != "switch" else ""
                ib_ports[(end.node, str(end.port))] = (host, label, cable.tier)
    index = _Index(
        frozenset(s.name for s in plan.servers),
        frozenset(d.name for d in plan.devices()),
        host_ports,
        switch_ports,
        cable_labels(plan),
        ib_ports,
    )
    _INDEXES[id(plan)] = (plan, index)
    return index


def target_of(plan: Plan, labels: Mapping[str, str]) -> Target | None:
    """The part and servers of an alert the loop acts on; None for an alert it does not act on."""
    kind = ACTED.get(labels.get("alertname", ""))
    if kind is None:
        return None
    index = _index(plan)
    device, port = labels.get("device", ""), labels.get("port", "")
    if kind == "gpu":
        node = labels.get("node", "")
        if node not in index.servers:
            return Target(node or "?", (), "the GPU's node is not a server of the plan")
        gpu = labels.get("gpu", "")
        part = f"{node}:gpu{gpu}" if GPU.fullmatch(gpu) else node
        return Target(part, (node,), "a GPU of the server")
    if kind == "bmc":
        return _bmc(index, labels)
    if kind == "nic" or (kind == "port" and "host" in labels and not device):
        host, interface = labels.get("host", ""), labels.get("interface", "")
        if host not in index.servers:
            return Target(host or "?", (), "the NIC's host is not a server of the plan")
        known = any(n.interface == interface for s in plan.servers if s.name == host for n in s.nics)
        return Target(f"{host}:{interface}" if known else host, (host,), "a NIC of the server")
    if kind == "ib-port":
        return _ib_port(index, labels)
    if kind == "slow":
        part = labels.get("part", "")
        if not index.slow_parts:  # the screen's parts -> the servers behind each, as its report names them
            index.slow_parts.update((name, p.nodes) for name, p in parts_index(plan).items())
        if part not in index.slow_parts:
            return Target(part or "?", (), "not a part of the plan the screen names")
        nodes = index.slow_parts[part]
        why = (
            "the servers behind the part the screen found slow" if nodes else "a fabric part: servers keep other paths"
        )
        return Target(part.replace(" ", ":"), nodes, why)  # "gpu03 eth1": "gpu03:eth1", as a NIC alert's part
    if kind == "switch":
        if device not in index.switches:
            return Target(device or "?", (), "not a switch of the plan")
        behind = tuple(s.name for s in servers_behind(plan, device))
        return Target(device, behind, f"the servers that reach the fabric only through {device}")
    # A port: of a server (the host's side of an optic), or of a switch.
    cable = index.cables.get((device, port), "")
    if device in index.servers:
        return Target(f"{device}:{port}" if port else device, (device,), "a port of the server", cable)
    if device not in index.switches:
        return Target(device or "?", (), "not a switch or server of the plan")
    server = index.host_ports.get((device, port))
    if server is not None:
        return Target(f"{device}:{port}", (server,), f"the port is cabled to {server} (cable {cable})", cable)
    link = index.switch_ports.get((device, port))
    if link is not None:
        why = f"a {link} link between switches (cable {cable}): the servers keep their other paths"
        return Target(f"{device}:{port}", (), why, cable)
    return Target(f"{device}:{port}" if port else device, (), "no planned cable on this port")


def _bmc(index: _Index, labels: Mapping[str, str]) -> Target:
    """A BMC's alert: the server it is the BMC of (the alert's `node`, a server of the plan)."""
    node = labels.get("node", "")
    if node not in index.servers:
        return Target(node or "?", (), "the BMC's node is not a server of the plan")
    # The part, for the drain's reason: the label the alert names it by, when it is a plain id.
    for label, word in BMC_PARTS:
        value = labels.get(label, "")
        if value and BMC_PART.fullmatch(value):
            return Target(
                f"{node}:{word}{value}" if word != "system" else f"{node}:system",
                (node,),
                "the server's BMC reports a failed part",
            )
    return Target(node, (node,), "the server's BMC reports a failed part")


def _ib_port(index: _Index, labels: Mapping[str, str]) -> Target:
    """An InfiniBand switch port's alert: the host of the adapter cabled there, nobody between switches."""
    node, port = labels.get("node", ""), labels.get("port", "")
    found = index.ib_ports.get((node, port))
    if found is None:
        return Target(f"{node}:{port}" if node else "?", (), "not a planned InfiniBand switch port")
    host, cable, tier = found
    if not host:
        return Target(f"{node}:{port}", (), f"a {tier} cable between switches ({cable}): other paths remain", cable)
    if host not in index.servers:
        return Target(f"{node}:{port}", (), f"the adapter's host {host} is not a server of the plan", cable)
    return Target(f"{node}:{port}", (host,), f"the port is cabled to {host}'s adapter (cable {cable})", cable)
