"""`gpufabric scheduler` as a person runs it, against the Kubernetes API server's TEST DOUBLE
(tests/kubernetes_api_double.py): behind, drain (exit 0 free, 1 refused), status, resume."""

from __future__ import annotations

import json

import pytest
from kubernetes_api_double import Budget, Cluster, api_server

from tests.conftest import run_in_process

TOKEN = "canary-token-41c2"
OWNER = "gf-20261125T140000Z-0a0b0c"


def cluster():
    c = Cluster(token=TOKEN)
    for name in ("gpu01", "gpu02", "gpu03", "gpu04"):
        c.add_node(name)
    c.add_pod("train", "job-a-0", "gpu01", {"nvidia.com/compute_rail1": "1"}, labels={"job": "a"})
    return c


def k8s(api):
    return ["--no-slurm", "--k8s-api", api.url, "--k8s-token-env", "GF_K8S_TOKEN", "--k8s-ca-file", str(api.ca_file)]


def test_behind_lists_a_rail_leaf_s_servers_as_json():
    done = run_in_process(
        "gpufabric", "scheduler", "behind", "--device", "cmp-su1-leaf1", "--device", "cmp-spine1", "--json"
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert [s["name"] for s in got["cmp-su1-leaf1"]] == ["gpu01", "gpu02"]
    assert got["cmp-spine1"] == []


@pytest.mark.slow  # the command line run end to end, several times: seconds; in the whole suite
def test_drain_status_and_resume_through_the_command_line(tmp_path):
    c = cluster()
    with api_server(c, tmp_path) as api:
        done = run_in_process(
            "gpufabric",
            "scheduler",
            "drain",
            "--device",
            "cmp-su1-leaf1",
            "--owner",
            OWNER,
            "--job-wait",
            "120",
            *k8s(api),
            "--json",
            GF_K8S_TOKEN=TOKEN,
        )
        assert done.returncode == 0, done.stderr
        (drain,) = json.loads(done.stdout)
        assert drain["scheduler"] == "kubernetes" and drain["mark"] == f"gpufabric {OWNER}: cmp-su1-leaf1"
        assert [n["node"] for n in drain["nodes"] if n["ours"]] == ["gpu01", "gpu02"]
        assert ("train", "job-a-0") not in c.pods
        listed = run_in_process("gpufabric", "scheduler", "status", *k8s(api), "--json", GF_K8S_TOKEN=TOKEN)
        assert listed.returncode == 0, listed.stderr
        assert [(r["node"], r["owner"]) for r in json.loads(listed.stdout)] == [("gpu01", OWNER), ("gpu02", OWNER)]
        back = run_in_process("gpufabric", "scheduler", "resume", "--owner", OWNER, *k8s(api), GF_K8S_TOKEN=TOKEN)
        assert back.returncode == 0, back.stderr
        assert "2 node(s) put back" in back.stderr
    assert not any(n["spec"].get("unschedulable") for n in c.nodes.values())
    for done in (listed, back):
        assert TOKEN not in done.stdout + done.stderr


def test_a_drain_whose_wait_runs_out_is_refused_and_undone(tmp_path):
    c = cluster()
    c.budgets.append(Budget("train", {"job": "a"}, 0))
    with api_server(c, tmp_path) as api:
        done = run_in_process(
            "gpufabric",
            "scheduler",
            "drain",
            "--device",
            "cmp-su1-leaf1",
            "--job-wait",
            "0",
            *k8s(api),
            GF_K8S_TOKEN=TOKEN,
        )
    assert done.returncode == 4, done.stderr
    assert "refused" in done.stderr and "train/job-a-0" in done.stderr
    assert not any(n["spec"].get("unschedulable") for n in c.nodes.values())
    assert ("train", "job-a-0") in c.pods


def test_an_owner_that_could_not_be_a_mark_is_bad_input():
    done = run_in_process("gpufabric", "scheduler", "resume", "--owner", "a b", "--no-slurm")
    assert done.returncode == 2 and "--owner" in done.stderr
