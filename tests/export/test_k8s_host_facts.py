"""The Kubernetes export's GPU-to-NIC pairing from what host_baseline read (`--host-facts`), not from the
assumption that rail r serves GPU r-1; the assumption is kept, and said, only where no reading is given.
The readings are made by the role's own reader on prepared sysfs trees (tests/sysfs_trees.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from sysfs_trees import Host, build

from gpufabric.export import host_facts, k8s_network
from gpufabric.inputs import InputError
from gpufabric.intent import load_intent
from gpufabric.plan import Plan, build_plan
from tests.conftest import run_in_process

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "roles" / "host_baseline" / "library" / "gpufabric_host_baseline.py"
NICS = [{"interface": "eth1", "rail": 1}, {"interface": "eth2", "rail": 2}]


def _reading(tmp_path: Path, host: str, tree: Host) -> dict[str, Any]:
    """What playbooks/validate.yml writes for `host`: the module's facts with the host's name."""
    spec = importlib.util.spec_from_file_location("gpufabric_host_baseline", MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    build(tmp_path / f"tree-{host}", tree)
    return {"host": host, **module.read_baseline(str(tmp_path / f"tree-{host}"), NICS, 8)["facts"]}


@pytest.fixture
def facts_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "host-facts"
    folder.mkdir()
    # gpu01's rail 1 NIC sits on socket 1 with GPUs 4-7: not GPU0's, whatever the rail number says.
    doc = _reading(tmp_path, "gpu01", Host(nics={"eth1": (1, 0), "eth2": (0, 0)}))
    (folder / "gpu01.json").write_text(json.dumps(doc))
    return folder


def _plan() -> Plan:
    return build_plan(load_intent(str(ROOT / "inventory" / "fabric.yml")))


def test_a_read_pairing_replaces_the_assumed_one_for_that_node_only(facts_dir: Path) -> None:
    plan = _plan()
    found = k8s_network.rails(plan)
    readings = host_facts.load(facts_dir, plan, k8s_network.rail_nics(found))
    pairs = k8s_network.pairing(plan, found, readings)
    assert pairs["gpu01"] == ("read", {"eth1": "4,5,6,7", "eth2": "0,1,2,3"})
    assert pairs["gpu02"] == ("assumed", {"eth1": "0,1,2,3", "eth2": "4,5,6,7"})
    text = k8s_network.documents(plan, readings)["kubelet-topology.yaml"]
    assert "#   gpu01 (read): eth1->GPU4,5,6,7, eth2->GPU0,1,2,3" in text
    assert "#   gpu02 (assumed): eth1->GPU0,1,2,3, eth2->GPU4,5,6,7" in text
    # The pairing is a note for the kubelet's configuration; the objects themselves do not change.
    bare = k8s_network.documents(plan)
    assert {n: t for n, t in bare.items() if n != "kubelet-topology.yaml"} == {
        n: t for n, t in k8s_network.documents(plan, readings).items() if n != "kubelet-topology.yaml"
    }


def test_the_cli_says_where_the_pairing_is_assumed(tmp_path: Path, facts_dir: Path) -> None:
    fabric = ROOT / "inventory" / "fabric.yml"
    done = run_in_process(
        "gpufabric", "export", "k8s-network", fabric, "-o", tmp_path / "net", "--host-facts", facts_dir
    )
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert "GPU-to-NIC pairing read from the hosts for 1 node(s)" in said
    assert "assumed by rail (rail r serves GPU r-1) for gpu02, gpu03, gpu04: no reading of theirs" in said
    assert "gpu01 (read): eth1->GPU4,5,6,7" in (tmp_path / "net" / "kubelet-topology.yaml").read_text()
    bare = run_in_process("gpufabric", "export", "k8s-network", fabric)
    assert bare.returncode == 0 and "no reading given (--host-facts)" in " ".join(bare.stderr.split())
    assert "#   gpu01 (assumed): eth1->GPU0,1,2,3" in bare.stdout
    other = run_in_process("gpufabric", "export", "cabling", fabric, "--host-facts", facts_dir)
    assert other.returncode == 2 and "only k8s-network takes host readings" in other.stderr


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d: d.update(host="stor01"), "host 'stor01' is not a GPU server of the plan with rail NICs"),
        (lambda d: d["pairs"][0].update(nic="eth3"), "'eth3' is not a rail NIC of gpu01 in the plan (eth1, eth2)"),
        (lambda d: d["pairs"][1].update(gpus=[0, 8]), "GPU indexes [0, 8] are not whole numbers below gpu01's 8"),
        (lambda d: d.pop("pairs"), "no pairs list"),
    ],
    ids=["a host the plan has no GPUs on", "a NIC not on a rail", "a ninth GPU", "no pairs"],
)
def test_a_reading_the_plan_cannot_hold_is_bad_input(facts_dir: Path, change: Any, says: str) -> None:
    doc = json.loads((facts_dir / "gpu01.json").read_text())
    change(doc)
    (facts_dir / "gpu01.json").write_text(json.dumps(doc))
    plan = _plan()
    with pytest.raises(InputError) as caught:
        host_facts.load(facts_dir, plan, k8s_network.rail_nics(k8s_network.rails(plan)))
    assert says in caught.value.problems[0].message
    assert caught.value.file == str(facts_dir / "gpu01.json")
