"""ibnetdiscover's topology format: the planned fabric written, real ibnetdiscover output read.

The recorded output (tests/recorded/ib/mini.ibnetdiscover) is the real ibnetdiscover on ibsim
with the real OpenSM: the reader is held to what the tool prints, not to our own writer only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufabric.ib import discovery, topology
from gpufabric.ib.design import IbDesign, superpod
from gpufabric.ib.errors import IbError
from gpufabric.ib.model import PortRef
from gpufabric.ib.planner import plan_fabric

RECORDED = Path(__file__).parents[1] / "recorded" / "ib" / "mini.ibnetdiscover"
MINI = IbDesign("mini", su_count=2, nodes_per_su=4, rails=2, fabric_manager_ports=2, fabric_manager_ports_per_host=1)


def test_export_writes_one_record_per_node_and_both_ends_of_every_cable() -> None:
    fabric = plan_fabric(superpod("dgx-h100", 1))
    text = topology.render(fabric)
    lines = text.splitlines()
    assert sum(line.startswith("Switch\t64 ") for line in lines) == 12
    assert sum(line.startswith("Ca\t1 ") for line in lines) == 252
    assert sum(line.startswith("[") for line in lines) == 2 * 508
    assert 'Switch\t64 "S-su1-leaf1"\t\t# "su1-leaf1" enhanced port 0 lid 0 lmc 0' in lines
    assert '[1]\t"H-dgx001 mlx5_0"[1]\t\t# "dgx001 mlx5_0" lid 0 4xNDR' in lines
    # Leaf 1's first uplink (port 33) to spine 1's port 1; its fifth (37) to spine 1's port 2.
    assert '[33]\t"S-spine01"[1]\t\t# "spine01" lid 0 4xNDR' in lines
    assert '[37]\t"S-spine01"[2]\t\t# "spine01" lid 0 4xNDR' in lines
    assert '[1]\t"S-su1-leaf1"[1]\t\t# lid 0 lmc 0 "su1-leaf1" lid 0 4xNDR' in lines


def test_export_with_discovered_guids_uses_ibnetdiscover_ids() -> None:
    fabric = plan_fabric(MINI)
    found = discovery.discover(fabric, topology.parse(RECORDED.read_text()))
    text = topology.render(fabric, found.node_guids())
    assert "switchguid=0x200003(200003)" in text
    assert 'Switch\t64 "S-0000000000200003"\t\t# "su2-leaf2" enhanced port 0 lid 0 lmc 0' in text
    # Read back, it is the plan exactly, and the GUIDs are the discovered ones.
    again = topology.parse(text)
    assert discovery.compare(fabric, again).clean
    assert discovery.discover(fabric, again).node_guids() == found.node_guids()


def test_split_ports_are_written_two_lanes_wide() -> None:
    fabric = plan_fabric(IbDesign("split", su_count=1, nodes_per_su=64, hca_rate="NDR200"))
    text = topology.render(fabric)
    assert 'Switch\t128 "S-su1-leaf1"' in text
    assert '[64]\t"H-dgx064 mlx5_0"[1]\t\t# "dgx064 mlx5_0" lid 0 2xNDR' in text


def test_exported_topology_reads_back_as_the_plan() -> None:
    fabric = plan_fabric(superpod("dgx-h100", 2))
    seen = topology.parse(topology.render(fabric))
    assert {n.name for n in seen.nodes.values()} == set(fabric.by_name)
    assert discovery.compare(fabric, seen).clean
    assert len(seen.links) == len(fabric.cables)


def test_real_ibnetdiscover_output_matches_the_plan_port_for_port() -> None:
    fabric = plan_fabric(MINI)
    seen = topology.parse(RECORDED.read_text())
    assert len(seen.nodes) == 5 + 16 and len(seen.links) == 32
    assert discovery.compare(fabric, seen, rates=False).clean
    # ibsim 0.10 knows no NDR: every port runs at its default, and the rate check says so.
    diff = discovery.compare(fabric, seen)
    assert len(diff.rate) == 32
    assert 'cable "dgx001 mlx5_0"[1] - "su1-leaf1"[1] runs at 4xSDR, planned 4xNDR' in diff.lines()


def test_discovery_records_guids_and_lids_from_the_real_output() -> None:
    fabric = plan_fabric(MINI)
    found = discovery.discover(fabric, topology.parse(RECORDED.read_text()))
    leaf = found.nodes["su2-leaf2"]
    assert (leaf.node, leaf.port, leaf.lid) == (0x200003, 0x200003, 7)
    hca = found.nodes["dgx005 mlx5_1"]
    assert (hca.node, hca.port, hca.lid) == (0x100012, 0x100013, 16)
    assert set(found.nodes) == set(fabric.by_name)
    again = discovery.loads(found.dumps(), "discovery.json")
    assert again.node_guids() == found.node_guids()


def _swap(text: str, a: str, b: str) -> str:
    return text.replace(a, "\0").replace(b, a).replace("\0", b)


def test_a_swapped_cable_is_named_at_both_ends() -> None:
    fabric = plan_fabric(MINI)
    # dgx005's and dgx006's rail-2 adapters swapped on su2-leaf2 (both records of each cable).
    text = RECORDED.read_text()
    text = _swap(text, '"H-0000000000100012"[1](100013)', '"H-0000000000100016"[1](100017)')
    text = _swap(text, '"S-0000000000200003"[1]', '"S-0000000000200003"[2]')
    diff = discovery.compare(fabric, topology.parse(text), rates=False)
    assert diff.missing == [
        (PortRef("dgx005 mlx5_1", 1), PortRef("su2-leaf2", 1)),
        (PortRef("dgx006 mlx5_1", 1), PortRef("su2-leaf2", 2)),
    ]
    assert diff.unplanned == [
        (PortRef("dgx005 mlx5_1", 1), PortRef("su2-leaf2", 2)),
        (PortRef("dgx006 mlx5_1", 1), PortRef("su2-leaf2", 1)),
    ]


def test_a_renamed_node_is_refused_by_discovery() -> None:
    fabric = plan_fabric(MINI)
    text = RECORDED.read_text().replace('"su2-leaf2"', '"switch-7"')
    with pytest.raises(IbError) as err:
        discovery.discover(fabric, topology.parse(text), source="live.topo")
    messages = [p.message for p in err.value.problems]
    assert "unplanned node 'switch-7'" in messages
    assert "planned node 'su2-leaf2' not found" in messages


def test_unreadable_topology_names_the_line() -> None:
    with pytest.raises(IbError) as err:
        topology.parse('Switch\t8 "S-1"\t# "a"\nthis is not a port line\n', source="bad.topo")
    assert err.value.problems[0].where == "bad.topo:2"


def test_bad_discovery_file_is_refused() -> None:
    with pytest.raises(IbError, match="not a discovery file"):
        discovery.loads('{"fabric": "x", "nodes": {"a": {"node_guid": "zz"}}}', "d.json")
