"""The scheduler service against Kubernetes: cordon, evict the pods holding the plan's RDMA rails
(through the Eviction API, waiting while a PodDisruptionBudget answers 429), uncordon only what we
cordoned. Run against tests/kubernetes_api_double.py, a TEST DOUBLE of the API server written from
the API reference: no real API server runs here."""

from __future__ import annotations

import threading

import pytest
from kubernetes_api_double import Budget, Cluster, api_server

from gpufabric.scheduler import Mark, SchedulerError, drain_for, resume, resume_owner, status
from gpufabric.scheduler.kubernetes import ANNOTATION, Kubernetes
from gpufabric.scheduler.reach import rdma_resources
from tests.conftest import INVENTORY, example_plan

PUSH = "gf-20261125T140000Z-abc123"
TOKEN = "canary-token-7f3e9d"
RAIL1 = {"nvidia.com/compute_rail1": "1", "nvidia.com/compute_rail2": "1"}


class Clock:
    """Time that moves only when the service sleeps: a wait that runs out does so at once, on any load."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class Lines:
    def __init__(self):
        self.said, self.warned = [], []

    def say(self, text):
        self.said.append(text)

    def warn(self, text):
        self.warned.append(text)


@pytest.fixture
def plan():
    return example_plan(INVENTORY / "fabric.yml")


def cluster() -> Cluster:
    c = Cluster(token=TOKEN)
    for name in ("gpu01", "gpu02", "gpu03", "gpu04"):
        c.add_node(name)
    c.add_pod("train", "job-a-0", "gpu01", RAIL1, labels={"job": "a"})
    c.add_pod("train", "job-b-0", "gpu03", RAIL1, labels={"job": "b"})
    c.add_pod("web", "no-rdma", "gpu01", {"cpu": "1"})
    c.add_pod("kube-system", "rdma-agent", "gpu01", RAIL1, owner="DaemonSet")
    c.add_pod("train", "done", "gpu02", RAIL1, phase="Succeeded")
    return c


def client(api, plan, token_env="GF_TEST_K8S_TOKEN"):
    return Kubernetes(api.url, rdma_resources(plan), token_env, api.ca_file)


def test_the_plan_s_rdma_resources_are_the_export_s(plan):
    assert rdma_resources(plan) == ["nvidia.com/compute_rail1", "nvidia.com/compute_rail2"]


def test_cordon_evict_and_uncordon_only_ours(plan, monkeypatch, tmp_path):
    monkeypatch.setenv("GF_TEST_K8S_TOKEN", TOKEN)
    c = cluster()
    c.nodes["gpu02"]["spec"]["unschedulable"] = True  # a person cordoned it, without a word
    clock, lines = Clock(), Lines()
    with api_server(c, tmp_path) as api:
        k8s = client(api, plan)
        drain = drain_for(k8s, plan, "cmp-su1-leaf1", PUSH, 600, watcher=lines, clock=clock, sleep=clock.sleep)
        assert drain.clear and not drain.refused
        assert drain.ours == ["gpu01"] and [n.node for n in drain.others] == ["gpu02"]
        assert c.nodes["gpu01"]["spec"]["unschedulable"] is True
        assert c.nodes["gpu01"]["metadata"]["annotations"][ANNOTATION] == f"gpufabric {PUSH}: cmp-su1-leaf1"
        # The RDMA pod left through the Eviction API; the others stay.
        assert ("train", "job-a-0") not in c.pods
        assert {("web", "no-rdma"), ("kube-system", "rdma-agent"), ("train", "job-b-0")} <= set(c.pods)
        assert ("POST", "/api/v1/namespaces/train/pods/job-a-0/eviction", True) in c.calls
        assert all(authorised for _, _, authorised in c.calls)
        assert "gpu01: train/job-a-0 evicted" in drain.notes
        # Nodes of the other unit were never touched.
        assert not any(path.endswith(("gpu03", "gpu04")) for method, path, _ in c.calls if method == "PATCH")
        resume(k8s, drain, lines)
    assert drain.resumed == ["gpu01"]
    assert "unschedulable" not in c.nodes["gpu01"]["spec"]
    assert ANNOTATION not in c.nodes["gpu01"]["metadata"]["annotations"]
    assert c.nodes["gpu02"]["spec"]["unschedulable"] is True  # the person's cordon stays


def test_a_pod_disruption_budget_makes_the_drain_wait(plan, monkeypatch, tmp_path):
    monkeypatch.setenv("GF_TEST_K8S_TOKEN", TOKEN)
    c = cluster()
    budget = Budget("train", {"job": "a"}, 0)
    c.budgets.append(budget)
    c.terminating_reads = 2  # the pod shows as terminating twice before it is gone
    clock, opened = Clock(), []

    def sleep(seconds):
        clock.sleep(seconds)
        if c.blocked == 3 and not opened:  # the budget allows a disruption once the job's other replica is back
            opened.append(True)
            with c.lock:
                budget.disruptions_allowed = 1

    with api_server(c, tmp_path) as api:
        drain = drain_for(client(api, plan), plan, "cmp-su1-leaf1", PUSH, 600, clock=clock, sleep=sleep)
    assert drain.clear and c.blocked == 3
    assert "gpu01: eviction of train/job-a-0 blocked by a PodDisruptionBudget: waiting" in drain.notes
    assert "gpu01: train/job-a-0 evicted" in drain.notes
    assert ("train", "job-a-0") not in c.pods
    assert budget.disruptions_allowed == 0
    assert drain.waited >= 3 * 2.0


def test_the_wait_running_out_refuses_and_uncordons_ours(plan, monkeypatch, tmp_path):
    monkeypatch.setenv("GF_TEST_K8S_TOKEN", TOKEN)
    c = cluster()
    c.budgets.append(Budget("train", {"job": "a"}, 0))  # never allows
    c.nodes["gpu02"]["spec"]["unschedulable"] = True
    clock, lines = Clock(), Lines()
    with api_server(c, tmp_path) as api:
        drain = drain_for(
            client(api, plan), plan, "cmp-su1-leaf1", PUSH, 30, watcher=lines, clock=clock, sleep=clock.sleep
        )
    assert drain.refused and not drain.clear
    assert drain.holding == {"gpu01": ("train/job-a-0",)}
    assert drain.resumed == ["gpu01"] and "unschedulable" not in c.nodes["gpu01"]["spec"]
    assert c.nodes["gpu02"]["spec"]["unschedulable"] is True
    assert ("train", "job-a-0") in c.pods
    assert any("refused" in w for w in lines.warned)
    assert 30 <= drain.waited <= 32


def test_force_goes_on_loudly(plan, monkeypatch, tmp_path):
    monkeypatch.setenv("GF_TEST_K8S_TOKEN", TOKEN)
    c = cluster()
    c.budgets.append(Budget("train", {"job": "a"}, 0))
    clock, lines = Clock(), Lines()
    with api_server(c, tmp_path) as api:
        drain = drain_for(
            client(api, plan),
            plan,
            "cmp-su1-leaf1",
            PUSH,
            10,
            force=True,
            watcher=lines,
            clock=clock,
            sleep=clock.sleep,
        )
    assert drain.forced and drain.clear and not drain.refused
    assert drain.ours == ["gpu01", "gpu02"] and c.nodes["gpu01"]["spec"]["unschedulable"] is True
    assert any(w.startswith("FORCED:") and "train/job-a-0" in w for w in lines.warned)


def test_a_node_recordoned_by_a_person_stays_cordoned(plan, monkeypatch, tmp_path):
    monkeypatch.setenv("GF_TEST_K8S_TOKEN", TOKEN)
    c = cluster()
    clock = Clock()
    with api_server(c, tmp_path) as api:
        k8s = client(api, plan)
        drain = drain_for(k8s, plan, "cmp-su1-leaf1", PUSH, 600, clock=clock, sleep=clock.sleep)
        c.nodes["gpu01"]["metadata"]["annotations"][ANNOTATION] = "bad NIC, alice"
        resume(k8s, drain)
    assert drain.kept == ["gpu01"] and drain.resumed == ["gpu02"]
    assert c.nodes["gpu01"]["spec"]["unschedulable"] is True


def test_a_crashed_push_s_cordons_are_found_and_undone(plan, monkeypatch, tmp_path):
    monkeypatch.setenv("GF_TEST_K8S_TOKEN", TOKEN)
    c = cluster()
    c.add_node("gpu05", unschedulable=True, annotations={ANNOTATION: "gpufabric gf-20261125T120000Z-000001: x"})
    c.add_node("gpu06", unschedulable=True, annotations={ANNOTATION: "not ours"})
    clock = Clock()
    with api_server(c, tmp_path) as api:
        k8s = client(api, plan)
        drain_for(k8s, plan, "cmp-su1-leaf1", PUSH, 600, clock=clock, sleep=clock.sleep)  # ... and then it crashes
        found = status(k8s)
        assert sorted((s.name, m.owner) for s, m in found) == [
            ("gpu01", PUSH),
            ("gpu02", PUSH),
            ("gpu05", "gf-20261125T120000Z-000001"),
        ]
        undone = resume_owner(k8s, PUSH)
    assert sorted(n for d in undone for n in d.resumed) == ["gpu01", "gpu02"]
    assert "unschedulable" not in c.nodes["gpu01"]["spec"]
    assert c.nodes["gpu05"]["spec"]["unschedulable"] is True and c.nodes["gpu06"]["spec"]["unschedulable"] is True


def test_the_token_is_sent_but_never_shown(plan, monkeypatch, tmp_path):
    c = cluster()
    with api_server(c, tmp_path) as api:
        monkeypatch.delenv("GF_TEST_K8S_TOKEN", raising=False)
        with pytest.raises(SchedulerError, match="GF_TEST_K8S_TOKEN is not set"):
            client(api, plan).nodes(["gpu01"])
        monkeypatch.setenv("GF_TEST_K8S_TOKEN", "wrong-" + TOKEN)
        with pytest.raises(SchedulerError) as caught:
            client(api, plan).nodes(["gpu01"])
    assert "401" in str(caught.value) and TOKEN not in str(caught.value)
    assert c.calls[-1][2] is False


def test_a_node_the_cluster_does_not_know_is_left_alone(plan, monkeypatch, tmp_path):
    monkeypatch.setenv("GF_TEST_K8S_TOKEN", TOKEN)
    c = Cluster(token=TOKEN)
    c.add_node("gpu01")
    clock = Clock()
    with api_server(c, tmp_path) as api:
        drain = drain_for(client(api, plan), plan, "sto-leaf1", PUSH, 600, clock=clock, sleep=clock.sleep)
    assert drain.ours == ["gpu01"] and drain.unknown == ["gpu02", "gpu03", "gpu04"]


@pytest.mark.parametrize("api", ["http://10.0.0.1:6443", "ftp://127.0.0.1", "https://", "https://h:1/path"])
def test_an_api_address_that_would_leak_or_is_not_one_is_refused(api):
    with pytest.raises(SchedulerError):
        Kubernetes(api, [])


def test_a_cordon_races_a_change_and_reads_again(plan, monkeypatch, tmp_path):
    """A node changed between our read and our patch (409) is read again, not overwritten."""
    monkeypatch.setenv("GF_TEST_K8S_TOKEN", TOKEN)
    c = cluster()
    with api_server(c, tmp_path) as api:
        k8s = client(api, plan)
        real = k8s._node
        first = threading.Event()

        def node_then_change(name):
            found = real(name)
            if not first.is_set():
                first.set()
                with c.lock:
                    c.nodes[name]["metadata"]["labels"] = {"changed": "yes"}
                    c.nodes[name]["metadata"]["resourceVersion"] = c.version()
            return found

        monkeypatch.setattr(k8s, "_node", node_then_change)
        k8s.take_out("gpu01", Mark(PUSH, "cmp-su1-leaf1"))
    assert c.nodes["gpu01"]["spec"]["unschedulable"] is True
    assert c.nodes["gpu01"]["metadata"]["labels"] == {"changed": "yes"}
    assert [m for m, p, _ in c.calls if p == "/api/v1/nodes/gpu01"].count("PATCH") == 2
