"""A Kubernetes job's nodes: its pods, listed by label through the API server, and the nodes they run on.

- `GET /api/v1/namespaces/{namespace}/pods?labelSelector={selector}` (Kubernetes API reference v1.30, "list
  Pod"): a PodList; each pod's `spec.nodeName` is the node the scheduler bound it to (absent while it is
  pending), `status.phase` its phase, `status.startTime` when the kubelet took it.
- A batch/v1 Job's pods carry the label `batch.kubernetes.io/job-name=<job>` (Kubernetes 1.27 on; the
  documentation's "Job labels"): `--k8s-job NAMESPACE/NAME` is that selector. An older cluster's pods carry
  `job-name=<job>` only: `--selector job-name=NAME`.
- Pods that finished (`Succeeded`, `Failed`) hold no node; one not yet bound names none. A job none of
  whose pods holds a node is an error naming the selector, never an empty footprint.

The answer is read strictly (`pod_nodes`): a field of another type is an error naming the pod and the
field. The call goes through the Kubernetes client's own request path (gpufabric/scheduler/kubernetes.py:
the token by reference, no redirect off the API server's origin, a bounded answer); only the path is ours.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gpufabric.errors import GpufabricError
from gpufabric.scheduler.kubernetes import MAX_ITEMS, Kubernetes

JOB_LABEL = "batch.kubernetes.io/job-name"
FINISHED = frozenset({"Succeeded", "Failed"})
# A namespace is an RFC 1123 label; a Job's name a DNS subdomain (Kubernetes' "Object Names and IDs").
NAMESPACE = re.compile(r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?")
NAME = re.compile(r"[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?")
# A label selector's equality-based terms (`key=value`, `key==value`, `key!=value`, comma-joined; "Labels and
# Selectors"): a key is an optional DNS-subdomain prefix and a name of 63 characters, a value 63 characters.
_KEY = r"(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?"
TERM = re.compile(rf"{_KEY}(?:==|!=|=){_VALUE}")


class PodLookupError(GpufabricError):
    """The selector or the API server's answer cannot give the job's nodes (the message says why): exit 2."""


@dataclass(frozen=True)
class PodNodes:
    nodes: tuple[str, ...]  # in the order the pods are listed, each once
    started: datetime | None  # the earliest status.startTime of the pods holding a node


def job_selector(ref: str) -> tuple[str, str]:
    """`NAMESPACE/NAME` of a batch/v1 Job -> (namespace, the label selector of its pods)."""
    namespace, _, name = ref.partition("/")
    if not NAMESPACE.fullmatch(namespace) or not NAME.fullmatch(name):
        raise PodLookupError(f"{ref[:80]!r} is not NAMESPACE/NAME of a Kubernetes Job (training/llama-70b)")
    return namespace, f"{JOB_LABEL}={name}"


def checked_selector(selector: str, namespace: str) -> tuple[str, str]:
    if not NAMESPACE.fullmatch(namespace):
        raise PodLookupError(f"{namespace[:80]!r} is not a Kubernetes namespace (lowercase letters, digits, -)")
    terms = selector.split(",")
    if not selector or len(terms) > 20 or not all(TERM.fullmatch(t.strip()) for t in terms):
        raise PodLookupError(f"{selector[:80]!r} is not an equality-based label selector (app=trainer,tier!=test)")
    return namespace, ",".join(t.strip() for t in terms)


def pods_path(namespace: str, selector: str) -> str:
    return (
        f"/api/v1/namespaces/{urllib.parse.quote(namespace, safe='')}/pods"
        f"?labelSelector={urllib.parse.quote(selector, safe='')}"
    )


def _text(obj: dict[str, Any], key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is not None and (not isinstance(value, str) or len(value) > 253):
        raise PodLookupError(f"{where}: field {key!r} is not text")
    return value


def pod_nodes(body: Any, where: str) -> PodNodes:
    """The nodes the pods of a PodList answer run on (finished and unbound pods left out), and the earliest
    start of those that do."""
    items = body.get("items") if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise PodLookupError(f"{where}: the answer is not a PodList (no list 'items')")
    if len(items) > MAX_ITEMS:
        raise PodLookupError(f"{where}: {len(items)} pods, more than {MAX_ITEMS}")
    nodes: dict[str, None] = {}
    started: datetime | None = None
    for i, pod in enumerate(items):
        at = f"{where}: items[{i}]"
        meta, spec, status = (pod.get(k, {}) if isinstance(pod, dict) else None for k in ("metadata", "spec", "status"))
        if not isinstance(meta, dict) or not isinstance(spec, dict) or not isinstance(status, dict):
            raise PodLookupError(f"{at}: not a Pod (metadata, spec and status objects)")
        name = _text(meta, "name", at)
        at = f"{where}: pod {name!r}"
        phase = _text(status, "phase", at)
        node = _text(spec, "nodeName", f"{at}.spec")
        if phase in FINISHED or not node:
            continue
        nodes[node] = None
        start = _text(status, "startTime", f"{at}.status")
        if start is not None:
            try:
                when = datetime.fromisoformat(start.replace("Z", "+00:00"))
            except ValueError:
                raise PodLookupError(f"{at}: status.startTime {start[:40]!r} is not an RFC 3339 time") from None
            if when.tzinfo is None:
                raise PodLookupError(f"{at}: status.startTime {start[:40]!r} names no zone")
            started = when if started is None else min(started, when)
    return PodNodes(tuple(nodes), started)


def k8s_pod_nodes(k8s: Kubernetes, namespace: str, selector: str) -> PodNodes:
    """The nodes of the pods `selector` picks in `namespace`, asked of the API server through the client's
    guarded, authenticated GET."""
    path = pods_path(namespace, selector)
    body = k8s.get(path)
    found = pod_nodes(body, f"GET /api/v1/namespaces/{namespace}/pods")
    if not found.nodes:
        raise PodLookupError(
            f"no pod of {selector!r} in namespace {namespace} runs on a node now (pending, finished, or no such "
            "job): name its nodes with --nodes"
        )
    return found
