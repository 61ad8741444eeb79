"""The InfiniBand planner against NVIDIA's published DGX SuperPOD compute-fabric tables.

Sources (named in docs/infiniband.md): the DGX SuperPOD reference architecture with DGX H100
systems, "Network Fabrics", Table 4 (1-4 SU, one node slot given to UFM), and the one with
DGX B200 systems, "DGX SuperPOD Architecture", its larger-configuration table (2-64 SU, a
core tier from 16 SU). The numbers below are typed from those tables, not from the planner.
"""

from __future__ import annotations

from collections import Counter

import pytest

from gpufabric.ib.design import PUBLISHED, IbDesign, superpod
from gpufabric.ib.errors import IbError
from gpufabric.ib.planner import plan_fabric

# (system, SU) -> nodes, leaf, spine, core, node-leaf, leaf-spine, spine-core cables
TABLES = {
    ("dgx-h100", 1): (31, 8, 4, 0, 252, 256, 0),
    ("dgx-h100", 2): (63, 16, 8, 0, 508, 512, 0),
    ("dgx-h100", 3): (95, 24, 16, 0, 764, 768, 0),
    ("dgx-h100", 4): (127, 32, 16, 0, 1020, 1024, 0),
    ("dgx-b200", 2): (64, 16, 8, 0, 512, 512, 0),
    ("dgx-b200", 4): (128, 32, 16, 0, 1024, 1024, 0),
    ("dgx-b200", 8): (256, 64, 32, 0, 2048, 2048, 0),
    ("dgx-b200", 16): (512, 128, 128, 64, 4096, 4096, 4096),
    ("dgx-b200", 32): (1024, 256, 256, 128, 8192, 8192, 8192),
    ("dgx-b200", 64): (2048, 512, 512, 256, 16384, 16384, 16384),
}
SLOW = {("dgx-b200", 64)}  # 18k adapters: half a second to plan
KEYS = ("nodes", "leaf", "spine", "core", "node_leaf_cables", "leaf_spine_cables", "spine_core_cables")


def _cases() -> list:
    marks = {key: [pytest.mark.slow] if key in SLOW else [] for key in TABLES}
    return [pytest.param(*key, row, marks=marks[key], id=f"{key[0]}-{key[1]}su") for key, row in TABLES.items()]


@pytest.mark.parametrize(("system", "su", "row"), _cases())
def test_superpod_counts_match_nvidia_tables(system: str, su: int, row: tuple[int, ...]) -> None:
    fabric = plan_fabric(superpod(system, su))
    assert fabric.counts() == dict(zip(KEYS, row, strict=True))
    assert fabric.tiers == (3 if row[3] else 2)
    # The typed table and the one the module carries agree (the module's is what docs quote).
    ref = PUBLISHED[system][su]
    assert (ref.nodes, ref.leaf, ref.spine, ref.core) == row[:4]


def test_h100_4su_is_the_48_switch_127_node_fabric() -> None:
    fabric = plan_fabric(superpod("dgx-h100", 4))
    assert len(fabric.switches) == 48
    assert len(fabric.hosts) == 127
    assert len(fabric.role("compute")) == 127 * 8
    assert {n.name for n in fabric.role("fabric-manager")} == {
        "ufm1 mlx5_0",
        "ufm1 mlx5_1",
        "ufm2 mlx5_0",
        "ufm2 mlx5_1",
    }


def test_rail_optimized_every_adapter_on_its_rail_leaf_in_its_su() -> None:
    fabric = plan_fabric(superpod("dgx-h100", 2))
    for cable in fabric.cables:
        if cable.tier != "node-leaf":
            continue
        hca, leaf = fabric.by_name[cable.down.node], fabric.by_name[cable.up.node]
        assert (hca.su, hca.rail) == (leaf.su, leaf.rail)
    # Node slot n sits on port n of all eight rail leaves: dgx033 is slot 1 of SU 2.
    ports = {c.up for c in fabric.cables if c.down.node.startswith("dgx033 ")}
    assert {(p.node, p.port) for p in ports} == {(f"su2-leaf{r}", 1) for r in range(1, 9)}


def test_ufm_takes_the_last_node_slot_of_the_last_su() -> None:
    fabric = plan_fabric(superpod("dgx-h100", 1))
    fm = {c.down.node: c.up for c in fabric.cables if c.down.node.startswith("ufm")}
    assert {n: (p.node, p.port) for n, p in fm.items()} == {
        "ufm1 mlx5_0": ("su1-leaf1", 32),
        "ufm1 mlx5_1": ("su1-leaf2", 32),
        "ufm2 mlx5_0": ("su1-leaf3", 32),
        "ufm2 mlx5_1": ("su1-leaf4", 32),
    }
    assert (fabric.sm.primary, fabric.sm.standby) == ("ufm1 mlx5_0", "ufm2 mlx5_0")
    assert "dgx032 mlx5_0" not in fabric.by_name  # 31 nodes: dgx001..dgx031


@pytest.mark.parametrize(("su", "per_pair"), [(1, 8), (2, 4), (3, 2), (4, 2)])
def test_two_tiers_every_leaf_on_every_spine_evenly(su: int, per_pair: int) -> None:
    fabric = plan_fabric(superpod("dgx-h100", su))
    pairs = Counter((c.down.node, c.up.node) for c in fabric.cables if c.tier == "leaf-spine")
    leaves, spines = fabric.role("leaf"), fabric.role("spine")
    assert len(pairs) == len(leaves) * len(spines)
    assert set(pairs.values()) == {per_pair}


def test_three_tiers_spine_groups_per_rail_core_groups_per_position() -> None:
    fabric = plan_fabric(superpod("dgx-b200", 16))
    spine_group = {n.name: n.group for n in fabric.role("spine")}
    rails_per_group: dict[int | None, set[int | None]] = {}
    for c in fabric.cables:
        if c.tier == "leaf-spine":
            rails_per_group.setdefault(spine_group[c.up.node], set()).add(fabric.by_name[c.down.node].rail)
    assert len(rails_per_group) == 8 and all(len(r) == 1 for r in rails_per_group.values())
    # Every spine: 32 down, 32 up; every core: 64 down; each core serves one spine position in all 8 groups.
    ends = Counter(e.node for c in fabric.cables for e in (c.down, c.up))
    assert {ends[n.name] for n in fabric.switches} == {64}
    core_spines = Counter((c.up.node, c.down.node) for c in fabric.cables if c.tier == "spine-core")
    assert set(core_spines.values()) == {8}
    assert {sum(1 for core, _ in core_spines if core == n.name) for n in fabric.role("core")} == {8}


def test_every_port_cabled_once_and_within_the_radix() -> None:
    fabric = plan_fabric(superpod("dgx-h100", 4))
    ends = [e for c in fabric.cables for e in (c.down, c.up)]
    assert len(ends) == len(set(ends))
    assert all(1 <= e.port <= fabric.by_name[e.node].ports for e in ends)
    assert {fabric.by_name[e.node].ports for e in ends if fabric.by_name[e.node].kind == "switch"} == {64}


def test_plan_is_deterministic() -> None:
    assert plan_fabric(superpod("dgx-h100", 2)).cables == plan_fabric(superpod("dgx-h100", 2)).cables


def test_ndr200_split_ports_put_two_adapters_on_a_cage_port() -> None:
    fabric = plan_fabric(IbDesign("split", su_count=1, nodes_per_su=64, hca_rate="NDR200"))
    leaf = fabric.by_name["su1-leaf1"]
    assert leaf.ports == 128  # QM9700 with split ports reports 128
    down = [c for c in fabric.cables if c.up.node == "su1-leaf1"]
    up = [c for c in fabric.cables if c.down.node == "su1-leaf1"]
    assert (len(down), len(up)) == (64, 32)  # 64 x 200G down = 32 x 400G up
    assert {c.rate.label for c in down} == {"2xNDR"} and {c.rate.label for c in up} == {"4xNDR"}


def test_hdr_qm8700_unit_of_20_nodes_fits_its_40_ports() -> None:
    fabric = plan_fabric(IbDesign("hdr", su_count=2, nodes_per_su=20, switch_model="QM8700", hca_rate="HDR"))
    assert fabric.counts()["leaf"] == 16
    assert {fabric.by_name[c.up.node].ports for c in fabric.cables} == {40}
    assert {c.rate.label for c in fabric.cables} == {"4xHDR"}


@pytest.mark.parametrize(
    ("design", "where", "says"),
    [
        (
            IbDesign("x", 1, nodes_per_su=32, switch_model="QM8700", hca_rate="HDR"),
            "design.switch_model",
            "QM8700 has 40",
        ),
        (IbDesign("x", 1, switch_model="QM9800"), "design.switch_model", "unknown InfiniBand switch model"),
        (IbDesign("x", 1, hca_rate="HDR"), "design.hca_rate", "HDR adapters on QM9700"),
        (IbDesign("x", 0), "design.su_count", "0 scalable units"),
        (IbDesign("x", 1, fabric_manager_ports=9), "design.fabric_manager_ports", "9 fabric-manager ports"),
        (IbDesign("x", 1, tiers=4), "design.tiers", "4 tiers"),
    ],
)
def test_designs_the_hardware_cannot_carry_are_refused_with_the_fix(design: IbDesign, where: str, says: str) -> None:
    with pytest.raises(IbError) as err:
        plan_fabric(design)
    problem = err.value.problems[0]
    assert problem.where == where
    assert says in problem.message
    assert problem.fix


def test_unknown_superpod_system_is_refused() -> None:
    with pytest.raises(IbError, match="no published SuperPOD"):
        superpod("dgx-a100", 1)
