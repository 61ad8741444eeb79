"""`verify` reads a SONiC switch's config_db.json and frr.conf back: the example is clean, and the
mistakes a SONiC configuration invites (the stock DSCP map, PFC on a second priority, a port left
without the RoCE binding, a BGP neighbour lost from frr.conf, the MTU) are found where they are."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from gpufabric.verify.runner import verify
from tests.conftest import INVENTORY

EXAMPLE = INVENTORY / "examples" / "sonic.yml"
LEAF = "cmp-leaf1a"


@pytest.fixture(scope="module")
def plan_and_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    plan = build_plan(load_intent(EXAMPLE))
    folder = tmp_path_factory.mktemp("sonic")
    index = LinkIndex(plan)
    for d in plan.devices():
        for name, text in render_device(plan, d, index).files.items():
            (folder / name).write_text(text)
    return plan, folder


def _copy(src: Path, dst: Path) -> None:
    for f in src.iterdir():
        (dst / f.name).write_text(f.read_text())


def _findings(plan: Any, folder: Path) -> list[dict[str, object]]:
    return [f.as_dict() for f in verify(plan, folder, workers=1).findings]


def test_example_verifies_clean(plan_and_files: tuple[Any, Path]) -> None:
    plan, folder = plan_and_files
    assert _findings(plan, folder) == []


def _azure_dscp(doc: dict[str, Any]) -> None:
    doc["DSCP_TO_TC_MAP"]["ROCE"]["26"] = "1"  # SONiC's stock AZURE map: DSCP 24-26 in lossy TC 1


def _second_pfc_priority(doc: dict[str, Any]) -> None:
    doc["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] = "3,4"


def _unbound_port(doc: dict[str, Any]) -> None:
    del doc["PORT_QOS_MAP"]["Ethernet0"]


def _mtu(doc: dict[str, Any]) -> None:
    doc["PORT"]["Ethernet0"]["mtu"] = "1500"


def _ecn(doc: dict[str, Any]) -> None:
    doc["WRED_PROFILE"]["ROCE_ECN"]["green_min_threshold"] = "1000"


BROKEN: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "stock DSCP map": (_azure_dscp, "qos-dscp-map"),
    "PFC on 3 and 4": (_second_pfc_priority, "qos-pfc"),
    "port without the RoCE binding": (_unbound_port, "qos-port"),
    "MTU 1500": (_mtu, "mtu"),
    "ECN threshold": (_ecn, "qos-ecn"),
}


@pytest.mark.parametrize("mistake", sorted(BROKEN))
def test_config_db_mistake_is_found(plan_and_files: tuple[Any, Path], tmp_path: Path, mistake: str) -> None:
    plan, folder = plan_and_files
    _copy(folder, tmp_path)
    path = tmp_path / f"{LEAF}.config_db.json"
    doc = json.loads(path.read_text())
    change, check = BROKEN[mistake]
    change(doc)
    path.write_text(json.dumps(doc, indent=4, sort_keys=True) + "\n")
    found = [f for f in _findings(plan, tmp_path) if f["device"] == LEAF]
    assert {f["check"] for f in found} >= {check}, found
    assert all(f["file"] == path.name and int(str(f["line"])) > 1 for f in found if f["check"] == check)


def test_lost_bgp_neighbour_is_found(plan_and_files: tuple[Any, Path], tmp_path: Path) -> None:
    plan, folder = plan_and_files
    _copy(folder, tmp_path)
    conf = tmp_path / f"{LEAF}.frr.conf"
    lines = conf.read_text().splitlines()
    gone = next(n for n, text in enumerate(lines) if text.strip().startswith("neighbor ") and "remote-as" in text)
    del lines[gone]
    conf.write_text("\n".join(lines) + "\n")
    found = [f for f in _findings(plan, tmp_path) if f["device"] == LEAF]
    assert [f["check"] for f in found] == ["bgp-neighbor"]


def test_frr_conf_passes_frrs_own_parser(plan_and_files: tuple[Any, Path]) -> None:
    """The frr.conf a SONiC switch's bgp container reads passes `vtysh -C` (FRR's parser, dry run)."""
    if shutil.which("vtysh") is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs frr; vtysh should be on PATH")
        pytest.skip("vtysh (frr) is not installed")
    _, folder = plan_and_files
    confs = sorted(folder.glob("cmp-*.frr.conf"))
    assert len(confs) == 10
    for conf in confs:
        done = subprocess.run(["vtysh", "-C", "-f", str(conf)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{conf.name}: {done.stdout}{done.stderr}"
