"""`gpufabric acceptance plan`'s storage jobs: fio and gdsio on the storage plane's file systems, each with the
figure the planned path gives (gpufabric/acceptance/storage.py)."""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from conftest import default_doc, plan_doc, run

from gpufabric.acceptance.model import ROCE_OVERHEAD, ROCE_PAYLOAD
from gpufabric.acceptance.storage import STORAGE_TOLERANCE, storage_jobs
from gpufabric.acceptance.suite import build_suite

SHARE = ROCE_PAYLOAD / (ROCE_PAYLOAD + ROCE_OVERHEAD)


def _doc(**demand: object) -> dict:
    doc = copy.deepcopy(default_doc())
    doc["planes"]["storage"]["file_systems"] = [{"name": "home", "type": "nfs", "data": ["storage"], "mount": "/home"}]
    if demand:
        doc["planes"]["storage"]["demand"] = demand
    return doc


def test_one_server_gets_its_nics_rate_and_the_cluster_the_paths_bottleneck() -> None:
    jobs = {j.id: j for j in storage_jobs(plan_doc(_doc(checkpoint={"size": "2TB", "within": "60s"})))}
    assert sorted(jobs) == [
        "fio.home.read.gpu01", "fio.home.write.cluster", "fio.home.write.gpu01",
        "gdsio.home.read.gpu01", "gdsio.home.write.gpu01",
    ]  # fmt: skip
    alone = jobs["fio.home.write.gpu01"]
    # gpu01 has one 200G storage NIC; the path carries 400G: the NIC limits, at RDMA's payload share.
    assert alone.expected == round(200 * SHARE / 8, 2)
    assert alone.threshold == round(alone.expected * STORAGE_TOLERANCE, 2)
    assert alone.limited_by == "the server's storage NICs"
    cluster = jobs["fio.home.write.cluster"]
    assert cluster.servers == ("gpu01", "gpu02", "gpu03", "gpu04")
    assert cluster.expected == round(400 * SHARE / 8, 2)  # two storage servers' 200G ports
    assert cluster.limited_by == "storage targets' ports"
    assert cluster.note == "a checkpoint of the intent's size takes 40 s at this rate"
    gds = jobs["gdsio.home.write.gpu01"]
    assert gds.command()[gds.command().index("-x") + 1] == "0"  # GPU memory straight to storage
    assert gds.command()[gds.command().index("-I") + 1] == "1"  # write


def test_a_file_system_without_gds_gets_no_gdsio_and_no_file_system_no_job() -> None:
    doc = _doc()
    doc["planes"]["storage"]["file_systems"][0]["gds"] = False
    assert {j.tool for j in storage_jobs(plan_doc(doc))} == {"fio"}
    del doc["planes"]["storage"]["file_systems"]
    assert storage_jobs(plan_doc(doc)) == []


def test_the_plan_command_lists_them_as_json(tmp_path) -> None:
    intent = tmp_path / "fabric.yml"
    intent.write_text(yaml.safe_dump(_doc(), sort_keys=False))
    done = run("gpufabric", "acceptance", "plan", str(intent), "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["counts"]["fio"] == 3 and doc["counts"]["gdsio"] == 2
    fio = next(j for j in doc["storage"] if j["id"] == "fio.home.read.gpu01")
    assert "--rw=read" in fio["command"] and "--direct=1" in fio["command"]
    assert "--directory=/home/gpufabric-acceptance/{host}" in fio["command"]


@pytest.mark.parametrize("tool", ["fio", "gdsio"])
def test_the_suite_carries_them_beside_the_pair_jobs(tool: str) -> None:
    suite = build_suite(plan_doc(_doc()))
    assert any(j.tool == tool for j in suite.storage)
    assert all(j not in suite.jobs() for j in suite.storage)  # scripts, run and report do not take them yet
