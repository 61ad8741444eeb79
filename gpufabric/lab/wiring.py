"""Bring a lab topology's namespaces, cables and management plane up, and take them down.

Each step records what it made in the state file before the next starts, so a crash
leaves a state that `down` can clean. Nothing is removed that the state does not name.
"""

from __future__ import annotations

from pathlib import Path

from gpufabric.fleet.lab.names import LabNames
from gpufabric.fleet.lab.state import LabState
from gpufabric.fleet.lab.topology import LabTopology
from gpufabric.lab import netlink


def up(topo: LabTopology, state_dir: Path, *, hosts: bool = False) -> LabState:
    """With `hosts`, server-facing ports are left for the host containers' NICs instead of stubs."""
    state = LabState.load(state_dir) or LabState(topo.fabric, name=topo.names.name)
    source = Path(topo.plan.source)
    if source.is_file():  # not the fabric shipped with gpufabric, which has no file of its own
        state.intent = str(source.resolve())
    if state.fabric != topo.fabric or state.name != topo.names.name:
        raise netlink.LabCommandError(
            f"lab {state.name} of fabric '{state.fabric}' is up (state in {state_dir}); run "
            f"`gpufabric lab down --name {state.name}` first"
        )
    existing = netlink.namespaces()
    foreign = [n.netns for n in topo.nodes if n.netns in existing and n.netns not in state.namespaces]
    if foreign:
        raise netlink.LabCommandError(
            f"network namespace {foreign[0]} exists but this lab did not make it; remove it or rename the switch"
        )
    for node in topo.nodes:
        if node.netns not in existing:
            netlink.run("ip", "netns", "add", node.netns)
            state.namespaces.append(node.netns)
            state.save(state_dir)
    for node in topo.nodes:
        # The loopback address is configuration: the push puts it on, as on a real switch.
        netlink.batch(["link set lo up"], node.netns)
        netlink.run("ip", "netns", "exec", node.netns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    _cables(topo, hosts=hosts)
    _management(topo, state)
    state.save(state_dir)
    return state


def _cables(topo: LabTopology, *, hosts: bool) -> None:
    # One listing per namespace, not one `ip` process per cable: a re-run `up` checks every cable.
    ns = topo.ns
    present = {ns(a): netlink.links(ns(a)) for a in {c.a for c in topo.cables}}
    cmds = []
    ups: dict[str, list[str]] = {}
    for c in topo.cables:
        a, b = ns(c.a), ns(c.b)
        if c.a_port not in present[a]:
            cmds.append(
                f"link add {c.a_port} netns {a} mtu {c.mtu} type veth peer name {c.b_port} netns {b} mtu {c.mtu}"
            )
        ups.setdefault(a, []).append(f"link set {c.a_port} up")
        ups.setdefault(b, []).append(f"link set {c.b_port} up")
    for stub in topo.stubs:
        if hosts and stub.server:
            continue
        node = ns(stub.node)
        present.setdefault(node, netlink.links(node))
        if stub.port not in present[node]:
            cmds.append(
                f"link add {stub.port} netns {node} mtu {stub.mtu} type veth "
                f"peer name {stub.far_end} netns {node} mtu {stub.mtu}"
            )
        ups.setdefault(node, []).extend([f"link set {stub.far_end} up", f"link set {stub.port} up"])
    netlink.batch(cmds)
    for netns, commands in ups.items():
        netlink.batch(commands, netns)


def _management(topo: LabTopology, state: LabState) -> None:
    have = netlink.links()
    bridge = topo.bridge
    if bridge not in have:
        netlink.batch([f"link add {bridge} type bridge", f"link set {bridge} up"])
    if bridge not in state.root_links:
        state.root_links.append(bridge)
    if topo.gateway:
        netlink.run("ip", "address", "replace", topo.gateway, "dev", bridge)
    cmds = []
    for m in topo.mgmt:
        if m.root_end not in have:
            cmds.append(f"link add {m.root_end} type veth peer name {m.node_end} netns {topo.ns(m.node)}")
        cmds += [f"link set {m.root_end} master {bridge}", f"link set {m.root_end} up"]
        if m.root_end not in state.root_links:
            state.root_links.append(m.root_end)
    netlink.batch(cmds)
    for node in topo.nodes:
        attach = next(m for m in topo.mgmt if m.node == node.name)
        node_cmds = [f"link set {attach.node_end} up"]
        if node.mgmt_ip:
            node_cmds.append(f"address replace {node.mgmt_ip} dev {attach.node_end}")
        netlink.batch(node_cmds, node.netns)
    # Lab loopbacks must never be routed out of the machine from the root namespace.
    for prefix in topo.loopback_space:
        netlink.run("ip", "route", "replace", "unreachable", prefix)
        if prefix not in state.routes:
            state.routes.append(prefix)


def down(state: LabState, keep_routes: frozenset[str] = frozenset()) -> None:
    """Remove the links, routes and namespaces the state names (namespaces take their veth ends with them).
    `keep_routes`: prefixes another lab that is up made unreachable too; their routes stay for it."""
    for prefix in state.routes:
        if prefix not in keep_routes:
            netlink.run("ip", "route", "del", "unreachable", prefix, check=False)
    have = netlink.links()
    bridge = LabNames(state.name).bridge
    for name in state.root_links:  # one at a time: a batch stops at the first link already gone
        if name in have and name != bridge:
            netlink.delete_link(name)
    if bridge in state.root_links and bridge in have:
        netlink.run("ip", "link", "del", bridge, check=False)
    existing = netlink.namespaces()
    for ns in state.namespaces:
        if ns in existing:
            netlink.delete_namespace(ns)
