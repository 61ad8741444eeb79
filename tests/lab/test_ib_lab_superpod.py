"""The SuperPOD H100 4-SU example's InfiniBand compute plane, planned from the cluster intent, run in ibsim
with the OpenSM files rendered from it (root): every port active, the diagnostics find exactly the planned
switches, adapters and cables, and every check of validate passes, partitions of 95 and 32 hosts included.
(A tenant's members on one line of partitions.conf made OpenSM reject the file: they are written a host
per line.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from ib_sim_helpers import LAB_MARKS

from gpufabric.ib import lab, topology
from gpufabric.ib.design import H100_TABLE
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from tests.conftest import INVENTORY, run

pytestmark = LAB_MARKS

EXAMPLE = str(INVENTORY / "examples" / "superpod-ib.yml")
LAB = str(INVENTORY / "examples" / "lab-infiniband.yml")


def test_the_4_su_example_comes_up_as_planned_and_validates_green(tmp_path: Path) -> None:
    fabric = build_plan(load_intent(EXAMPLE)).infiniband.fabric
    published = H100_TABLE[4]
    assert (len(fabric.hosts), len(fabric.role("leaf")), len(fabric.role("spine"))) == (127, 32, 16)
    assert len(fabric.cables) == published.node_leaf_cables + published.leaf_spine_cables
    state = tmp_path / "ib"
    up = run("gpufabric", "ib", "lab", "up", EXAMPLE, "--state-dir", str(state))
    try:
        assert up.returncode == 0, up.stderr
        assert "PARSE ERROR" not in (state / "primary" / "opensm.log").read_text()
        # The example turns SHARP on: sharp_am's files lie beside OpenSM's, whose own configuration (without the
        # SHARP option, which has a file of its own) brought the subnet up as before.
        sm = state / "primary"
        assert (sm / "sharp_am.cfg").is_file() and (sm / "opensm-sharp.conf").is_file()
        assert "sharp" not in (sm / "opensm.conf").read_text()
        seen = topology.parse(lab.runner(state)(["ibnetdiscover"]), "ibnetdiscover")
        switches = [n for n in seen.nodes.values() if n.kind == "switch"]
        adapters = [n for n in seen.nodes.values() if n.kind == "ca"]
        assert (len(switches), len(adapters), len(seen.links)) == (48, 127 * 8 + 4, 2044)
        assert {n.name for n in seen.nodes.values()} == {n.name for n in fabric.nodes}
        done = run("gpufabric", "ib", "validate", EXAMPLE, "--lab", str(state), "--no-rates", "--format", "json")
        results = json.loads(done.stdout)
        assert done.returncode == 0, [r for r in results if not r["ok"]][:5]
        by_check = {r["check"] for r in results}
        assert by_check == {"cabling", "nodes", "lid", "port", "sm", "partition", "route", "counters"}
        assert any(r["item"] == "4088 planned ports" and r["observed"] == "Active/LinkUp" for r in results)
    finally:
        run("gpufabric", "ib", "lab", "down", "--state-dir", str(state))
    assert not state.exists()


def test_without_partitions_every_host_reaches_every_other(tmp_path: Path) -> None:
    """The lab cluster's InfiniBand plane with its partitions left out: OpenSM accepts the default partition
    with every adapter full, validate expects exactly that, and the SA has a path between any two hosts."""
    doc = yaml.safe_load(Path(LAB).read_text())
    del doc["planes"]["compute"]["partitions"]
    intent = tmp_path / "fabric.yml"
    intent.write_text(yaml.safe_dump(doc, sort_keys=False))
    state = tmp_path / "ib"
    up = run("gpufabric", "ib", "lab", "up", str(intent), "--state-dir", str(state))
    try:
        assert up.returncode == 0, up.stderr
        assert "PARSE ERROR" not in (state / "primary" / "opensm.log").read_text()
        done = run("gpufabric", "ib", "validate", str(intent), "--lab", str(state), "--no-rates", "--format", "json")
        results = json.loads(done.stdout)
        assert done.returncode == 0, [r for r in results if not r["ok"]]
        diag = lab.runner(state)
        by = topology.parse(diag(["ibnetdiscover"]), "ibnetdiscover").by_name()
        path = diag(["saquery", "-p", "--src-to-dst", f"{by['gpu01 mlx5_1'].lid}:{by['gpu04 mlx5_1'].lid}"])
        assert re.findall(r"pkey\.+(0x[0-9A-Fa-f]+)", path) == ["0xFFFF"]
    finally:
        run("gpufabric", "ib", "lab", "down", "--state-dir", str(state))
