"""A TEST DOUBLE of the Kubernetes API server: an HTTP server on loopback answering only the calls
gpufabric's scheduler service makes, written from the Kubernetes API reference (v1.30), not from a
real API server (none runs here):

- `GET /api/v1/nodes`, `GET /api/v1/nodes/{name}`: Node objects (404 with a Status for an unknown one);
- `PATCH /api/v1/nodes/{name}`, `Content-Type: application/merge-patch+json`: RFC 7386 merge of the
  body into the node (null removes a key); a `metadata.resourceVersion` in the patch that is not the
  node's current one is a 409 Conflict; every change bumps the resourceVersion; other patch types 415;
- `GET /api/v1/pods?fieldSelector=spec.nodeName={node}` (the only selector it knows, else 400): a PodList;
- `GET /api/v1/namespaces/{ns}/pods?labelSelector=...`: a PodList of the namespace's pods whose labels match
  every equality-based term (`k=v`, `k==v`, `k!=v`, comma-joined; anything else 400);
- `POST /api/v1/namespaces/{ns}/pods/{name}/eviction` with a policy/v1 Eviction named like the
  path: 429 Too Many Requests with a Status whose reason is TooManyRequests while a
  PodDisruptionBudget selecting the pod (matchLabels) allows no disruption; otherwise the pod is
  deleted (after `terminating_reads` more reads of it with a deletionTimestamp, as a pod's graceful
  end would show) and the budget's allowance goes down by one; 201 Created with a Status Success;
  404 for a pod that is not there.
- A bearer token, when the double is given one: any other Authorization is 401.

It serves HTTPS only, with a CA and certificate each run makes (tests/tls_server.py), so the client's
certificate checks are the ones a real API server's would meet; `Served.kubeconfig` writes the
kubeconfig a client logs in with.

It records each request (method, path, and whether it was authorised: never the token) in `calls`.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import ssl
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tls_server import make_pki


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON Merge Patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


@dataclass
class Budget:
    """A PodDisruptionBudget, reduced to what an eviction reads: its selector and status.disruptionsAllowed."""

    namespace: str
    match_labels: dict[str, str]
    disruptions_allowed: int


@dataclass
class Cluster:
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    budgets: list[Budget] = field(default_factory=list)
    token: str | None = None
    terminating_reads: int = 0
    calls: list[tuple[str, str, bool]] = field(default_factory=list)
    blocked: int = 0  # evictions refused with 429
    lock: threading.Lock = field(default_factory=threading.Lock)
    _version: int = 100
    _dying: dict[tuple[str, str], int] = field(default_factory=dict)

    def version(self) -> str:
        self._version += 1
        return str(self._version)

    def add_node(self, name: str, unschedulable: bool = False, annotations: dict[str, str] | None = None) -> None:
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "resourceVersion": self.version(), "annotations": dict(annotations or {})},
            "spec": {"unschedulable": True} if unschedulable else {},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        }
        self.nodes[name] = node

    def add_pod(
        self,
        namespace: str,
        name: str,
        node: str,
        resources: dict[str, str],
        labels: dict[str, str] | None = None,
        owner: str | None = None,
        phase: str = "Running",
        started: str | None = None,
    ) -> None:
        meta: dict[str, Any] = {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels or {}),
            "resourceVersion": self.version(),
        }
        if owner:
            meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner, "name": f"{name}-owner", "uid": "u1"}]
        self.pods[(namespace, name)] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {
                "nodeName": node,
                "containers": [
                    {"name": "main", "image": "example", "resources": {"requests": resources, "limits": resources}}
                ],
            },
            "status": {"phase": phase, **({"startTime": started} if started else {})},
        }
        if not node:  # not bound yet: a pending pod has no spec.nodeName
            del self.pods[(namespace, name)]["spec"]["nodeName"]

    def _pods_on(self, node: str) -> list[dict[str, Any]]:
        out = []
        for key, pod in list(self.pods.items()):
            if pod["spec"].get("nodeName") != node:
                continue
            if key in self._dying:
                if self._dying[key] <= 0:
                    del self.pods[key], self._dying[key]
                    continue
                self._dying[key] -= 1
            out.append(copy.deepcopy(pod))
        return out

    def _budget(self, pod: dict[str, Any]) -> Budget | None:
        labels = pod["metadata"].get("labels", {})
        for budget in self.budgets:
            if budget.namespace == pod["metadata"]["namespace"] and all(
                labels.get(k) == v for k, v in budget.match_labels.items()
            ):
                return budget
        return None

    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        parts = urllib.parse.urlsplit(raw_path)
        path = [urllib.parse.unquote(p) for p in parts.path.strip("/").split("/")]
        scheme, _, credentials = headers.get("authorization", "").partition(" ")
        # RFC 7235: the scheme is case-insensitive (the client's in-cluster login sends "bearer").
        authorised = self.token is None or (scheme.lower() == "bearer" and credentials == self.token)
        self.calls.append((method, parts.path, authorised))
        if not authorised:
            return 401, status(401, "Unauthorized", "Unauthorized")
        if path[:2] != ["api", "v1"]:
            return 404, status(404, "NotFound", "the server could not find the requested resource")
        rest = path[2:]
        if rest == ["nodes"] and method == "GET":
            return 200, {
                "kind": "NodeList",
                "apiVersion": "v1",
                "metadata": {},
                "items": [copy.deepcopy(n) for n in self.nodes.values()],
            }
        if len(rest) == 2 and rest[0] == "nodes":
            node = self.nodes.get(rest[1])
            if node is None:
                return 404, status(404, "NotFound", f'nodes "{rest[1]}" not found')
            if method == "GET":
                return 200, copy.deepcopy(node)
            if method == "PATCH":
                if headers.get("content-type") != "application/merge-patch+json":
                    return 415, status(415, "UnsupportedMediaType", "only merge patches here")
                patch = json.loads(body)
                wanted = (patch.get("metadata") or {}).get("resourceVersion")
                if wanted is not None and wanted != node["metadata"]["resourceVersion"]:
                    return 409, status(409, "Conflict", "the object has been modified")
                merged = merge_patch(node, patch)
                merged["metadata"]["resourceVersion"] = self.version()
                self.nodes[rest[1]] = merged
                return 200, copy.deepcopy(merged)
        if rest == ["pods"] and method == "GET":
            query = urllib.parse.parse_qs(parts.query)
            selector = query.get("fieldSelector", [""])[0]
            if not selector.startswith("spec.nodeName="):
                return 400, status(400, "BadRequest", "this double only selects by spec.nodeName")
            return 200, {
                "kind": "PodList",
                "apiVersion": "v1",
                "metadata": {},
                "items": self._pods_on(selector.split("=", 1)[1]),
            }
        if len(rest) == 3 and rest[0] == "namespaces" and rest[2] == "pods" and method == "GET":
            terms = urllib.parse.parse_qs(parts.query).get("labelSelector", [""])[0].split(",")
            wanted = [re.fullmatch(r"([^=!]+)(==|!=|=)([^=!]*)", t) for t in terms]
            if not all(wanted):
                return 400, status(400, "BadRequest", "this double only selects by equality-based labels")

            def matches(pod: dict[str, Any]) -> bool:
                labels = pod["metadata"].get("labels", {})
                return all((labels.get(m[1]) == m[3]) == (m[2] != "!=") for m in wanted if m)

            items = [copy.deepcopy(p) for (ns, _), p in self.pods.items() if ns == rest[1] and matches(p)]
            return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}
        if len(rest) == 5 and rest[0] == "namespaces" and rest[2] == "pods" and rest[4] == "eviction":
            if method != "POST":
                return 405, status(405, "MethodNotAllowed", "POST an Eviction")
            eviction = json.loads(body)
            if (
                eviction.get("kind") != "Eviction"
                or eviction.get("apiVersion") != "policy/v1"
                or (eviction.get("metadata", {}).get("name") != rest[3])
            ):
                return 400, status(400, "BadRequest", "not a policy/v1 Eviction of this pod")
            key = (rest[1], rest[3])
            pod = self.pods.get(key)
            if pod is None:
                return 404, status(404, "NotFound", f'pods "{rest[3]}" not found')
            budget = self._budget(pod)
            if budget is not None and budget.disruptions_allowed <= 0:
                self.blocked += 1
                return 429, status(
                    429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget."
                )
            if budget is not None:
                budget.disruptions_allowed -= 1
            pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            self._dying[key] = self.terminating_reads
            return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
        return 404, status(404, "NotFound", "the server could not find the requested resource")


class _Handler(BaseHTTPRequestHandler):
    cluster: Cluster

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        with self.cluster.lock:
            code, answer = self.cluster.handle(self.command, self.path, headers, body)
        data = json.dumps(answer).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@dataclass(frozen=True)
class Served:
    """The double as a client finds it: its https address and the CA its certificate is signed by."""

    url: str
    ca_file: Path

    def kubeconfig(self, path: Path, token: str, context: str = "double", *, inline_ca: bool = False) -> Path:
        """A kubeconfig (the format `kubectl config view` writes) whose context `context` reaches the
        double with `token`; the CA by file, or inline (certificate-authority-data) with `inline_ca`."""
        ca: dict[str, str] = (
            {"certificate-authority-data": base64.b64encode(self.ca_file.read_bytes()).decode()}
            if inline_ca
            else {"certificate-authority": str(self.ca_file)}
        )
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": f"{context}-cluster", "cluster": {"server": self.url, **ca}}],
            "users": [{"name": f"{context}-user", "user": {"token": token}}],
            "contexts": [{"name": context, "context": {"cluster": f"{context}-cluster", "user": f"{context}-user"}}],
            "current-context": context,
        }
        path.write_text(json.dumps(config))  # JSON is YAML: the client's loader reads it as any kubeconfig
        return path


@contextmanager
def api_server(cluster: Cluster, folder: Path) -> Iterator[Served]:
    """The double serving `cluster` on 127.0.0.1 (a free port) over TLS, with a CA and certificate made
    in `folder` for this run (tests/tls_server.py)."""
    pki = make_pki(folder, "127.0.0.1", "k8s")
    handler = type("Handler", (_Handler,), {"cluster": cluster})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.cert_file, pki.key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield Served(f"https://127.0.0.1:{server.server_address[1]}", pki.ca_file)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
