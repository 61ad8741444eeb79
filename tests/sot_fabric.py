"""The default fabric with a site: racks, switch positions, GPU servers listed with places and serials."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
RACKS = [
    {"name": "r01", "row": 1, "column": 1},
    {"name": "r02", "row": 1, "column": 2},
    {"name": "r03", "row": 2, "column": 1, "units": 48},
]
SWITCHES = {
    "cmp-su1-leaf1": ("r01", 40),
    "cmp-su1-leaf2": ("r01", 41),
    "cmp-su2-leaf1": ("r02", 40),
    "cmp-su2-leaf2": ("r02", 41),
    "cmp-spine1": ("r03", 30),
    "cmp-spine2": ("r03", 31),
    "sto-spine1": ("r03", 20),
    "sto-spine2": ("r03", 21),
    "sto-leaf1": ("r01", 38),
    "sto-leaf2": ("r02", 38),
    "biz-spine1": ("r03", 10),
    "biz-spine2": ("r03", 11),
    "biz-leaf1": ("r01", 36),
    "biz-border1": ("r03", 12),
    "biz-border2": ("r03", 13),
    "oob-mgmt1": ("r03", 44),
}
GPUS = [("gpu01", "r01", 2), ("gpu02", "r01", 10), ("gpu03", "r02", 2), ("gpu04", "r02", 10)]


def sot_intent(installed: int = 3) -> dict[str, Any]:
    """The default fabric's intent with `installed` of its four GPU servers listed."""
    data = yaml.safe_load((ROOT / "inventory" / "fabric.yml").read_text())
    gpu = data["server_groups"][0]
    del gpu["count"], gpu["naming"]
    gpu["build_out"] = 4
    gpu["hosts"] = [{"name": n, "rack": r, "position": u, "serial": f"SN-{n.upper()}"} for n, r, u in GPUS[:installed]]
    data["planes"]["compute"]["cable_length"] = "30m"  # the positions give cables of up to 8 m
    data["site"] = {
        "name": "hall1",
        "racks": RACKS,
        "switches": {
            name: {"rack": r, "position": u, **({"serial": "SN-OOB1"} if name == "oob-mgmt1" else {})}
            for name, (r, u) in SWITCHES.items()
        },
    }
    return data


def write_intent(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
