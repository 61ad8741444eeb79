"""How gpufabric finds and logs in to a cluster, through the official `kubernetes` client: a kubeconfig
file and context (--kubeconfig, --context, $KUBECONFIG), the CA by file or inline, a pod's service
account, and the intent's URL with a token variable. Against tests/kubernetes_api_double.py, a TEST
DOUBLE of the API server (no real API server runs here), served over TLS with a CA made for each run."""

from __future__ import annotations

import json

import pytest
from kubernetes_api_double import Cluster, api_server
from tls_server import make_pki

from gpufabric.scheduler import Mark, drain_for, resume
from gpufabric.scheduler import kubernetes as k8s_mod
from gpufabric.scheduler.kubernetes import ANNOTATION, Kubernetes
from gpufabric.scheduler.model import SchedulerError
from gpufabric.scheduler.reach import rdma_resources
from tests.conftest import INVENTORY, example_plan, run_in_process

TOKEN = "canary-kubeconfig-token-5d1c"
OWNER = "gf-20261127T120000Z-0c0d0e"
RAIL = {"nvidia.com/compute_rail1": "1"}


def cluster() -> Cluster:
    c = Cluster(token=TOKEN)
    for name in ("gpu01", "gpu02", "gpu03", "gpu04"):
        c.add_node(name)
    c.add_pod("train", "job-a-0", "gpu01", RAIL)
    return c


@pytest.fixture
def plan():
    return example_plan(INVENTORY / "fabric.yml")


@pytest.mark.parametrize("inline_ca", [False, True], ids=["certificate-authority", "certificate-authority-data"])
def test_maintenance_works_from_a_kubeconfig_against_the_api_server_with_a_ca(plan, tmp_path, inline_ca):
    c = cluster()
    with api_server(c, tmp_path) as api:
        config = api.kubeconfig(tmp_path / "config", TOKEN, "lab", inline_ca=inline_ca)
        k8s = Kubernetes(None, rdma_resources(plan), kubeconfig=config, context="lab")
        drain = drain_for(k8s, plan, "cmp-su1-leaf1", "gf-20261127T120000Z-000001", 60, force=False)
        assert drain.clear and drain.ours == ["gpu01", "gpu02"]
        assert c.nodes["gpu01"]["spec"]["unschedulable"] is True
        assert ("train", "job-a-0") not in c.pods or c.pods[("train", "job-a-0")]["metadata"].get("deletionTimestamp")
        resume(k8s, drain)
    assert not any(n["spec"].get("unschedulable") for n in c.nodes.values())
    assert c.calls and all(authorised for _, _, authorised in c.calls)


def test_the_context_chosen_is_the_one_used_and_an_unknown_one_is_named(plan, tmp_path):
    c = cluster()
    with api_server(c, tmp_path) as api:
        config = api.kubeconfig(tmp_path / "config", TOKEN, "lab")
        other = json.loads(config.read_text())
        other["users"].append({"name": "intruder", "user": {"token": "not-" + TOKEN}})
        other["contexts"].append({"name": "wrong", "context": {"cluster": "lab-cluster", "user": "intruder"}})
        config.write_text(json.dumps(other))
        assert Kubernetes(None, [], kubeconfig=config, context="lab").nodes(["gpu01"])["gpu01"].out is False
        with pytest.raises(SchedulerError, match="HTTP 401"):
            Kubernetes(None, [], kubeconfig=config, context="wrong").nodes(["gpu01"])
        with pytest.raises(SchedulerError, match=r"kubeconfig .*config, context nowhere: .*nowhere"):
            Kubernetes(None, [], kubeconfig=config, context="nowhere").nodes(["gpu01"])


def test_kubeconfig_from_the_environment_and_a_ca_that_is_not_the_server_s(tmp_path, monkeypatch):
    c = cluster()
    with api_server(c, tmp_path) as api:
        config = api.kubeconfig(tmp_path / "config", TOKEN, "lab")
        monkeypatch.setenv("KUBECONFIG", str(config))
        assert Kubernetes(None, []).marked() == []
        stranger = make_pki(tmp_path, "127.0.0.1", "stranger")  # --k8s-ca-file replaces the kubeconfig's CA
        with pytest.raises(SchedulerError, match=r"TLS: .*certificate verify failed"):
            Kubernetes(None, [], ca_file=stranger.ca_file).marked()
    assert all(authorised for _, _, authorised in c.calls)
    assert len(c.calls) == 1  # the stranger's handshake failed before anything was sent


def test_a_kubeconfig_that_is_not_one_is_named(tmp_path):
    bad = tmp_path / "config"
    bad.write_text("clusters: [unclosed\n")
    with pytest.raises(SchedulerError, match=f"kubernetes: the kubeconfig {bad}"):
        Kubernetes(None, [], kubeconfig=bad).marked()
    with pytest.raises(SchedulerError, match=r"kubernetes: the kubeconfig .*missing"):
        Kubernetes(None, [], kubeconfig=tmp_path / "missing").marked()


def test_a_kubeconfig_with_plain_http_elsewhere_a_proxy_or_no_tls_check_is_refused(tmp_path):
    config = tmp_path / "config"
    doc = {
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": "http://10.0.0.1:6443"}}],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    }  # fmt: skip
    config.write_text(json.dumps(doc))
    with pytest.raises(SchedulerError, match="plain HTTP would carry the token in clear"):
        Kubernetes(None, [], kubeconfig=config).marked()
    doc["clusters"][0]["cluster"] = {"server": "https://127.0.0.1:6443", "proxy-url": "http://127.0.0.1:3128"}
    config.write_text(json.dumps(doc))
    with pytest.raises(SchedulerError, match="names a proxy"):
        Kubernetes(None, [], kubeconfig=config).marked()
    doc["clusters"][0]["cluster"] = {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True}
    config.write_text(json.dumps(doc))
    with pytest.raises(SchedulerError, match="insecure-skip-tls-verify"):
        Kubernetes(None, [], kubeconfig=config).marked()


def test_in_the_cluster_the_pod_s_service_account_logs_in(tmp_path, monkeypatch):
    c = cluster()
    account = tmp_path / "serviceaccount"
    account.mkdir()
    with api_server(c, tmp_path) as api:
        (account / "token").write_text(TOKEN)
        (account / "ca.crt").write_bytes(api.ca_file.read_bytes())
        monkeypatch.setattr(k8s_mod, "SERVICE_ACCOUNT", account)
        monkeypatch.delenv("KUBECONFIG", raising=False)
        host, port = api.url.removeprefix("https://").split(":")
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
        k8s = Kubernetes(None, [])
        k8s.take_out("gpu03", Mark(OWNER, "cmp-su1-leaf2"))
        assert c.nodes["gpu03"]["metadata"]["annotations"][ANNOTATION] == f"gpufabric {OWNER}: cmp-su1-leaf2"
        assert k8s.get("/api/v1/nodes/gpu03")["spec"]["unschedulable"] is True
    assert all(authorised for _, _, authorised in c.calls)


@pytest.mark.slow  # the command line run end to end: seconds; in the whole suite
def test_the_command_line_drains_and_resumes_through_a_kubeconfig(tmp_path):
    c = cluster()
    with api_server(c, tmp_path) as api:
        config = api.kubeconfig(tmp_path / "config", TOKEN, "lab")
        where = ["--no-slurm", "--kubernetes", "--kubeconfig", str(config), "--context", "lab"]
        done = run_in_process(
            "gpufabric", "scheduler", "drain", "--device", "cmp-su1-leaf1", "--owner", OWNER, "--job-wait", "60",
            *where, "--json",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert c.nodes["gpu02"]["metadata"]["annotations"][ANNOTATION] == f"gpufabric {OWNER}: cmp-su1-leaf1"
        back = run_in_process("gpufabric", "scheduler", "resume", "--owner", OWNER, *where)
        assert back.returncode == 0, back.stderr
        nowhere = run_in_process("gpufabric", "scheduler", "status", *where[:3], str(tmp_path / "none"))
        assert nowhere.returncode == 2 and "kubeconfig" in nowhere.stderr and "Traceback" not in nowhere.stderr
    assert not any(n["spec"].get("unschedulable") for n in c.nodes.values())
    for out in (done, back):
        assert TOKEN not in out.stdout + out.stderr
