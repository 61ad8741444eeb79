"""Kubernetes, through its API server's REST API (plain HTTPS, the standard library's client).

The calls, as the Kubernetes API reference (v1.30) describes them:
- `GET /api/v1/nodes/{name}` and `GET /api/v1/nodes`: a node's `spec.unschedulable`, its annotations
  and `metadata.resourceVersion`;
- `PATCH /api/v1/nodes/{name}` with `Content-Type: application/merge-patch+json` (RFC 7386): cordon
  is `spec.unschedulable: true` plus the annotation `gpufabric.io/drain` holding our mark, sent with
  the resourceVersion just read, so a node changed in between is refused (409) rather than
  overwritten; uncordon sets `unschedulable` to null (false) and removes the annotation, again only
  from the version that still carries our mark;
- `GET /api/v1/pods?fieldSelector=spec.nodeName%3D{node}`: the pods on a node, in every namespace;
- `POST /api/v1/namespaces/{ns}/pods/{pod}/eviction` with a policy/v1 `Eviction`: the API server
  deletes the pod only if its PodDisruptionBudgets allow it, and answers 429 Too Many Requests when
  one does not (then we wait and ask again at the next look); 404 means the pod is gone already.

The pods that hold a node are those, not finished, whose containers request or limit one of the
plan's RDMA resources (the names `gpufabric export k8s-network` gives the device plugin:
`nvidia.com/<plane>_rail<n>`); a pod a DaemonSet owns is left (it would come back on its node,
cordoned or not, as kubectl drain's --ignore-daemonsets knows). The token is read from the
environment variable the intent names at the moment of each call, and never shown (redacted from
whatever the server says back). Plain HTTP is refused except to a loopback address (the test double).

Every call goes through gpufabric.http_api: no redirect is followed to another origin (scheme, host,
port), so the token never leaves for another server or in clear; each call has a whole deadline
(`timeout`, connect to last byte), its answer at most `MAX_BODY` bytes, UTF-8, strict JSON nested at
most 200 levels, and a list at most `MAX_ITEMS` long.
"""

from __future__ import annotations

import ipaddress
import os
import ssl
import time
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufabric.http_api import Bounds, HttpApiError, Request, call, json_body, shown
from gpufabric.outputs import json_dumps
from gpufabric.scheduler.model import Mark, NodeState, SchedulerError, SchedulerOutputError, checked_node

ANNOTATION = "gpufabric.io/drain"
TIMEOUT = 30.0
FINISHED = frozenset({"Succeeded", "Failed"})
# Kubernetes API reference (v1.30), "Node" / NodeSpec: `unschedulable` controls whether new pods are scheduled
# onto the node (what `kubectl cordon` sets). No API server installs here, so no model checks the field's
# spelling: the tests' API double is ours (docs/not-shown.md). RFC 7386 names the merge patch's media type.
UNSCHEDULABLE = "unschedulable"
MERGE_PATCH = "application/merge-patch+json"
MAX_BODY = 128 * 1024 * 1024  # bytes of one answer: the list of every node, with their images, of a large cluster
MAX_ITEMS = 100_000  # nodes or pods in one list (Kubernetes' own scale limit is 5,000 nodes, 150,000 pods)


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    secrets: tuple[str, ...] = ()  # what a message taken from the body must not show


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def pod_resources(pod: dict[str, Any]) -> set[str]:
    """Every resource a pod's containers (init containers too) request or limit."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        raise SchedulerOutputError("a pod without a spec")
    names: set[str] = set()
    for key in ("containers", "initContainers"):
        containers = spec.get(key) or []
        if not isinstance(containers, list):
            raise SchedulerOutputError(f"a pod's {key} is not a list")
        for container in containers:
            resources = container.get("resources") or {} if isinstance(container, dict) else None
            if not isinstance(resources, dict):
                raise SchedulerOutputError("a container's resources are not an object")
            for part in ("requests", "limits"):
                amounts = resources.get(part) or {}
                if not isinstance(amounts, dict):
                    raise SchedulerOutputError(f"a container's resources.{part} is not an object")
                names.update(amounts)
    return names


def _meta(obj: Any, what: str) -> dict[str, Any]:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
        raise SchedulerOutputError(f"{what} without metadata.name")
    return meta


def _items(body: Any, where: str) -> list[dict[str, Any]]:
    """A List object's items: a list of objects, at most MAX_ITEMS."""
    items = body.get("items") if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise SchedulerOutputError(f"kubernetes: {where}: no list of items")
    if len(items) > MAX_ITEMS:
        raise SchedulerOutputError(f"kubernetes: {where}: {len(items)} items, more than {MAX_ITEMS}")
    if not all(isinstance(i, dict) for i in items):
        raise SchedulerOutputError(f"kubernetes: {where}: an item that is not an object")
    return items


class Kubernetes:
    """One cluster's API server: `api` (https://host:port), the bearer token's environment variable, a CA
    bundle, and the RDMA resource names whose pods must leave a node before its switch changes."""

    kind = "kubernetes"

    def __init__(
        self,
        api: str,
        resources: Iterable[str],
        token_env: str | None = None,
        ca_file: Path | None = None,
        timeout: float = TIMEOUT,
    ) -> None:
        parts = urllib.parse.urlsplit(api)
        if parts.scheme not in ("https", "http") or not parts.hostname or parts.path not in ("", "/"):
            raise SchedulerError(f"{api!r} is not an API server address (https://host:port)")
        if parts.scheme == "http" and not _loopback(parts.hostname):
            raise SchedulerError(f"{api!r}: plain HTTP would carry the token in clear; use https")
        self.api = api.rstrip("/")
        self.resources = frozenset(resources)
        self.token_env = token_env
        self.timeout = timeout
        self.ca_file = ca_file
        self._tls: ssl.SSLContext | None = None  # made at the first call: opening is not reaching

    def _context(self) -> ssl.SSLContext:
        if self._tls is None:
            try:
                self._tls = ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
            except (OSError, ssl.SSLError) as exc:
                raise SchedulerError(f"kubernetes: the CA bundle {self.ca_file}: {exc}") from None
        return self._tls

    # -- the calls -------------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Answer:
        headers = {"Accept": "application/json"}
        secrets: tuple[str, ...] = ()
        if self.token_env:
            token = os.environ.get(self.token_env)
            if not token:
                raise SchedulerError(f"the Kubernetes token's variable {self.token_env} is not set")
            headers["Authorization"] = f"Bearer {token}"
            secrets = (token,)
        data = None
        if body is not None:
            data = json_dumps(body).encode()
            headers["Content-Type"] = content_type
        request = Request(method, self.api + path, headers, data, secrets)
        tls = self._context() if self.api.startswith("https:") else None
        try:
            reply = call(request, Bounds(self.timeout, time.monotonic() + self.timeout, MAX_BODY, tls))
            if reply.status // 100 == 2:
                return Answer(reply.status, json_body(reply, request))
            try:  # an error's Status object, when it is one; its message is redacted where it is shown
                return Answer(reply.status, json_body(reply, request), secrets)
            except HttpApiError:
                return Answer(reply.status, None, secrets)
        except HttpApiError as exc:
            raise SchedulerOutputError(f"kubernetes: {exc}") from None

    def _ok(self, answer: Answer, method: str, path: str) -> Any:
        if answer.status // 100 != 2:
            message = answer.body.get("message", "") if isinstance(answer.body, dict) else ""
            said = shown(str(message), answer.secrets, 200)
            raise SchedulerError(f"kubernetes: {method} {path}: HTTP {answer.status} {said}")
        return answer.body

    def _node(self, name: str) -> dict[str, Any] | None:
        path = f"/api/v1/nodes/{urllib.parse.quote(checked_node(name), safe='')}"
        answer = self._request("GET", path)
        if answer.status == 404:
            return None
        node = self._ok(answer, "GET", path)
        _meta(node, f"node {name}")
        return node  # type: ignore[no-any-return]

    @staticmethod
    def _state(node: dict[str, Any], holders: tuple[str, ...] = ()) -> NodeState:
        meta = _meta(node, "a node")
        spec = node.get("spec") or {}
        annotations = meta.get("annotations") or {}
        if not isinstance(spec, dict) or not isinstance(annotations, dict):
            raise SchedulerOutputError(f"node {meta['name']}: spec or annotations not an object")
        out = spec.get(UNSCHEDULABLE) is True
        reason = annotations.get(ANNOTATION, "")
        return NodeState(meta["name"], out, reason if isinstance(reason, str) else "", holders)

    def _pods(self, node: str) -> list[dict[str, Any]]:
        selector = urllib.parse.quote(f"spec.nodeName={checked_node(node)}", safe="")
        path = f"/api/v1/pods?fieldSelector={selector}"
        return _items(self._ok(self._request("GET", path), "GET", path), f"GET {path}")

    def _holding(self, node: str) -> list[dict[str, Any]]:
        """The pods on `node` that hold one of the plan's RDMA resources and have not finished."""
        out = []
        for pod in self._pods(node):
            meta = _meta(pod, "a pod")
            status = pod.get("status") or {}
            if isinstance(status, dict) and status.get("phase") in FINISHED:
                continue
            owners = meta.get("ownerReferences") or []
            if any(isinstance(o, dict) and o.get("kind") == "DaemonSet" for o in owners):
                continue
            if self.resources & pod_resources(pod):
                out.append(pod)
        return out

    @staticmethod
    def _pod_name(pod: dict[str, Any]) -> str:
        meta = _meta(pod, "a pod")
        return f"{meta.get('namespace', 'default')}/{meta['name']}"

    def _patch(self, name: str, node: dict[str, Any], unschedulable: bool | None, mark: str | None) -> int:
        meta = _meta(node, f"node {name}")
        patch = {
            "metadata": {"annotations": {ANNOTATION: mark}, "resourceVersion": meta.get("resourceVersion")},
            "spec": {UNSCHEDULABLE: unschedulable},
        }
        path = f"/api/v1/nodes/{urllib.parse.quote(checked_node(name), safe='')}"
        answer = self._request("PATCH", path, patch, MERGE_PATCH)
        if answer.status != 409:
            self._ok(answer, "PATCH", path)
        return answer.status

    # -- the Scheduler contract ------------------------------------------------------------------

    def nodes(self, names: Sequence[str]) -> dict[str, NodeState]:
        out = {}
        for name in names:
            node = self._node(name)
            if node is not None:
                holders = tuple(self._pod_name(p) for p in self._holding(name))
                out[name] = self._state(node, holders)
        return out

    def take_out(self, node: str, mark: Mark) -> None:
        for _ in range(5):  # a 409 means the node changed since it was read: read it again
            found = self._node(node)
            if found is None:
                raise SchedulerError(f"kubernetes: node {node} is gone")
            state = self._state(found)
            if state.out:
                raise SchedulerError(f"kubernetes: {node} was cordoned meanwhile ({state.reason or 'no reason'})")
            if self._patch(node, found, True, mark.text) != 409:
                return
        raise SchedulerError(f"kubernetes: {node} kept changing; not cordoned")

    def put_back(self, node: str, mark: Mark) -> bool:
        for _ in range(5):
            found = self._node(node)
            if found is None:
                return False
            state = self._state(found)
            if not state.out or state.reason != mark.text:
                return False
            if self._patch(node, found, None, None) != 409:
                return True
        raise SchedulerError(f"kubernetes: {node} kept changing; left cordoned")

    def move(self, states: dict[str, NodeState]) -> list[str]:
        lines = []
        for node in states:
            for pod in self._holding(node):
                meta = _meta(pod, "a pod")
                if meta.get("deletionTimestamp"):
                    continue  # evicted already, terminating
                namespace = str(meta.get("namespace", "default"))
                path = (
                    f"/api/v1/namespaces/{urllib.parse.quote(namespace, safe='')}"
                    f"/pods/{urllib.parse.quote(meta['name'], safe='')}/eviction"
                )
                body = {
                    "apiVersion": "policy/v1",
                    "kind": "Eviction",
                    "metadata": {"name": meta["name"], "namespace": namespace},
                }
                answer = self._request("POST", path, body)
                name = self._pod_name(pod)
                if answer.status == 429:
                    lines.append(f"{node}: eviction of {name} blocked by a PodDisruptionBudget: waiting")
                elif answer.status in (404,) or answer.status // 100 == 2:
                    lines.append(f"{node}: {name} evicted")
                else:
                    self._ok(answer, "POST", path)
        return lines

    def marked(self) -> list[NodeState]:
        items = _items(self._ok(self._request("GET", "/api/v1/nodes"), "GET", "/api/v1/nodes"), "GET /api/v1/nodes")
        return [s for s in (self._state(n) for n in items) if s.mark is not None]
