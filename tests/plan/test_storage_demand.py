"""The storage plane sized from what the GPU servers read and write (`planes.storage.demand`), the path's
bottleneck and the checkpoint's time at full fabric rate (gpufabric/plan/storage.py, docs/storage.md)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from conftest import INVENTORY, default_doc, example_plan, plan_doc, run

from gpufabric.intent import IntentError
from gpufabric.plan.storage import flow

THIRTY_TWO_K = INVENTORY / "examples" / "three-tier-32k.yml"


def _with(demand: dict[str, Any] | None = None, **storage: Any) -> dict[str, Any]:
    doc = copy.deepcopy(default_doc())
    del doc["planes"]["storage"]["switches"]["spine"]["count"]  # sized from the uplinks, as the demand asks
    if demand is not None:
        doc["planes"]["storage"]["demand"] = demand
    doc["planes"]["storage"].update(storage)
    return doc


def test_the_default_fabrics_path_and_its_bottleneck_are_the_planned_links() -> None:
    """4 GPU servers x one 200G storage NIC; 2 storage servers x one 200G port: the targets' ports limit."""
    f = flow(plan_doc(_with()))
    assert f is not None
    stages = {s.name: s.gbps for s in f.stages}
    assert stages["GPU servers' storage NICs"] == 800
    assert stages["storage targets' ports"] == 400
    assert f.bottleneck.name == "storage targets' ports"
    assert f.checkpoint_seconds() is None  # no checkpoint asked


def test_the_checkpoint_time_is_its_size_over_the_slowest_stage() -> None:
    f = flow(plan_doc(_with({"checkpoint": {"size": "2TB", "within": "60s"}})))
    assert f is not None
    # 2 TB = 16,000 Gb over 400 Gb/s.
    assert f.checkpoint_seconds() == pytest.approx(40.0)


def test_a_checkpoint_the_targets_cannot_take_is_refused_with_the_numbers_at_its_field() -> None:
    with pytest.raises(IntentError) as refused:
        plan_doc(_with({"checkpoint": {"size": "4TB", "within": "60s"}}))
    [problem] = refused.value.problems
    assert problem.path == ("planes", "storage", "demand", "checkpoint", "within")
    # 4 TB in 60 s is 533 Gb/s; two 200G ports carry 400.
    assert "a checkpoint of 4 TB in 60 s needs 533 Gb/s at the storage targets' ports" in problem.message
    assert "they carry 400 Gb/s (2 data servers, 2 ports)" in problem.message


def test_a_read_demand_above_the_path_is_refused_naming_gpus_rate_and_stage() -> None:
    with pytest.raises(IntentError) as refused:
        plan_doc(_with({"read_per_gpu": "2GB/s"}))
    [problem] = refused.value.problems
    assert problem.path == ("planes", "storage", "demand", "read_per_gpu")
    assert "32 GPUs reading 2 GB/s (16 Gb/s) each need 512 Gb/s at the storage targets' ports" in problem.message


def test_the_demand_raises_the_storage_leaves_uplinks_above_the_ratio() -> None:
    """A 4:1 plane gives a leaf of 4 x 200G hosts one 200G uplink; reading 1 GB/s on each of 32 GPUs asks
    256 Gb/s of the GPU servers' leaf, so it gets two."""
    ratio_only = plan_doc(_with(oversubscription="4:1"))
    demanded = plan_doc(_with({"read_per_gpu": "1GB/s"}, oversubscription="4:1"))
    assert ratio_only.planes["storage"].sizing["leaf_uplinks"] == 1
    assert demanded.planes["storage"].sizing["leaf_uplinks"] == 2
    f = flow(demanded)
    assert f is not None
    assert {s.name: s.gbps for s in f.stages}["GPU servers' leaves' uplinks"] == 400


def test_written_uplinks_stay_and_the_shortfall_is_refused_at_the_leaves() -> None:
    doc = _with({"read_per_gpu": "1GB/s"}, oversubscription="4:1")
    doc["planes"]["storage"]["switches"]["leaf"]["uplinks"] = 1
    with pytest.raises(IntentError) as refused:
        plan_doc(doc)
    [problem] = refused.value.problems
    assert "need 256 Gb/s at the GPU servers' leaves' uplinks; they carry 200 Gb/s" in problem.message
    assert "1 switch: 1 uplink of 200G" in problem.message


def test_a_demand_the_leaves_have_no_ports_for_is_refused_at_the_demand() -> None:
    """4 GPU servers of 8 GPUs reading 100 GB/s each ask 25.6 Tb/s of their leaf: 128 uplinks of 200G, which a
    32-port leaf cannot hold; the refusal names the demand, not the leaf's ports."""
    doc = _with({"read_per_gpu": "100GB/s"})
    with pytest.raises(IntentError) as refused:
        plan_doc(doc)
    [problem] = refused.value.problems
    assert problem.path == ("planes", "storage", "demand", "read_per_gpu")
    assert "reading 100 GB/s per GPU needs 25.6 Tb/s of uplinks on each storage leaf" in problem.message
    assert "a leaf has 32" in problem.message


def test_the_plan_command_prints_the_path_and_exits_2_on_a_shortfall(tmp_path) -> None:
    import yaml

    good = tmp_path / "good.yml"
    good.write_text(yaml.safe_dump(_with({"checkpoint": {"size": "2TB", "within": "60s"}}), sort_keys=False))
    done = run("gpufabric", "plan", str(good))
    assert done.returncode == 0, done.stderr
    assert "storage: a checkpoint of 2 TB takes 40 s at full fabric rate (target 60 s)" in done.stdout
    assert "limited by the storage targets' ports (2 data servers, 2 ports)" in done.stdout
    doc = json.loads(run("gpufabric", "plan", str(good), "--json").stdout)
    assert doc["storage_path"]["checkpoint"]["seconds"] == 40.0
    assert doc["storage_path"]["bottleneck"] == "storage targets' ports"
    bad = tmp_path / "bad.yml"
    bad.write_text(yaml.safe_dump(_with({"checkpoint": {"size": "40TB", "within": "60s"}}), sort_keys=False))
    done = run("gpufabric", "plan", str(bad))
    assert done.returncode == 2
    assert "planes.storage.demand.checkpoint.within: a checkpoint of 40 TB in 60 s needs 5.33 Tb/s" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_32k_examples_checkpoint_takes_12_5_s_limited_by_the_storage_leaves() -> None:
    """docs/storage.md explains these numbers: 4 leaves of the object storage servers, 16 uplinks of 400G
    each, carry 25.6 Tb/s; 40 TB is 320,000 Gb."""
    f = flow(example_plan(THIRTY_TWO_K))
    assert f is not None
    assert f.bottleneck.name == "spines' links to the storage leaves"
    assert f.bottleneck.gbps == 25_600
    assert f.checkpoint_seconds() == pytest.approx(12.5)
    assert f.read_gbps == pytest.approx(32768 * 0.2)  # 25 MB/s = 0.2 Gb/s per GPU
    assert {s.name: s.gbps for s in f.stages}["storage targets' ports"] == 64 * 4 * 200


def test_with_three_tiers_and_the_ends_in_different_pods_the_superspine_crossing_is_a_stage() -> None:
    """One unit per pod: the GPU servers in pod 1, the storage servers in pod 2; each pod's 4 spines have one
    200G uplink each, so the crossing carries 800 Gb/s on either side."""
    doc = _with(tiers=3, pod_units=1)
    doc["planes"]["storage"]["switches"]["spine"]["uplinks"] = 1
    doc["planes"]["storage"]["switches"]["superspine"] = {
        "platform": "frr", "model": "lab-200g-32", "ports": 32, "port_speed": "200G",
    }  # fmt: skip
    f = flow(plan_doc(doc))
    assert f is not None
    stages = {s.name: s for s in f.stages}
    crossing = stages["GPU pods' spines' uplinks to the superspines"]
    assert crossing.gbps == 800
    assert crossing.detail == "4 switches: 4 uplinks of 200G"


def test_the_data_servers_leaves_are_sized_for_the_whole_demand_too() -> None:
    """GPU servers with two storage NICs spread a 320 Gb/s checkpoint over two leaves (160 each: one 200G
    uplink), but the one leaf of the data servers carries all 320: the leaves get two uplinks, and the plan
    passes (with one, the data servers' leaf would carry 200 and the checkpoint be refused)."""
    doc = _with({"checkpoint": {"size": "2.4TB", "within": "60s"}}, oversubscription="4:1")
    doc["server_groups"][0]["nics"]["storage"]["interfaces"] = ["eth3", "eth5"]
    plan = plan_doc(doc)
    assert plan.planes["storage"].sizing["leaf_uplinks"] == 2
    f = flow(plan)
    assert f is not None
    assert {s.name: s.gbps for s in f.stages}["spines' links to the storage leaves"] == 400


def test_a_demand_with_no_gpu_server_on_the_plane_is_refused_not_ignored() -> None:
    doc = _with({"read_per_gpu": "1GB/s"})
    del doc["server_groups"][0]["nics"]["storage"]
    with pytest.raises(IntentError) as refused:
        plan_doc(doc)
    assert [(p.path, p.message.split(":")[0]) for p in refused.value.problems] == [
        (("planes", "storage", "demand"), "no GPU server group has a NIC on the storage plane")
    ]
