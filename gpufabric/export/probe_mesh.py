"""The probe mesh for Kubernetes: the probe plan as a ConfigMap and a DaemonSet that runs `gpufabric probe serve`
on every node of a RoCE plane (the probe_mesh host role runs the same as a systemd unit).

- The pod uses the host's network (`hostNetwork`): probes leave from the node's own RoCE NIC addresses and the
  responders listen on them. It runs as nobody, with no capability and a read-only root: a UDP socket above
  port 1024 with IP_TOS set needs none.
- The plan is the whole fabric's, gzip-compressed, in one ConfigMap (`binaryData`); each pod reads its node's
  share by the node's name (the downward API's `spec.nodeName`, which is the plan's server name: the hosts'
  names are the plan's). A ConfigMap holds at most 1 MiB: a plan above that is refused, with what to do.
- The DaemonSet selects the nodes the `k8s-labels` export labels with a leaf on a probed plane and rail, and
  tolerates the GPU Operator's `nvidia.com/gpu` taint. Prometheus finds the pods by their annotations.
"""

from __future__ import annotations

import base64
import gzip
from typing import Any

from gpufabric.errors import GpufabricError
from gpufabric.export.header import comment_text
from gpufabric.export.k8s_labels import DOMAIN, labels
from gpufabric.export.probe_plan import PORT, probe_plan
from gpufabric.export.yaml_out import dump_yaml
from gpufabric.outputs import json_dumps
from gpufabric.plan.model import Plan

NAMESPACE = "gpufabric"
NAME = "gpufabric-probe-mesh"
IMAGE = "gpufabric:local"  # the image you build with gpufabric installed; set yours (kustomize `images:`)
METRICS_PORT = 9111
PLAN_KEY = "probes.json.gz"
CONFIGMAP_LIMIT = 1 << 20  # bytes: etcd's limit on one object, as Kubernetes documents for a ConfigMap
MOUNT = "/etc/gpufabric/probes"


class ProbeMeshError(ValueError, GpufabricError):
    """No probe mesh for this plan in Kubernetes (no RoCE plane, or a plan too large for a ConfigMap)."""


def _meta(plan: Plan, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": NAMESPACE,
        "labels": {"app.kubernetes.io/name": NAME, f"{DOMAIN}/cluster": plan.intent.fabric.name},
    }


def config_map(plan: Plan, compressed: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(plan, f"{NAME}-plan"),
        "binaryData": {PLAN_KEY: base64.b64encode(compressed).decode()},
    }


def daemon_set(plan: Plan, label_keys: list[str]) -> dict[str, Any]:
    selector = {"app.kubernetes.io/name": NAME}
    container = {
        "name": "probe",
        "image": IMAGE,
        "command": ["gpufabric", "probe", "serve"],
        "args": ["--plan", f"{MOUNT}/{PLAN_KEY}", "--node", "$(NODE_NAME)", "--listen", f"0.0.0.0:{METRICS_PORT}"],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "resources": {
            "requests": {"cpu": "20m", "memory": "64Mi"},
            "limits": {"cpu": "200m", "memory": "256Mi"},
        },
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "plan", "mountPath": MOUNT, "readOnly": True}],
    }
    terms = [{"matchExpressions": [{"key": key, "operator": "Exists"}]} for key in label_keys]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": _meta(plan, NAME),
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
            "template": {
                "metadata": {
                    "labels": selector,
                    "annotations": {
                        "prometheus.io/scrape": "true",
                        "prometheus.io/port": str(METRICS_PORT),
                    },
                },
                "spec": {
                    "hostNetwork": True,
                    "dnsPolicy": "ClusterFirstWithHostNet",
                    "automountServiceAccountToken": False,
                    "nodeSelector": {f"{DOMAIN}/cluster": plan.intent.fabric.name},
                    "affinity": {
                        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
                    },
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [container],
                    "volumes": [{"name": "plan", "configMap": {"name": f"{NAME}-plan"}}],
                },
            },
        },
    }


def documents(plan: Plan) -> list[dict[str, Any]]:
    found = probe_plan(plan)
    if not found.responders:
        raise ProbeMeshError("no plane of the plan carries RoCE (carries_roce): the probe mesh has nothing to probe")
    text = json_dumps(found.as_dict(), separators=(",", ":"), sort_keys=True)
    compressed = gzip.compress(text.encode(), mtime=0)
    if len(base64.b64encode(compressed)) > CONFIGMAP_LIMIT - 4096:
        raise ProbeMeshError(
            f"the probe plan is {len(compressed)} bytes compressed, more than a ConfigMap holds (1 MiB): write it "
            "with `gpufabric probe plan` and deliver it to the nodes (the probe_mesh role does) instead"
        )
    probed = set(found.responders)
    roce = tuple(f"{DOMAIN}/{name}-" for name, plane in plan.planes.items() if plane.carries_roce)
    keys = sorted(
        {
            key
            for node, node_labels in labels(plan).items()
            if node in probed
            for key in node_labels
            if key.endswith("-leaf") and key.startswith(roce)
        }
    )
    return [config_map(plan, compressed), daemon_set(plan, keys)]


def render(plan: Plan) -> str:
    head = (
        f"# gpufabric probe mesh for {comment_text(plan.intent.fabric.name)}: a ConfigMap with the probe plan and a "
        f"DaemonSet running `gpufabric probe serve` (UDP {PORT}, metrics {METRICS_PORT}).\n"
        f"# Namespace {NAMESPACE} (create it first); image {IMAGE}: set the image you build.\n"
    )
    return head + "---\n".join(dump_yaml(d) for d in documents(plan))
