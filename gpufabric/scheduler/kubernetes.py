"""Kubernetes, through its API server's REST API, reached with the official `kubernetes` Python client.

The client is how gpufabric finds and logs in to the cluster, as kubectl does: a kubeconfig file and
context (`--kubeconfig`, `--context`, `$KUBECONFIG`, else `~/.kube/config`), the pod's service account
when gpufabric runs in the cluster, or an API server URL with a bearer token read from an environment
variable (the intent's `scheduler.kubernetes`). Its configuration gives the server, the CA (the
kubeconfig's certificate-authority(-data), the service account's ca.crt, or `--k8s-ca-file`), the token
or client certificate, and its ApiClient builds each request's URL and Authorization. The request then
goes through gpufabric.http_guard's pool manager, not urllib3's own: only to that server's origin, no
redirect followed (the token would go with it), a whole deadline per request (`timeout`, connect to
last byte); gpufabric reads the answer itself, at most `MAX_BODY` bytes, UTF-8, strict JSON nested at
most 200 levels (the client's typed models would take NaN, and a deep answer would crash it), and a
list at most `MAX_ITEMS` long.

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
cordoned or not, as kubectl drain's --ignore-daemonsets knows). A token is never shown (redacted from
whatever the server says back). Plain HTTP is refused except to a loopback address.
"""

from __future__ import annotations

import ipaddress
import os
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufabric.errors import printable
from gpufabric.http_api import HttpApiError, Reply, Request, json_body, origin, shown
from gpufabric.scheduler.model import Mark, NodeState, SchedulerError, SchedulerOutputError, checked_node

ANNOTATION = "gpufabric.io/drain"
TIMEOUT = 30.0
FINISHED = frozenset({"Succeeded", "Failed"})
# Kubernetes API reference (v1.30), "Node" / NodeSpec: `unschedulable` controls whether new pods are scheduled
# onto the node (what `kubectl cordon` sets). The official client's model of a node (V1NodeSpec, generated from the
# API server's OpenAPI document) judges the field's name (tests/oracles/test_vendor_strings.py). RFC 7386 names the
# merge patch's media type.
UNSCHEDULABLE = "unschedulable"
MERGE_PATCH = "application/merge-patch+json"
MAX_BODY = 128 * 1024 * 1024  # bytes of one answer: the list of every node, with their images, of a large cluster
MAX_ITEMS = 100_000  # nodes or pods in one list (Kubernetes' own scale limit is 5,000 nodes, 150,000 pods)


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    secrets: tuple[str, ...] = ()  # what a message taken from the body must not show


def _secrets(headers: dict[str, Any]) -> tuple[str, ...]:
    """The credentials in a request's headers: what a message built from the answer must not show."""
    out = []
    for name, value in headers.items():
        if name.lower() == "authorization" and isinstance(value, str):
            out += [value.split(" ", 1)[-1], value]  # the token first: "Bearer [redacted]" stays readable
    return tuple(out)


def origin_of(url: str) -> Any:
    return origin(url)


def _check_server(api: Any, source: str) -> None:
    parts = urllib.parse.urlsplit(api if isinstance(api, str) else "")
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.path not in ("", "/"):
        raise SchedulerError(f"{printable(str(api))[:200]!r}{source} is not an API server address (https://host:port)")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise SchedulerError(
            f"{printable(str(api))[:200]!r}{source}: plain HTTP would carry the token in clear; use https"
        )


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


SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")  # a pod's token and ca.crt
KUBECONFIG_DEFAULT = "~/.kube/config"


def _library() -> Any:
    """The official client, imported when a call is first made (it is the `kubernetes` extra)."""
    try:
        import kubernetes  # optional, and slow to import: only when Kubernetes is reached
    except ImportError:
        raise SchedulerError(
            "kubernetes: the official Kubernetes Python client is not installed: pip install 'gpufabric[kubernetes]'"
        ) from None
    return kubernetes


def in_cluster() -> bool:
    """gpufabric runs in a pod: the service's address in the environment and a service account token."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and (SERVICE_ACCOUNT / "token").is_file()


class Kubernetes:
    """One cluster's API server, and the RDMA resource names whose pods must leave a node before its switch
    changes. Reached as the first of these says: `api` (https://host:port) with the bearer token in the
    environment variable `token_env`; a kubeconfig (`kubeconfig`, `context`, else `$KUBECONFIG`); the pod's
    service account (in a cluster); `~/.kube/config`. `ca_file` replaces the CA the kubeconfig or service
    account names."""

    kind = "kubernetes"

    def __init__(
        self,
        api: str | None,
        resources: Iterable[str],
        token_env: str | None = None,
        ca_file: Path | None = None,
        timeout: float = TIMEOUT,
        *,
        kubeconfig: Path | None = None,
        context: str | None = None,
    ) -> None:
        if api is not None:
            _check_server(api, "")
            api = api.rstrip("/")
        self.api = api
        self.resources = frozenset(resources)
        self.token_env = token_env
        self.timeout = timeout
        self.ca_file = ca_file
        self.kubeconfig = kubeconfig
        self.context = context
        self._client: Any = None  # made at the first call: opening is not reaching

    # -- the connection --------------------------------------------------------------------------

    def _source(self) -> str:
        """How the cluster is reached, as an error names it."""
        if self.api is not None:
            return f"the API server {self.api}"
        if self.kubeconfig is not None or self.context is not None or os.environ.get("KUBECONFIG"):
            files = str(self.kubeconfig) if self.kubeconfig is not None else os.environ.get("KUBECONFIG", "")
            return f"the kubeconfig {files or KUBECONFIG_DEFAULT}" + (
                f", context {self.context}" if self.context else ""
            )
        if in_cluster():
            return f"the pod's service account ({SERVICE_ACCOUNT})"
        return f"the kubeconfig {KUBECONFIG_DEFAULT}"

    def _configuration(self) -> Any:
        lib = _library()
        cfg = lib.client.Configuration()
        source = self._source()
        try:
            if self.api is not None:
                cfg.host = self.api
                if self.token_env:
                    cfg.api_key_prefix["BearerToken"] = "Bearer"
                    cfg.api_key["BearerToken"] = ""  # a place the hook fills: the client asks it only then
                    cfg.refresh_api_key_hook = self._token_hook  # the variable is read at each call
            elif source.startswith("the pod's"):
                loader = lib.config.incluster_config.InClusterConfigLoader(
                    token_filename=str(SERVICE_ACCOUNT / "token"), cert_filename=str(SERVICE_ACCOUNT / "ca.crt")
                )
                loader.load_and_set(cfg)
            else:
                files = str(self.kubeconfig) if self.kubeconfig is not None else os.environ.get("KUBECONFIG")
                lib.config.load_kube_config(
                    config_file=files or os.path.expanduser(KUBECONFIG_DEFAULT),
                    context=self.context,
                    client_configuration=cfg,
                    persist_config=False,  # never writes the file back (a refreshed token would be stored)
                )
        except SchedulerError:
            raise
        except Exception as exc:  # the library's ConfigException, yaml's and OSError: all named
            raise SchedulerError(f"kubernetes: {source}: {printable(str(exc) or type(exc).__name__)[:300]}") from None
        if self.ca_file is not None:
            if not self.ca_file.is_file():
                raise SchedulerError(f"kubernetes: the CA bundle {self.ca_file} is not a file")
            cfg.ssl_ca_cert = str(self.ca_file)
        _check_server(cfg.host, f" ({source})")
        if not cfg.verify_ssl:
            raise SchedulerError(
                f"kubernetes: {source} turns the server's certificate check off (insecure-skip-tls-verify): the "
                "token would go to whoever answers; give the cluster's CA (certificate-authority or --k8s-ca-file)"
            )
        if getattr(cfg, "proxy", None):
            raise SchedulerError(
                f"kubernetes: {source} names a proxy; gpufabric talks to the API server directly (the token would "
                "go through the proxy): remove proxy-url"
            )
        return cfg

    def _token_hook(self, cfg: Any) -> None:
        token = os.environ.get(self.token_env or "")
        if not token:
            raise SchedulerError(f"the Kubernetes token's variable {self.token_env} is not set")
        cfg.api_key["BearerToken"] = token

    def _api(self) -> Any:
        if self._client is None:
            from gpufabric.http_guard import GuardedPoolManager  # urllib3, with the client

            cfg = self._configuration()
            api = _library().client.ApiClient(cfg)
            kept = api.rest_client.pool_manager
            api.rest_client.pool_manager = GuardedPoolManager(origin_of(cfg.host), **kept.connection_pool_kw)
            self._client = api
        return self._client

    # -- the calls -------------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Answer:
        from gpufabric.http_guard import Limits, exchange

        api = self._api()
        parts = urllib.parse.urlsplit(path)
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        query = urllib.parse.parse_qsl(parts.query) or None
        serialized = api.param_serialize(
            method=method, resource_path=parts.path, query_params=query, header_params=headers, body=body,
            auth_settings=["BearerToken"],
        )  # fmt: skip
        verb, url, sent_headers, sent_body, post = serialized
        secrets = _secrets(sent_headers)
        where = f"{method} {parts.path}"
        ApiException = _library().client.ApiException

        def send() -> Any:
            try:
                return api.call_api(
                    verb, url, header_params=sent_headers, body=sent_body, post_params=post,
                    _request_timeout=(self.timeout, self.timeout),
                ).response  # fmt: skip
            except ApiException as exc:  # the client's name for a TLS failure (status 0)
                raise HttpApiError(f"{where}: TLS: {shown(str(exc.reason), secrets)}") from None

        request = Request(method, url, {}, None, secrets)
        try:
            reply: Reply = exchange(send, url, where, Limits(self.timeout, MAX_BODY), secrets)
            if reply.status // 100 == 2:
                return Answer(reply.status, json_body(reply, request))
            try:  # an error's Status object, when it is one; its message is redacted where it is shown
                return Answer(reply.status, json_body(reply, request), secrets)
            except HttpApiError:
                return Answer(reply.status, None, secrets)
        except HttpApiError as exc:
            raise SchedulerOutputError(f"kubernetes: {exc}") from None

    def get(self, path: str) -> Any:
        """An authenticated GET of an API path (with its query), its answer parsed; a refusal (not 2xx) is a
        SchedulerError naming the call and what the server said."""
        return self._ok(self._request("GET", path), "GET", urllib.parse.urlsplit(path).path)

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
