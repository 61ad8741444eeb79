"""Cables by reach: the medium each link gets from its speed and length (NVIDIA LinkX reaches), in the
bill of material and the cabling plan; lengths beyond every medium or beyond a RoCE plane's headroom
class are refused with line and fix."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
import yaml
from conftest import INVENTORY, run_in_process

from gpufabric import media
from gpufabric.export import bom, cabling
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

EXAMPLE = INVENTORY / "examples" / "superpod-1su.yml"


@pytest.mark.parametrize(
    ("speed", "metres", "medium"),
    [
        (400, 3, "DAC"),
        (400, 4, "active copper (ACC)"),
        (400, 50, "multimode fibre (SR)"),
        (400, 51, "single-mode fibre (DR)"),
        (400, 501, "single-mode fibre (FR)"),
        (400, 2001, None),
        (200, 3, "DAC"),
        (200, 4, "AOC"),
        (100, 5, "DAC"),
        (100, 6, "AOC"),
        (100, 101, "single-mode fibre (FR)"),
        (1, 90, "copper (RJ45)"),
    ],
)
def test_the_shortest_medium_that_reaches(speed: int, metres: int, medium: str | None) -> None:
    chosen = media.choose(speed, metres)
    assert (chosen.name if chosen else None) == medium


def test_the_bill_of_material_counts_cables_by_medium_and_length_and_fibre_needs_transceivers() -> None:
    plan = build_plan(load_intent(str(EXAMPLE)))
    compute = bom.plane_bom(plan.planes["compute"])
    # 31 DGX x 8 rails (+ the free slot's 8 ports are not cabled) ... node-leaf at 20 m, leaf-spine at 30 m.
    node_leaf = sum(1 for link in plan.planes["compute"].links if link.kind == "host")
    leaf_spine = sum(1 for link in plan.planes["compute"].links if link.kind == "fabric")
    assert compute.cables == {
        "400G multimode fibre (SR), 20 m": node_leaf,
        "400G multimode fibre (SR), 30 m": leaf_spine,
    }
    assert compute.transceivers["400G module (server NIC)"] == node_leaf
    storage = bom.plane_bom(plan.planes["storage"])
    # Storage hosts are 3 m from their leaves: DACs, which carry their own ends (no NIC module).
    host_links = sum(1 for link in plan.planes["storage"].links if link.kind == "host")
    assert storage.cables["200G DAC, 3 m"] == host_links
    assert not any("server NIC" in k for k in storage.transceivers)
    business = bom.plane_bom(plan.planes["business"])
    assert business.cables["100G single-mode fibre (FR), 120 m"] == 4  # the edge links
    assert business.cables["100G AOC, 25 m"] == sum(1 for x in plan.planes["business"].links if x.kind == "fabric")


def test_the_cabling_plan_names_each_cables_medium_and_length() -> None:
    plan = build_plan(load_intent(str(EXAMPLE)))
    rows = list(csv.DictReader(io.StringIO(cabling.render(plan))))
    host = next(r for r in rows if r["plane"] == "compute" and r["kind"] == "host")
    assert (host["medium"], host["length_m"]) == ("multimode fibre (SR)", "20")
    storage = next(r for r in rows if r["plane"] == "storage" and r["kind"] == "host")
    assert (storage["medium"], storage["length_m"]) == ("DAC", "3")
    oob = next(r for r in rows if r["plane"] == "oob")
    assert (oob["medium"], oob["length_m"]) == ("", "")  # no lengths given: nothing guessed


@pytest.mark.parametrize(
    ("plane", "lengths", "says", "fix"),
    [
        ("compute", {"host": 20, "leaf_spine": 60}, "a 60 m cable on a lossless RoCE plane", "set cable_length: 100m"),
        (
            "compute",
            {"host": 3000, "leaf_spine": 30},
            "3000 m at 400G is beyond every medium's reach (2000 m)",
            "within 2000 m",
        ),
        ("business", {"host": 4, "leaf_spine": 150}, "150 m at 100G", None),
    ],
)
def test_lengths_beyond_reach_or_headroom_are_refused(
    tmp_path: Path, plane: str, lengths: dict, says: str, fix: str | None
) -> None:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["planes"][plane]["lengths"] = lengths
    path = tmp_path / "fabric.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = run_in_process("gpufabric", "check", str(path))
    if fix is None:  # 150 m of 100G is an AOC's job no more, but single-mode fibre reaches: accepted
        assert done.returncode == 0, done.stderr
        return
    assert done.returncode == 2 and says in done.stderr and fix in done.stderr, done.stderr
    assert f"{path}:" in done.stderr and "Traceback" not in done.stderr
