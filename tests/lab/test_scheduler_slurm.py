"""The scheduler service against a real Slurm: munged, slurmctld and one slurmd per compute server of
the default fabric, each slurmd in a network namespace of its own (tests/slurm_cluster.py says why and
how), jobs submitted with sbatch.

- a real job on a node behind a rail leaf holds the drain until the job ends, then the leaf is free;
- the job wait running out refuses (nothing stays drained that gpufabric drained), and a node a person
  drained before stays drained, with the person's reason;
- a node whose reason a person changed while we held it is not resumed;
- a crashed controller's drains are found by their reason and put back by owner;
- `gpufabric scheduler drain` exits 4 on a refusal, 0 once the job has ended.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster import SlurmCluster, missing, slurm_cluster, wait_for

from gpufabric.scheduler import Mark, drain_for, resume, resume_owner, status
from gpufabric.scheduler.slurm import Slurm, read_jobs, read_nodes
from tests.conftest import INVENTORY, example_plan, run

pytestmark = pytest.mark.own_lab  # no lab: the Slurm harness takes its worker's names and subnet (tests/lab_slot.py)

PUSH = "gf-20261125T150000Z-5c4ed1"
LEAF = "cmp-su1-leaf1"  # gpu01 and gpu02 are behind it; gpu03 and gpu04 are not


@pytest.fixture(scope="module")
def cluster() -> Iterator[SlurmCluster]:
    if os.geteuid() != 0:
        pytest.skip("slurmd, slurmctld and network namespaces need root")
    if missing():
        pytest.skip(
            f"{', '.join(missing())} not installed (scripts/test.sh installs slurmctld, slurmd, slurm-client, munge)"
        )
    plan = example_plan(INVENTORY / "fabric.yml")
    with slurm_cluster([s.name for s in plan.servers if "compute" in s.units]) as made:
        yield made


@pytest.fixture
def slurm(cluster: SlurmCluster) -> Iterator[Slurm]:
    cluster.reset()
    yield Slurm(cluster.conf)
    cluster.reset()


@pytest.fixture
def plan():
    return example_plan(INVENTORY / "fabric.yml")


def test_a_real_job_holds_the_drain_until_it_ends(cluster, slurm, plan):
    job, stop = cluster.submit("gpu01")
    box = {}
    thread = threading.Thread(target=lambda: box.setdefault("drain", drain_for(slurm, plan, LEAF, PUSH, 600, poll=0.5)))
    thread.start()
    # Both nodes behind the leaf are drained with our reason while the job still runs ...
    wait_for(lambda: cluster.drained("gpu01") and cluster.drained("gpu02"), "gpu01 and gpu02 drained")
    assert cluster.node("gpu01")["reason"] == f"gpufabric {PUSH}: {LEAF}"
    assert cluster.node("gpu01")["state"] in ("allocated", "mixed")  # DRAINING: the job goes on
    assert not cluster.drained("gpu03") and not cluster.drained("gpu04")
    # ... and the drain does not return while it does.
    thread.join(timeout=5)
    assert thread.is_alive() and cluster.job_state(job) == "RUNNING"
    cluster.end(job, stop)
    thread.join(timeout=120)
    assert not thread.is_alive()
    drain = box["drain"]
    assert drain.clear and not drain.refused and drain.ours == ["gpu01", "gpu02"]
    assert drain.waited >= 5
    print(f"figures: the job held the drain {drain.waited:.1f} s (job {job} ended by the test)")
    resume(slurm, drain)
    assert drain.resumed == ["gpu01", "gpu02"]
    assert not cluster.drained("gpu01") and not cluster.drained("gpu02")
    assert cluster.node("gpu01")["reason"] == ""


def test_the_job_wait_running_out_refuses_and_resumes_only_ours(cluster, slurm, plan):
    cluster.command("scontrol", "update", "NodeName=gpu02", "State=DRAIN", "Reason=bad DIMM, ticket 4711")
    job, stop = cluster.submit("gpu01")
    drain = drain_for(slurm, plan, LEAF, PUSH, 3, poll=0.5)
    assert drain.refused and not drain.clear
    print(f"figures: job wait 3 s, refused after {drain.waited:.1f} s, holding {drain.holding}")
    assert drain.holding == {"gpu01": (f"job {job} running",)}
    assert drain.ours == ["gpu01"] and [(n.node, n.before) for n in drain.others] == [
        ("gpu02", "bad DIMM, ticket 4711")
    ]
    assert drain.resumed == ["gpu01"]
    # Nothing of ours is left drained; the person's drain is as they left it; the job runs on.
    assert not cluster.drained("gpu01")
    assert cluster.drained("gpu02") and cluster.node("gpu02")["reason"] == "bad DIMM, ticket 4711"
    assert cluster.job_state(job) == "RUNNING"
    cluster.end(job, stop)


def test_a_person_s_drain_before_and_during_ours_stays(cluster, slurm, plan):
    cluster.command("scontrol", "update", "NodeName=gpu02", "State=DRAIN", "Reason=bad DIMM")
    drain = drain_for(slurm, plan, LEAF, PUSH, 60, poll=0.5)
    assert drain.clear and drain.ours == ["gpu01"]
    # While we hold gpu01, a person drains it for a reason of their own.
    cluster.command("scontrol", "update", "NodeName=gpu01", "State=DRAIN", "Reason=NIC errors, alice")
    resume(slurm, drain)
    assert drain.resumed == [] and drain.kept == ["gpu01"]
    assert cluster.node("gpu01")["reason"] == "NIC errors, alice" and cluster.drained("gpu01")
    assert cluster.node("gpu02")["reason"] == "bad DIMM" and cluster.drained("gpu02")


def test_a_crashed_controller_s_drains_are_found_and_put_back(cluster, slurm, plan):
    drain_for(slurm, plan, LEAF, PUSH, 60, poll=0.5)  # and then the controller dies: the result is lost
    cluster.command("scontrol", "update", "NodeName=gpu03", "State=DRAIN", f"Reason=gpufabric {PUSH} (look-alike)")
    found = sorted((state.name, mark) for state, mark in status(slurm))
    assert found == [("gpu01", Mark(PUSH, LEAF)), ("gpu02", Mark(PUSH, LEAF))]
    assert {state.set_by for state, _ in status(slurm)} == {"root"}
    (undone,) = resume_owner(slurm, PUSH)
    assert sorted(undone.resumed) == ["gpu01", "gpu02"]
    assert not cluster.drained("gpu01") and cluster.drained("gpu03")


def test_the_command_line_refuses_with_exit_1_then_goes_once_the_job_ends(cluster, slurm):
    job, stop = cluster.submit("gpu02")
    args = ("gpufabric", "scheduler", "drain", "--device", LEAF, "--slurm-conf", str(cluster.conf), "--no-kubernetes")
    refused = run(*args, "--job-wait", "2", "--json")
    assert refused.returncode == 4, refused.stderr
    (drain,) = json.loads(refused.stdout)
    assert drain["refused"] and drain["holding"] == {"gpu02": [f"job {job} running"]}
    assert not cluster.drained("gpu01") and not cluster.drained("gpu02")
    cluster.end(job, stop)
    done = run(*args, "--job-wait", "60", "--owner", PUSH)
    assert done.returncode == 0, done.stderr
    assert cluster.drained("gpu01") and cluster.drained("gpu02")
    listed = run("gpufabric", "scheduler", "status", "--slurm-conf", str(cluster.conf), "--json")
    assert [(r["node"], r["owner"], r["subject"]) for r in json.loads(listed.stdout)] == [
        ("gpu01", PUSH, LEAF),
        ("gpu02", PUSH, LEAF),
    ]
    back = run("gpufabric", "scheduler", "resume", "--owner", PUSH, "--slurm-conf", str(cluster.conf))
    assert back.returncode == 0, back.stderr
    assert not cluster.drained("gpu01") and not cluster.drained("gpu02")


def test_slurm_s_own_answers_read_as_meant_and_can_be_recorded(cluster, slurm):
    """A job on gpu01, gpu01 drained with our mark, gpu02 by a person: Slurm's real JSON, read by the
    reader the service uses. With GPUFABRIC_RECORD_SLURM=<folder> the answers are written there
    (tests/recorded/slurm/ holds such a recording, read offline by tests/scheduler/test_slurm_recorded.py)."""
    cluster.command("scontrol", "update", "NodeName=gpu02", "State=DRAIN", "Reason=bad DIMM")
    job, stop = cluster.submit("gpu01")
    cluster.command("scontrol", "update", "NodeName=gpu01", "State=DRAIN", f"Reason=gpufabric {PUSH}: {LEAF}")
    sinfo = cluster.command("sinfo", "--json").stdout
    squeue = cluster.command("squeue", "--json").stdout
    nodes, jobs = read_nodes(sinfo), read_jobs(squeue)
    assert nodes["gpu01"].out and nodes["gpu01"].mark == Mark(PUSH, LEAF) and nodes["gpu01"].holders
    assert nodes["gpu02"].out and nodes["gpu02"].mark is None and nodes["gpu02"].reason == "bad DIMM"
    assert not nodes["gpu03"].out and not nodes["gpu03"].holders
    assert jobs == {"gpu01": [f"job {job} running"]}
    keep = os.environ.get("GPUFABRIC_RECORD_SLURM")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / "sinfo-22.05.json").write_text(sinfo)
        (Path(keep) / "squeue-22.05.json").write_text(squeue)
    cluster.end(job, stop)
