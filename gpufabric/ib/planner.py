"""Plan a rail-optimized InfiniBand fat tree, deterministically, from an `IbDesign`.

Leaves: one per rail per SU, sized for a full SU (NVIDIA's rule, even where a node slot
holds the fabric manager); adapter rail r of every node in SU s on leaf (s, r), node slot n
on port n. Uplinks carry what the downlinks carry (non-blocking).

Two tiers: every leaf cables to every spine, the same number of cables to each (so the
spine count is the smallest that divides a leaf's uplinks and has the ports for all
leaves). This is the DGX SuperPOD layout where traffic between rails crosses the spines.

Three tiers: spine groups per rail (and per block of SUs when a rail has more leaves than a
spine has downlinks), every leaf of the block on every spine of its group; core groups per
spine position, every spine at position k on every core of core group k.
"""

from __future__ import annotations

from math import ceil

from gpufabric.ib.design import IbDesign
from gpufabric.ib.errors import IbError, Problem, fail
from gpufabric.ib.hardware import Rate, SwitchModel, rate, switch_model
from gpufabric.ib.model import IbCable, IbFabric, IbNode, PortRef, Role, SmPlacement
from gpufabric.ib.names import MAX_LIDS, NODE, NODE_DESCRIPTION_BYTES


def plan_fabric(design: IbDesign) -> IbFabric:
    _check(design)
    model = switch_model(design.switch_model)
    hca = rate(design.hca_rate, "design.hca_rate")
    leaf_down, leaf_up, leaf_ports = _leaf_radix(design, model, hca)
    nodes: list[IbNode] = []
    cables: list[IbCable] = []
    leaves = _leaves(design, model, leaf_ports)
    nodes += leaves.values()
    nodes += _adapters(design, leaves, hca, cables)
    leaf_list = list(leaves.values())
    tiers = design.tiers or (2 if _two_tier_spines(len(leaf_list), leaf_up, model.ports) else 3)
    if tiers == 2:
        nodes += _two_tiers(leaf_list, leaf_down, leaf_up, model, cables)
    else:
        nodes += _three_tiers(design, leaves, leaf_down, leaf_up, model=model, cables=cables)
    _check_names(design, nodes)
    fabric = IbFabric(design, tiers, tuple(nodes), tuple(cables), _sm(design, nodes))
    _check_ports(fabric)
    return fabric


def _check(design: IbDesign) -> None:
    problems = []
    if design.su_count < 1:
        problems.append(Problem("design.su_count", f"{design.su_count} scalable units", "use 1 or more"))
    if design.nodes_per_su < 1 or design.rails < 1:
        problems.append(Problem("design", "no node slots or no rails", "give nodes_per_su and rails of 1 or more"))
    if design.fabric_manager_ports > design.rails:
        problems.append(
            Problem(
                "design.fabric_manager_ports",
                f"{design.fabric_manager_ports} fabric-manager ports in one node slot of {design.rails} rails",
                f"use at most {design.rails}",
            )
        )
    if design.hca_names and len(design.hca_names) != design.rails:
        problems.append(
            Problem("design.hca_names", f"{len(design.hca_names)} names", f"give one per rail ({design.rails})")
        )
    if design.hosts and len(design.hosts) > design.node_slots - design.slots_for_fabric_manager:
        problems.append(
            Problem(
                "design.su_count",
                f"{len(design.hosts)} hosts in {design.su_count} SUs of {design.nodes_per_su} node slots",
                "plan more SUs",
            )
        )
    if design.tiers not in (None, 2, 3):
        problems.append(Problem("design.tiers", f"{design.tiers} tiers", "use 2 or 3"))
    if not problems:
        problems += _lids(design)
    if problems:
        raise IbError(problems)


def lids_needed(design: IbDesign) -> int:
    """LIDs the design takes at the least, known before anything is built: one per adapter port and
    one per leaf (spines and cores come on top)."""
    adapters = max(0, design.node_count) * design.rails + design.fabric_manager_ports
    return adapters + design.su_count * design.rails


def _lids(design: IbDesign) -> list[Problem]:
    """One subnet has MAX_LIDS unicast LIDs. Checked on the design's numbers alone, so a design of
    millions of adapters is refused at once instead of built first (which takes minutes and gigabytes)."""
    needed = lids_needed(design)
    if needed <= MAX_LIDS:
        return []
    per_su = design.nodes_per_su * design.rails + design.rails
    return [
        Problem(
            "design.su_count",
            f"{design.su_count:,} SUs of {design.nodes_per_su} nodes and {design.rails} rails need at least "
            f"{needed:,} LIDs (adapter ports and leaves); one InfiniBand subnet has {MAX_LIDS:,}",
            f"plan at most {max(1, (MAX_LIDS - design.fabric_manager_ports) // per_su):,} SUs of this size, "
            "or one subnet per part of the cluster",
        )
    ]


def _leaf_radix(design: IbDesign, model: SwitchModel, hca: Rate) -> tuple[int, int, int]:
    """Leaf downlinks, uplinks (full-rate ports), and the ports the leaf reports."""
    if hca.speed != model.speed or hca.width > 4:
        raise fail(
            "design.hca_rate",
            f"{design.hca_rate} adapters on {model.name} ({model.speed}) leaves",
            f"use {model.speed} or its split rate with {model.name}",
        )
    down = design.nodes_per_su
    per_cage = 4 // hca.width  # adapters per four-lane port: 2 on split ports
    down_cages = ceil(down / per_cage)
    up = ceil(down * hca.width / 4)  # non-blocking: as many lanes up as down
    if down_cages + up > model.ports:
        raise fail(
            "design.switch_model",
            f"a leaf needs {down} {design.hca_rate} downlinks ({down_cages} ports) and {up} uplinks, "
            f"{down_cages + up} ports; {model.name} has {model.ports}",
            f"use at most {model.ports // 2 * per_cage} nodes per SU with {model.name}, or a switch with more ports",
        )
    return down, up, model.split_ports if per_cage > 1 else model.ports


def _leaves(design: IbDesign, model: SwitchModel, ports: int) -> dict[tuple[int, int], IbNode]:
    return {
        (su, r): IbNode(f"su{su}-leaf{r}", "switch", "leaf", ports, model.name, su=su, rail=r)
        for su in range(1, design.su_count + 1)
        for r in range(1, design.rails + 1)
    }


def _adapters(
    design: IbDesign, leaves: dict[tuple[int, int], IbNode], hca: Rate, cables: list[IbCable]
) -> list[IbNode]:
    out = []
    last_slot = (design.su_count, design.nodes_per_su)
    index = 0
    for su in range(1, design.su_count + 1):
        for slot in range(1, design.nodes_per_su + 1):
            if design.fabric_manager_ports and (su, slot) == last_slot:
                continue
            index += 1
            if design.hosts and index > len(design.hosts):
                continue
            host = design.hosts[index - 1] if design.hosts else design.node_name.format(index=index, su=su, slot=slot)
            for r in range(1, design.rails + 1):
                out.append(_adapter(f"{host} {design.hca_name(r)}", "compute", host, su=su, r=r, hca=hca))
                cables.append(IbCable(PortRef(out[-1].name, 1), PortRef(leaves[su, r].name, slot), hca, "node-leaf"))
    for i in range(design.fabric_manager_ports):
        r = i + 1
        host = f"ufm{i // design.fabric_manager_ports_per_host + 1}"
        name = f"{host} mlx5_{i % design.fabric_manager_ports_per_host}"
        out.append(_adapter(name, "fabric-manager", host, su=last_slot[0], r=r, hca=hca))
        cables.append(IbCable(PortRef(name, 1), PortRef(leaves[last_slot[0], r].name, last_slot[1]), hca, "node-leaf"))
    return out


def _adapter(name: str, role: Role, host: str, *, su: int, r: int, hca: Rate) -> IbNode:
    model = "ConnectX-7" if hca.speed == "NDR" else "ConnectX-6"
    return IbNode(name, "ca", role, 1, model, su=su, rail=r, host=host)


def _divisor_at_least(n: int, minimum: int) -> int | None:
    return next((d for d in range(max(1, minimum), n + 1) if n % d == 0), None)


def _two_tier_spines(leaves: int, up: int, spine_ports: int) -> int | None:
    """Spines for a two-tier fabric: divides a leaf's uplinks, with ports for every leaf's share."""
    return _divisor_at_least(up, ceil(leaves * up / spine_ports))


def _two_tiers(leaves: list[IbNode], down: int, up: int, model: SwitchModel, cables: list[IbCable]) -> list[IbNode]:
    count = _two_tier_spines(len(leaves), up, model.ports)
    if count is None or len(leaves) * up > count * model.ports:
        raise fail(
            "design.tiers",
            f"{len(leaves)} leaves with {up} uplinks each do not fit two tiers of {model.name}",
            "use 3 tiers (leave tiers unset) or fewer SUs",
        )
    spines = [IbNode(f"spine{i:02d}", "switch", "spine", model.ports, model.name) for i in range(1, count + 1)]
    _leaf_spine_cables(leaves, spines, down, up, rate=model.rate, cables=cables)
    return spines


def _leaf_spine_cables(
    leaves: list[IbNode], spines: list[IbNode], down: int, up: int, *, rate: Rate, cables: list[IbCable]
) -> None:
    """Each leaf's `up` uplinks (the ports after its `down` node ports) round-robin over `spines`; a spine's
    ports go to the leaves in order, `up // len(spines)` to each."""
    per_pair = up // len(spines)
    for li, leaf in enumerate(leaves):
        for k in range(up):
            spine_port = li * per_pair + k // len(spines) + 1
            spine = spines[k % len(spines)]
            cables.append(
                IbCable(PortRef(leaf.name, down + k + 1), PortRef(spine.name, spine_port), rate, "leaf-spine")
            )


def _three_tiers(
    design: IbDesign,
    leaves: dict[tuple[int, int], IbNode],
    down: int,
    up: int,
    *,
    model: SwitchModel,
    cables: list[IbCable],
) -> list[IbNode]:
    spine_down = model.ports // 2
    spine_up = model.ports - spine_down
    block = _divisor_at_least(spine_down, min(design.su_count, spine_down)) or spine_down
    group_spines = ceil(block * up / spine_down)
    if up % group_spines or spine_down % block:
        raise fail("design", f"{up} leaf uplinks do not spread over {group_spines} spines", "use 32 nodes per SU")
    blocks = ceil(design.su_count / block)
    groups = design.rails * blocks
    group_cores = _divisor_at_least(spine_up, ceil(groups * spine_up / model.ports))
    if group_cores is None:
        raise fail("design.su_count", f"{design.su_count} SUs need more than three tiers", "use fewer SUs")
    per_core_pair = spine_up // group_cores
    nodes: list[IbNode] = []
    cores = [
        [
            IbNode(f"core{k * group_cores + c + 1:03d}", "switch", "core", model.ports, model.name, group=k + 1)
            for c in range(group_cores)
        ]
        for k in range(group_spines)
    ]
    for g in range(groups):
        rail, blk = g % design.rails + 1, g // design.rails
        spines = [
            IbNode(f"spine{g * group_spines + i + 1:03d}", "switch", "spine", model.ports, model.name, group=g + 1)
            for i in range(group_spines)
        ]
        nodes += spines
        members = [leaves[su, rail] for su in range(blk * block + 1, min(design.su_count, (blk + 1) * block) + 1)]
        _leaf_spine_cables(members, spines, down, up, rate=model.rate, cables=cables)
        for k, spine in enumerate(spines):
            for j in range(spine_up):
                core = cores[k][j % group_cores]
                port = g * per_core_pair + j // group_cores + 1
                cables.append(
                    IbCable(PortRef(spine.name, spine_down + j + 1), PortRef(core.name, port), model.rate, "spine-core")
                )
    return nodes + [c for group in cores for c in group]


def _sm(design: IbDesign, nodes: list[IbNode]) -> SmPlacement:
    """The subnet manager on the fabric manager's first two hosts, else on the first two compute hosts."""
    fm = [n for n in nodes if n.role == "fabric-manager"]
    pool = fm or [n for n in nodes if n.role == "compute"]
    hosts = list(dict.fromkeys(n.host for n in pool))
    first = [next(n.name for n in pool if n.host == h) for h in hosts[:2]]
    return SmPlacement(first[0], first[1] if len(first) > 1 else None)


def _check_names(design: IbDesign, nodes: list[IbNode]) -> None:
    """Every node description made once and fit to be one (the files and the tools name nodes by it)."""
    seen: set[str] = set()
    for node in nodes:
        if node.name in seen:
            raise fail(
                "design.hosts" if design.hosts else "design.node_name",
                f"two nodes are named {node.name!r}",
                "give hosts, adapters and the name pattern distinct names ({index}, or {su} and {slot} apart)",
            )
        if not NODE.match(node.name) or len(node.name.encode()) > NODE_DESCRIPTION_BYTES:
            raise fail(
                "design.hosts" if node.kind == "ca" else "design",
                f"{node.name!r} cannot be a node description",
                f"name hosts with lower-case letters, digits and '-', so that '<host> <adapter>' fits "
                f"{NODE_DESCRIPTION_BYTES} bytes",
            )
        seen.add(node.name)


def _check_ports(fabric: IbFabric) -> None:
    """Every cable end on a real port of its node, and no port cabled twice: the plan's own invariant."""
    seen: set[PortRef] = set()
    for cable in fabric.cables:
        for end in (cable.down, cable.up):
            node = fabric.by_name[end.node]
            if not 1 <= end.port <= node.ports or end in seen:
                raise AssertionError(f"planner bug: {end} out of range or cabled twice")
            seen.add(end)
