"""The bill of material counts one module per server NIC cage: a ConnectX-8 SuperNIC's 800G cage split 2 x 400G
onto two planes of a multi-plane compute plane holds one module, not one per port."""

from __future__ import annotations

import copy
import csv
import io
from typing import Any

import yaml
from conftest import INVENTORY, plan_doc, set_path

from gpufabric.export import bom

MULTIPLANE = INVENTORY / "examples" / "multiplane-b300.yml"


def _doc(**nics: Any) -> dict[str, Any]:
    doc = copy.deepcopy(yaml.safe_load(MULTIPLANE.read_text()))
    # ECMP here: a SuperNIC under adaptive routing would also need its Spectrum-X side (spectrum_x), which the
    # count does not depend on.
    doc = set_path(doc, ("planes", "compute", "load_balancing"), "ecmp")
    for key, value in nics.items():
        doc = set_path(doc, ("server_groups", 0, "nics", "compute", key), value)
    return doc


def _rows(doc: dict[str, Any]) -> dict[tuple[str, str], int]:
    text = bom.render(plan_doc(doc))
    return {
        (r["plane"], r["item"]): int(r["quantity"])
        for r in csv.DictReader(io.StringIO(text))
        if r["category"] == "transceiver"
    }


def _nic_modules(rows: dict[tuple[str, str], int]) -> dict[tuple[str, str], int]:
    return {k: n for k, n in rows.items() if "server NIC" in k[1]}


def test_a_connectx8_cage_split_over_two_planes_holds_one_module():
    rows = _rows(_doc(model="ConnectX-8"))
    # 16 nodes x 8 SuperNICs: 128 cages, each counted once, with its first port's plane.
    assert _nic_modules(rows) == {
        ("compute-p1", "800G module (server NIC, 2x400G)"): 128,
        ("total", "800G module (server NIC, 2x400G)"): 128,
    }


def test_the_switch_side_is_counted_as_before():
    with_model = {k: n for k, n in _rows(_doc(model="ConnectX-8")).items() if "server NIC" not in k[1]}
    without = {k: n for k, n in _rows(_doc()).items() if "server NIC" not in k[1]}
    assert with_model == without


def test_nics_without_a_shared_cage_count_one_module_per_port():
    # No model: nothing says two ports share a cage, so each port has its own module (as before).
    assert _nic_modules(_rows(_doc())) == {
        ("compute-p1", "400G module (server NIC)"): 128,
        ("compute-p2", "400G module (server NIC)"): 128,
        ("total", "400G module (server NIC)"): 256,
    }
    # ConnectX-7: one port per cage.
    assert _nic_modules(_rows(_doc(model="ConnectX-7")))[("total", "400G module (server NIC)")] == 256


def test_ports_that_do_not_fit_one_cage_are_not_shared():
    # 2 x 800G is more than one 800G cage: nothing is assumed, each port keeps its module.
    doc = set_path(
        _doc(model="ConnectX-8", speed="800G"), ("planes", "compute", "switches", "leaf", "downlink_speed"), "800G"
    )
    rows = _rows(doc)
    assert {k[1] for k in _nic_modules(rows)} == {"800G module (server NIC)"}


def test_blocked_ports_pair_each_nic_across_the_blocks():
    doc = set_path(_doc(model="ConnectX-8"), ("planes", "compute", "multiplane", "ports"), "blocked")
    from gpufabric.intent.model import Multiplane
    from gpufabric.plan.multiplane import nic_index

    mp = Multiplane(planes=2, ports="blocked")
    # 16 interfaces, 8 NICs: interface i and i + 8 are the two ports of NIC i.
    assert [nic_index(16, mp, i) for i in (0, 7, 8, 15)] == [0, 7, 0, 7]
    assert _nic_modules(_rows(doc))[("total", "800G module (server NIC, 2x400G)")] == 128
