"""Which servers depend on a switch alone, read from the shipped plans."""

from __future__ import annotations

import copy

import pytest

from gpufabric.scheduler import servers_behind
from gpufabric.scheduler.service import nodes_behind
from tests.conftest import INVENTORY, example_plan


def names(plan, switch):
    return [s.name for s in servers_behind(plan, switch)]


def test_a_rail_leaf_of_the_default_fabric_holds_its_unit_s_servers():
    plan = example_plan(INVENTORY / "fabric.yml")
    behind = servers_behind(plan, "cmp-su1-leaf1")
    assert [s.name for s in behind] == ["gpu01", "gpu02"]
    assert [(n.plane, n.interfaces, n.leaves, n.bond) for n in behind[0].nics] == [
        ("compute", ("eth1",), ("cmp-su1-leaf1",), None)
    ]
    assert names(plan, "cmp-su2-leaf2") == ["gpu03", "gpu04"]


def test_a_spine_holds_no_server():
    plan = example_plan(INVENTORY / "fabric.yml")
    for spine in ("cmp-spine1", "cmp-spine2", "sto-spine1", "biz-spine2"):
        assert names(plan, spine) == []
    assert names(plan, "oob-mgmt1") == []  # the out-of-band plane carries no job


def test_a_single_homed_storage_leaf_holds_its_servers():
    plan = example_plan(INVENTORY / "fabric.yml")
    gpus = [s.name for s in plan.servers if s.group == "gpu"]
    assert names(plan, "sto-leaf1") == gpus
    assert names(plan, "sto-leaf2") == ["stor01", "stor02"]


def test_a_member_of_an_mlag_pair_holds_none():
    plan = example_plan(INVENTORY / "examples/superpod-1su.yml")
    bonded = [s for s in plan.servers if any(n.bond for n in s.nics if n.leaf == "sto-leaf1a")]
    assert bonded, "the example bonds servers to sto-leaf1a and sto-leaf1b"
    assert names(plan, "sto-leaf1a") == []
    assert names(plan, "sto-leaf1b") == []
    # ... but its rail leaves do hold their servers.
    assert names(plan, "cmp-su1-leaf3") == [
        s.name for s in plan.servers if any(n.leaf == "cmp-su1-leaf3" for n in s.nics)
    ]
    assert names(plan, "cmp-su1-leaf3")


def test_a_spine_that_is_a_leaf_s_only_way_up_holds_that_leaf_s_servers():
    """Cut every link of cmp-su2-leaf1 but those to cmp-spine1: that spine now holds gpu03 and gpu04."""
    plan = copy.deepcopy(example_plan(INVENTORY / "fabric.yml"))
    plane = plan.planes["compute"]
    plane.links = [
        link
        for link in plane.links
        if not (link.kind == "fabric" and link.a == "cmp-su2-leaf1" and link.b != "cmp-spine1")
    ]
    assert names(plan, "cmp-spine1") == ["gpu03", "gpu04"]
    assert names(plan, "cmp-spine2") == []
    assert [n.interfaces for n in servers_behind(plan, "cmp-spine1")[0].nics] == [("eth1",)]


def test_a_bond_whose_other_leaf_is_cut_off_is_held():
    """The pair's other leaf reaches nothing (its uplinks gone): the bond hangs on the one leaf left."""
    plan = copy.deepcopy(example_plan(INVENTORY / "examples/superpod-1su.yml"))
    plane = plan.planes["storage"]
    plane.links = [
        link
        for link in plane.links
        if not (link.a == "sto-leaf1b" and link.kind in ("fabric", "peer"))
        and not (link.b == "sto-leaf1b" and link.kind == "peer")
    ]
    held = names(plan, "sto-leaf1a")
    assert held and held == [s.name for s in plan.servers if any(n.leaf == "sto-leaf1a" for n in s.nics)]


def test_an_unknown_switch_is_a_key_error():
    with pytest.raises(KeyError):
        servers_behind(example_plan(INVENTORY / "fabric.yml"), "no-such-switch")


def test_a_batch_names_each_server_once_with_its_switches():
    plan = example_plan(INVENTORY / "fabric.yml")
    got = nodes_behind(plan, ["cmp-su1-leaf1", "sto-leaf1", "cmp-spine1"])
    assert got == {
        "gpu01": ["cmp-su1-leaf1", "sto-leaf1"],
        "gpu02": ["cmp-su1-leaf1", "sto-leaf1"],
        "gpu03": ["sto-leaf1"],
        "gpu04": ["sto-leaf1"],
    }
