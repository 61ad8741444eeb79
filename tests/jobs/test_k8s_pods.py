"""`job show --k8s-job` / `--selector` and `job timeline --k8s-job`: a Kubernetes job's pods, listed by label
through the Kubernetes client's request path, against the TEST DOUBLE of the API server
(tests/kubernetes_api_double.py, written from the Kubernetes API reference: no real API server runs here)."""

from __future__ import annotations

import json

import pytest

from gpufabric.jobs.k8s_pods import PodLookupError, checked_selector, job_selector, pod_nodes
from tests.conftest import INVENTORY, run_in_process
from tests.kubernetes_api_double import Cluster, api_server

RDMA = {"nvidia.com/compute_rail1": "1"}


def _cluster() -> Cluster:
    cluster = Cluster(token="s3cret-token")
    job = {"batch.kubernetes.io/job-name": "llama", "job-name": "llama"}
    cluster.add_pod("training", "llama-0", "gpu03", RDMA, job, started="2026-11-27T10:02:00Z")
    cluster.add_pod("training", "llama-1", "gpu01", RDMA, job, started="2026-11-27T10:01:30Z")
    cluster.add_pod("training", "llama-2", "gpu03", RDMA, job, started="2026-11-27T10:02:05Z")  # 2 pods on gpu03
    cluster.add_pod("training", "llama-3", "gpu02", RDMA, job, phase="Succeeded")  # finished: holds no node
    cluster.add_pod("training", "llama-4", "", RDMA, job, phase="Pending")  # not bound yet
    cluster.add_pod("training", "other-0", "gpu04", RDMA, {"app": "other"})
    cluster.add_pod("research", "llama-0", "gpu04", RDMA, job)  # another namespace's job of the same name
    return cluster


def _show(served, *args: str, token: str = "s3cret-token"):
    return run_in_process("gpufabric", "job", "show", *args, "--intent", INVENTORY / "fabric.yml", "--k8s-api",
                          served.url, "--k8s-ca-file", served.ca_file, "--k8s-token-env", "GF_K8S_TOKEN", "--json",
                          GF_K8S_TOKEN=token)  # fmt: skip


def test_a_kubernetes_job_s_pods_place_it_on_their_nodes(tmp_path):
    cluster = _cluster()
    with api_server(cluster, tmp_path) as url:
        done = _show(url, "--k8s-job", "training/llama")
        by_label = _show(url, "--selector", "app=other", "--namespace", "training")
        not_other = _show(url, "--selector", "job-name=llama,app!=other", "--namespace", "training")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["nodes"] == ["gpu03", "gpu01"]  # listed order, each once; no gpu02, gpu04
    assert {n["leaf"] for n in json.loads(done.stdout)["nics"] if n["plane"] == "compute"} == {
        "cmp-su1-leaf1", "cmp-su1-leaf2", "cmp-su2-leaf1", "cmp-su2-leaf2",
    }  # fmt: skip
    assert json.loads(by_label.stdout)["nodes"] == ["gpu04"]
    assert json.loads(not_other.stdout)["nodes"] == ["gpu03", "gpu01"]
    paths = [(m, p) for m, p, ok in cluster.calls if ok]
    assert paths == [("GET", "/api/v1/namespaces/training/pods")] * 3  # nothing else asked, every call authorised
    assert "s3cret-token" not in done.stdout + done.stderr


def test_a_timeline_of_a_kubernetes_job_starts_at_its_first_pod(tmp_path):
    """Logged in from a kubeconfig (the server's address, its CA and the token), as kubectl would be."""
    with api_server(_cluster(), tmp_path) as served:
        config = served.kubeconfig(tmp_path / "kubeconfig", "s3cret-token")
        done = run_in_process("gpufabric", "job", "timeline", "--k8s-job", "training/llama", "--intent",
                              INVENTORY / "fabric.yml", "--kubeconfig", config,
                              "--audit-log", tmp_path / "none", "--remediation-log", tmp_path / "none", "--json",
                              )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["nodes"] == ["gpu03", "gpu01"] and got["since"] == "2026-11-27T10:01:30.000Z" and got["until"] is None


def test_no_running_pod_a_wrong_token_or_bad_names_are_exit_2(tmp_path):
    with api_server(_cluster(), tmp_path) as url:
        none = _show(url, "--k8s-job", "training/nobody")
        denied = _show(url, "--k8s-job", "training/llama", token="wrong")
        for args, said in [
            (["--k8s-job", "training"], "not NAMESPACE/NAME"),
            (["--k8s-job", "Training/x;rm"], "not NAMESPACE/NAME"),
            (["--selector", "app in (a,b)", "--namespace", "training"], "not an equality-based label selector"),
            (["--selector", "app=x"], "--selector and --namespace go together"),
            (["--k8s-job", "training/llama", "--nodes", "gpu01"], "(one of them)"),
        ]:
            bad = _show(url, *args)
            assert bad.returncode == 2 and said in bad.stderr and "Traceback" not in bad.stderr, (args, bad.stderr)
    assert none.returncode == 2 and "no pod of 'batch.kubernetes.io/job-name=nobody'" in none.stderr
    assert denied.returncode == 2 and "HTTP 401" in denied.stderr and "wrong" not in denied.stderr


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"kind": "Status"}, "not a PodList"),
        ({"items": [7]}, r"items\[0\]: not a Pod"),
        ({"items": [{"metadata": {"name": "p"}, "spec": {"nodeName": 5}, "status": {}}]}, "'nodeName' is not text"),
        (
            {"items": [{"metadata": {"name": "p"}, "spec": {"nodeName": "gpu01"}, "status": {"startTime": "soon"}}]},
            "not an RFC 3339 time",
        ),
        ({"items": [{"metadata": {"name": "p"}, "spec": {"nodeName": "gpu01"}, "status": []}]}, "not a Pod"),
    ],
)
def test_a_pods_answer_of_the_wrong_shape_is_named(body, message):
    with pytest.raises(PodLookupError, match=message):
        pod_nodes(body, "GET /api/v1/namespaces/x/pods")


def test_selectors_are_checked_before_they_reach_a_url():
    assert job_selector("training/llama-70b") == ("training", "batch.kubernetes.io/job-name=llama-70b")
    assert checked_selector("app=x, tier!=test", "ns") == ("ns", "app=x,tier!=test")
    for selector in ("app=x&y=1", "app=x#", "=x", "app=" + "x" * 70, ""):
        with pytest.raises(PodLookupError):
            checked_selector(selector, "ns")
    with pytest.raises(PodLookupError):
        checked_selector("app=x", "../nodes")
