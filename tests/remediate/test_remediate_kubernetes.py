"""The remediation loop against Kubernetes: a cordon with gpufabric's annotation, no eviction, the
uncordon after the hold-down, a person's cordon left alone. Run against tests/kubernetes_api_double.py,
a TEST DOUBLE of the API server written from the API reference: no real API server runs here."""

from __future__ import annotations

import json

from kubernetes_api_double import Cluster, api_server

from gpufabric.remediate import Guards, Remediator, parse_payload
from gpufabric.scheduler.kubernetes import ANNOTATION, Kubernetes
from gpufabric.scheduler.reach import rdma_resources
from tests.conftest import INVENTORY, example_plan
from tests.remediate.remediate_fakes import alert, payload

TOKEN = "canary-token-remediate"


def test_a_cable_alert_cordons_its_node_and_the_hold_down_uncordons_it(tmp_path, monkeypatch):
    monkeypatch.setenv("GF_TEST_K8S_TOKEN", TOKEN)
    plan = example_plan(INVENTORY / "fabric.yml")
    cluster = Cluster(token=TOKEN)
    for name in ("gpu01", "gpu02", "gpu03", "gpu04"):
        cluster.add_node(name)
    cluster.add_pod("train", "job-a-0", "gpu01", {"nvidia.com/compute_rail1": "1"})
    cluster.nodes["gpu02"]["spec"]["unschedulable"] = True  # a person cordoned it
    now = [1_790_000_000.0]
    with api_server(cluster, tmp_path) as api:
        k8s = Kubernetes(api.url, rdma_resources(plan), "GF_TEST_K8S_TOKEN", api.ca_file)
        loop = Remediator(
            plan, [k8s], Guards(1.0, 1.0, 300.0), state_path=tmp_path / "s.json", audit_path=tmp_path / "a.jsonl",
            clock=lambda: now[0],
        )  # fmt: skip
        down = alert("GpufabricSwitchUnreachable", device="cmp-su1-leaf1")
        loop.handle(parse_payload(json.dumps(payload(down)).encode()))
        gpu01 = cluster.nodes["gpu01"]
        assert gpu01["spec"]["unschedulable"] is True
        assert gpu01["metadata"]["annotations"][ANNOTATION] == (
            "gpufabric remediate: GpufabricSwitchUnreachable@cmp-su1-leaf1"
        )
        assert ANNOTATION not in cluster.nodes["gpu02"]["metadata"]["annotations"]
        assert ("PATCH", "/api/v1/nodes/gpu01", True) in cluster.calls
        assert not any(path.endswith("/eviction") for _, path, _ in cluster.calls)  # running pods stay
        assert ("train", "job-a-0") in cluster.pods
        loop.handle(parse_payload(json.dumps(payload({**down, "status": "resolved"})).encode()))
        now[0] += 300
        actions = loop.tick()
        assert [(a.action, a.nodes) for a in actions] == [("resume", ("gpu01",))]
        assert not cluster.nodes["gpu01"]["spec"].get("unschedulable")
        assert cluster.nodes["gpu02"]["spec"]["unschedulable"] is True
