"""Slurm topologies from the plan: the switch tree of the compute plane (else the first data plane),
and the NVLink domains as blocks.

In a rail-optimized fabric every node of a scalable unit sits on the same set of
rail leaves, so the SU is the leaf-level "switch" Slurm should keep jobs inside:
any two nodes of one SU talk on every rail in a single hop. In a Clos plane the
unit (rack) is its leaf or leaf pair.

Three files, for three generations of Slurm:
- topology.conf, tree form (`render`): every release; TopologyPlugin=topology/tree.
- topology.conf, block form (`render_block`): Slurm 23.11 and later; TopologyPlugin=topology/block.
  A block is one NVLink domain (`server_groups[].nvlink_domain`).
- topology.yaml (`render_yaml`): Slurm 25.05 and later; both topologies in one file, the tree
  the cluster default, the blocks for partitions that name them (`Topology=nvlink`).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufabric.export.header import comment_text
from gpufabric.export.hostlist import compress
from gpufabric.export.yaml_out import dump_yaml
from gpufabric.plan.infiniband import IbPlan
from gpufabric.plan.model import Plan, PlanePlan


@dataclass(frozen=True)
class Switch:
    """One switch of Slurm's tree: its children are nodes (leaf level) or switches."""

    name: str
    nodes: tuple[str, ...] = ()
    switches: tuple[str, ...] = ()


def _plane(plan: Plan) -> PlanePlan | None:
    for name in ("compute", "storage", "business"):
        if name in plan.planes:
            return plan.planes[name]
    return None


def unit_word(plane: PlanePlan) -> str:
    return "su" if plane.topology == "rail-optimized" else "unit"


def ib_tree(ib: IbPlan) -> list[Switch]:
    """An InfiniBand compute fabric's tree: a scalable unit per leaf-level switch (its nodes sit on every rail
    leaf of the unit), then the spine groups' blocks of units (three tiers), the top tier last."""
    fabric = ib.fabric
    nodes_by_su: dict[int, list[str]] = {}
    for n in fabric.role("compute"):
        if n.host is not None and n.su is not None and n.rail == 1:
            nodes_by_su.setdefault(n.su, []).append(n.host)
    out = [Switch(f"ib-su{su}", nodes=tuple(hosts)) for su, hosts in nodes_by_su.items()]
    units = tuple(s.name for s in out)
    if fabric.tiers == 2:
        return [*out, Switch("ib-spines", switches=units)]
    # Three tiers: units whose rail-1 leaves share their spines form one block under the cores.
    spines_of: dict[str, set[str]] = {}
    for c in fabric.cables:
        if c.tier == "leaf-spine":
            spines_of.setdefault(c.down.node, set()).add(c.up.node)
    blocks: dict[frozenset[str], list[str]] = {}
    for su in nodes_by_su:
        blocks.setdefault(frozenset(spines_of.get(f"su{su}-leaf1", ())), []).append(f"ib-su{su}")
    block_switches = [Switch(f"ib-block{i}", switches=tuple(m)) for i, m in enumerate(blocks.values(), 1)]
    return [*out, *block_switches, Switch("ib-cores", switches=tuple(b.name for b in block_switches))]


def tree(plan: Plan) -> list[Switch]:
    """The tree, leaf-level switches first, the root last (empty without a data plane)."""
    if plan.infiniband is not None:
        return ib_tree(plan.infiniband)
    plane = _plane(plan)
    if plane is None:
        return []
    nodes_by_unit: dict[int, list[str]] = {}
    for s in plan.servers:
        unit = s.units.get(plane.name)
        if unit is not None:
            nodes_by_unit.setdefault(unit, []).append(s.name)
    pod_of_unit = {d.unit: d.pod for d in plane.devices if d.role == "leaf" and d.unit is not None}
    unit_switch = {u: f"{plane.prefix}-{unit_word(plane)}{u}" for u in nodes_by_unit}
    out = [Switch(unit_switch[u], nodes=tuple(nodes)) for u, nodes in nodes_by_unit.items()]
    if plane.tiers == 3:
        pods: dict[int, list[str]] = {}
        for unit, name in unit_switch.items():
            pods.setdefault(pod_of_unit.get(unit) or 1, []).append(name)
        pod_switches = [Switch(f"{plane.prefix}-pod{pod}", switches=tuple(units)) for pod, units in pods.items()]
        out += pod_switches
        out.append(Switch(f"{plane.prefix}-superspines", switches=tuple(p.name for p in pod_switches)))
    else:
        out.append(Switch(f"{plane.prefix}-spines", switches=tuple(unit_switch.values())))
    return out


def blocks(plan: Plan) -> dict[str, list[str]]:
    """NVLink domain name -> its nodes: consecutive servers of a group, `nvlink_domain` at a time."""
    out: dict[str, list[str]] = {}
    for group in plan.intent.server_groups:
        if group.nvlink_domain is None:
            continue
        members = sorted((s for s in plan.servers if s.group == group.name), key=lambda s: s.index)
        for start in range(0, len(members), group.nvlink_domain):
            chunk = members[start : start + group.nvlink_domain]
            out[f"{group.name}-nvl{start // group.nvlink_domain + 1}"] = [s.name for s in chunk]
    return out


def _block_size(plan: Plan) -> int | None:
    """The NVLink domain size, when every group that has domains has the same one."""
    sizes = {g.nvlink_domain for g in plan.intent.server_groups if g.nvlink_domain is not None}
    return sizes.pop() if len(sizes) == 1 else None


def _header(plan: Plan, what: str, command: str) -> list[str]:
    return [
        f"# Slurm {what} for {plan.intent.fabric.name}, generated by gpufabric from {comment_text(plan.source)}.",
        f"# Do not edit: regenerate with   gpufabric export {command}",
    ]


def render(plan: Plan) -> str:
    plane, source = _plane(plan), comment_text(plan.source)
    lines = [
        f"# Slurm topology.conf for {plan.intent.fabric.name}, generated by gpufabric from {source}.",
        "# TopologyPlugin=topology/tree in slurm.conf. Do not edit: regenerate with",
        "#   gpufabric export slurm -o topology.conf",
    ]
    if plan.infiniband is not None:
        lines.append(
            f"# Plane: compute (InfiniBand, {plan.infiniband.fabric.tiers} tiers); "
            "leaf-level switches are scalable units."
        )
    elif plane is None:
        lines.append("# No data plane: nothing to describe.")
        return "\n".join(lines) + "\n"
    else:
        lines.append(
            f"# Plane: {plane.name} ({plane.topology}, {plane.tiers} tiers); "
            f"leaf-level switches are {'scalable units' if unit_word(plane) == 'su' else 'racks'}."
        )
    for sw in tree(plan):
        children = f"Nodes={compress(list(sw.nodes))}" if sw.nodes else f"Switches={compress(list(sw.switches))}"
        lines.append(f"SwitchName={sw.name} {children}")
    return "\n".join(lines) + "\n"


def render_block(plan: Plan) -> str:
    lines = _header(plan, "topology.conf (block form, Slurm 23.11+)", "slurm-block -o topology.conf")
    lines.insert(1, "# TopologyPlugin=topology/block in slurm.conf. One block per NVLink domain.")
    found = blocks(plan)
    if not found:
        lines.append("# No server group has `nvlink_domain`: no blocks to describe.")
        return "\n".join(lines) + "\n"
    for name, nodes in found.items():
        lines.append(f"BlockName={name} Nodes={compress(nodes)}")
    size = _block_size(plan)
    if size is not None:
        lines.append(f"BlockSizes={size}")
    return "\n".join(lines) + "\n"


def render_yaml(plan: Plan) -> str:
    header = _header(plan, "topology.yaml (Slurm 25.05+)", "slurm-yaml -o topology.yaml")
    header.append("# `fabric` (the switch tree) is the cluster default; `nvlink` holds the NVLink domains.")
    topologies: list[dict[str, object]] = []
    switches = tree(plan)
    if switches:
        entries: list[dict[str, object]] = []
        for sw in switches:
            entry: dict[str, object] = {"switch": sw.name}
            if sw.nodes:
                entry["nodes"] = compress(list(sw.nodes))
            else:
                entry["children"] = compress(list(sw.switches))
            entries.append(entry)
        topologies.append({"topology": "fabric", "cluster_default": True, "tree": {"switches": entries}})
    found = blocks(plan)
    if found:
        block: dict[str, object] = {"blocks": [{"block": n, "nodes": compress(m)} for n, m in found.items()]}
        size = _block_size(plan)
        if size is not None:
            block = {"block_sizes": [size], **block}
        topologies.append({"topology": "nvlink", "cluster_default": not switches, "block": block})
    if not topologies:
        topologies.append({"topology": "flat", "cluster_default": True, "flat": True})
    return "\n".join(header) + "\n" + dump_yaml(topologies)
