"""Slurm 22.05's own answers, recorded from a real slurmctld with one slurmd per node
(tests/slurm_cluster.py, by tests/lab/test_scheduler_slurm.py with GPUFABRIC_RECORD_SLURM set): a
job running on gpu01, gpu01 drained with a gpufabric mark while it runs, gpu02 drained by a person,
gpu03 and gpu04 idle; squeue still lists the job an earlier test ran on gpu02, COMPLETED (an ended
job stays listed for MinJobAge). The reader the service uses must take them as Slurm meant them."""

from __future__ import annotations

import json
from pathlib import Path

from gpufabric.scheduler import Mark
from gpufabric.scheduler.slurm import read_jobs, read_nodes

RECORDED = Path(__file__).resolve().parents[1] / "recorded" / "slurm"
PUSH = "gf-20261125T150000Z-5c4ed1"


def test_the_recorded_sinfo_reads_as_slurm_meant_it():
    nodes = read_nodes((RECORDED / "sinfo-22.05.json").read_text())
    assert sorted(nodes) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert nodes["gpu01"].out and nodes["gpu01"].mark == Mark(PUSH, "cmp-su1-leaf1")
    assert nodes["gpu01"].set_by == "root" and nodes["gpu01"].holders  # draining: the job still runs there
    assert nodes["gpu02"].out and nodes["gpu02"].mark is None and nodes["gpu02"].reason == "bad DIMM"
    assert not nodes["gpu02"].holders
    assert not nodes["gpu03"].out and not nodes["gpu03"].holders and nodes["gpu03"].reason == ""


def test_the_recorded_squeue_running_job_holds_its_node_and_the_ended_one_nothing():
    text = (RECORDED / "squeue-22.05.json").read_text()
    records = {r["job_state"]: r for r in json.loads(text)["jobs"]}
    assert sorted(records) == ["COMPLETED", "RUNNING"]
    assert records["RUNNING"]["nodes"] == "gpu01" and records["COMPLETED"]["nodes"] == "gpu02"
    assert read_jobs(text) == {"gpu01": [f"job {records['RUNNING']['job_id']} running"]}


def test_the_recorded_running_job_holds_nothing_once_it_has_ended():
    doc = json.loads((RECORDED / "squeue-22.05.json").read_text())
    for record in doc["jobs"]:
        record["job_state"] = "COMPLETED"
    assert read_jobs(json.dumps(doc)) == {}
    doc["jobs"][0]["job_state"] = "COMPLETING"  # still on its node: it holds it
    assert list(read_jobs(json.dumps(doc))) == [doc["jobs"][0]["nodes"]]
