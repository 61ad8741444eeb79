"""InfiniBand cables and transceivers in the bill of material and the cabling plan, by reach and rate."""

from __future__ import annotations

import copy
import csv
import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import INVENTORY, plan_doc, run_in_process

from gpufabric.export import bom, cabling, plan_json

H100 = INVENTORY / "examples" / "superpod-ib.yml"
B200 = INVENTORY / "examples" / "superpod-b200-ib.yml"


def _doc(path: Path, lengths: dict[str, int] | None) -> dict[str, Any]:
    doc = copy.deepcopy(yaml.safe_load(path.read_text()))
    doc["planes"]["compute"].pop("lengths", None)
    if lengths is not None:
        doc["planes"]["compute"]["lengths"] = lengths
    return doc


def _compute_rows(plan) -> dict[tuple[str, str], int]:
    rows = csv.DictReader(io.StringIO(bom.render(plan)))
    return {(r["category"], r["item"]): int(r["quantity"]) for r in rows if r["plane"] == "compute"}


def test_fibre_takes_a_module_per_twin_port_cage_and_per_adapter_port() -> None:
    # The 4-SU DGX H100 SuperPOD: 32 leaves and 16 spines of 32 twin-port OSFP cages, every port used;
    # 1020 node-leaf cables (127 nodes x 8 rails + 4 UFM ports), 1024 leaf-spine cables.
    rows = _compute_rows(plan_doc(_doc(H100, {"node_leaf": 10, "leaf_spine": 30})))
    assert rows[("transceiver", "InfiniBand multimode fibre (SR) module, 2 x 4xNDR")] == 48 * 32
    assert rows[("transceiver", "InfiniBand multimode fibre (SR) module, 4xNDR (adapter)")] == 1020
    assert rows[("cable", "4xNDR InfiniBand multimode fibre (SR), 10 m")] == 1020
    assert rows[("cable", "4xNDR InfiniBand multimode fibre (SR), 30 m")] == 1024
    assert sum(n for (cat, _), n in rows.items() if cat == "cable") == 2044


def test_copper_within_reach_needs_no_module_and_each_tier_takes_its_medium() -> None:
    rows = _compute_rows(plan_doc(_doc(H100, {"node_leaf": 2, "leaf_spine": 4})))
    assert rows[("cable", "4xNDR InfiniBand DAC, 2 m")] == 1020
    assert rows[("cable", "4xNDR InfiniBand active copper (ACC), 4 m")] == 1024
    assert not [k for k in rows if k[0] == "transceiver"]


def test_a_cage_with_copper_on_one_side_counts_modules_only_where_fibre_runs() -> None:
    # Leaves' ports 1-32 go down on DAC, 33-64 up on single-mode fibre: half the leaves' cages take a module.
    plan = plan_doc(_doc(H100, {"node_leaf": 3, "leaf_spine": 200}))
    rows = _compute_rows(plan)
    assert rows[("transceiver", "InfiniBand single-mode fibre (DR) module, 2 x 4xNDR")] == 32 * 16 + 16 * 32
    assert ("transceiver", "InfiniBand DAC module, 4xNDR (adapter)") not in rows
    assert plan_json.summary(plan)["totals"]["transceivers"] == 1024 + sum(
        b.transceiver_total for b in map(bom.plane_bom, plan.planes.values())
    )


def test_three_tiers_take_the_leaf_spine_length_for_spine_core_by_default() -> None:
    plan = plan_doc(_doc(B200, {"node_leaf": 5, "leaf_spine": 40}))
    assert plan.infiniband is not None and plan.infiniband.fabric.tiers == 3
    rows = _compute_rows(plan)
    assert rows[("cable", "4xNDR InfiniBand multimode fibre (SR), 40 m")] == 4096 * 2
    assert rows[("cable", "4xNDR InfiniBand active copper (ACC), 5 m")] == 4096
    plan = plan_doc(_doc(B200, {"node_leaf": 5, "leaf_spine": 40, "spine_core": 400}))
    rows = _compute_rows(plan)
    assert rows[("cable", "4xNDR InfiniBand single-mode fibre (DR), 400 m")] == 4096


def test_hdr_takes_the_50g_pam4_media() -> None:
    doc = _doc(H100, {"node_leaf": 4, "leaf_spine": 3})
    doc["planes"]["compute"].update(switch_model="QM8700", unit_nodes=20)
    for group in doc["server_groups"]:
        if "compute" in group["nics"]:
            group["nics"]["compute"]["speed"] = "200G"
    rows = _compute_rows(plan_doc(doc))
    assert any(item.startswith("4xHDR InfiniBand AOC, 4 m") for _, item in rows)
    assert any(item.startswith("4xHDR InfiniBand DAC, 3 m") for _, item in rows)
    assert not [k for k in rows if k[0] == "transceiver"]


def test_without_lengths_cables_are_counted_by_rate_only() -> None:
    plan = plan_doc(_doc(H100, None))
    rows = _compute_rows(plan)
    assert rows[("cable", "4xNDR InfiniBand")] == 2044
    assert not [k for k in rows if k[0] == "transceiver"]
    ib_rows = [r for r in csv.reader(io.StringIO(cabling.render(plan))) if r[0].startswith("ib-")]
    assert ib_rows[0][-2:] == ["", ""]


def test_the_cabling_plan_names_each_ib_cable_medium_and_length() -> None:
    plan = plan_doc(_doc(H100, {"node_leaf": 2, "leaf_spine": 30}))
    rows = [r for r in csv.DictReader(io.StringIO(cabling.render(plan))) if r["cable_id"].startswith("ib-")]
    by_kind = {(r["kind"], r["medium"], r["length_m"]) for r in rows}
    assert by_kind == {("node-leaf", "DAC", "2"), ("leaf-spine", "multimode fibre (SR)", "30")}


def test_a_length_beyond_every_reach_is_refused_at_its_field(tmp_path: Path) -> None:
    path = tmp_path / "fabric.yml"
    path.write_text(yaml.safe_dump(_doc(H100, {"node_leaf": 3, "leaf_spine": 2500}), sort_keys=False))
    done = run_in_process("gpufabric", "check", str(path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "planes.compute.lengths.leaf_spine: 2500 m at NDR is beyond every medium's reach (2000 m)" in done.stderr


@pytest.mark.parametrize("example", [H100])
def test_the_example_bill_names_its_ib_transceivers(example: Path) -> None:
    plan = plan_doc(yaml.safe_load(example.read_text()))
    rows = _compute_rows(plan)
    assert sum(n for (cat, _), n in rows.items() if cat == "transceiver") == 48 * 32 + 1020
