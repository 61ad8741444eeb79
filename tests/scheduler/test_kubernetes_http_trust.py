"""The Kubernetes client and its bearer token against real HTTP(S) servers on loopback (tests/http_doubles.py,
answering as an API server would be expected to, or as a hostile one): a redirect to another port, host
or to plain http is refused and the second server never sees the token; a token echoed back in a
Status is never shown; a dripping server, an endless body, deep JSON and an over-long list are each a
named error within bounded time and memory."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from http_doubles import Reply, redirect, serve
from tls_server import make_pki

from gpufabric.scheduler import kubernetes as k8s_mod
from gpufabric.scheduler.kubernetes import Kubernetes
from gpufabric.scheduler.model import SchedulerError

TOKEN = "canary-k8s-token-3b8e0a61"
ENV = "GF_TEST_K8S_HTTP_TOKEN"
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu01", "resourceVersion": "1"}, "spec": {}}
PODS = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []}


def api(method: str, path: str) -> Reply:
    return Reply(200, json.dumps(PODS if path.startswith("/api/v1/pods") else NODE).encode())


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, TOKEN)


def client(url: str, ca_file: Path | None = None, timeout: float = 5) -> Kubernetes:
    return Kubernetes(url, ["nvidia.com/compute_rail1"], ENV, ca_file, timeout)


@pytest.mark.parametrize("elsewhere", ["127.0.0.1", "127.0.0.3"])  # another port; another host
def test_a_redirect_to_another_origin_is_refused_and_the_token_stays(elsewhere: str) -> None:
    with serve(api, address=elsewhere) as other, serve(redirect(other.url, 307)) as first:
        with pytest.raises(SchedulerError, match=f"a redirect to {other.url}; gpufabric follows no redirect"):
            client(first.url).nodes(["gpu01"])
        assert first.authorizations == [f"Bearer {TOKEN}"]
        assert other.seen == []


def test_a_redirect_from_https_to_http_is_refused(tmp_path: Path) -> None:
    pki = make_pki(tmp_path, "127.0.0.1")
    with serve(api) as plain, serve(redirect(plain.url), pki=pki) as secure:
        with pytest.raises(SchedulerError, match="the token would go with it, in clear"):
            client(secure.url, pki.ca_file).nodes(["gpu01"])
        assert secure.authorizations == [f"Bearer {TOKEN}"] and plain.seen == []
    with serve(api, pki=pki) as secure:  # the same server, answering itself: read over checked TLS
        assert client(secure.url, pki.ca_file).nodes(["gpu01"])["gpu01"].out is False


def test_a_token_echoed_in_a_status_is_never_shown() -> None:
    status = {"kind": "Status", "status": "Failure", "code": 403, "reason": "Forbidden",
              "message": f"User cannot get nodes; token Bearer {TOKEN} is not allowed"}  # fmt: skip
    with serve(lambda m, p: Reply(403, json.dumps(status).encode())) as server, pytest.raises(SchedulerError) as caught:
        client(server.url).nodes(["gpu01"])
    assert "HTTP 403" in str(caught.value) and "Bearer [redacted]" in str(caught.value)
    assert TOKEN not in str(caught.value)


def test_a_dripping_server_is_stopped_by_the_request_s_whole_deadline() -> None:
    body = json.dumps(NODE | {"pad": "x" * 1000}).encode()
    with serve(lambda m, p: Reply(200, body, drip=0.2)) as server:
        began = time.monotonic()
        with pytest.raises(SchedulerError, match="no whole answer within 2 s"):
            client(server.url, timeout=2).nodes(["gpu01"])
        assert time.monotonic() - began < 8


def test_an_endless_body_is_cut_off_at_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(k8s_mod, "MAX_BODY", 1 << 20)
    with serve(lambda m, p: Reply(200, endless=True)) as server:
        began = time.monotonic()
        with pytest.raises(SchedulerError, match="the answer is larger than 1048576 bytes"):
            client(server.url).nodes(["gpu01"])
        assert time.monotonic() - began < 10
    with (
        serve(lambda m, p: Reply(200, b"{}", content_length=1 << 40)) as server,
        pytest.raises(SchedulerError, match=r"Content-Length 1099511627776"),
    ):
        client(server.url).nodes(["gpu01"])


def test_deep_json_is_refused_by_name() -> None:
    with (
        serve(lambda m, p: Reply(200, b"[" * 200_000)) as server,
        pytest.raises(SchedulerError, match="nests deeper than 200 levels"),
    ):
        client(server.url).nodes(["gpu01"])


def test_a_list_longer_than_the_bound_and_items_of_the_wrong_type(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(k8s_mod, "MAX_ITEMS", 3)
    nodes = {"kind": "NodeList", "items": [NODE] * 4}
    with (
        serve(lambda m, p: Reply(200, json.dumps(nodes).encode())) as server,
        pytest.raises(SchedulerError, match="4 items, more than 3"),
    ):
        client(server.url).marked()
    refusal = pytest.raises(SchedulerError, match="an item that is not an object")
    with serve(lambda m, p: Reply(200, b'{"items": [1]}')) as server, refusal:
        client(server.url).marked()
