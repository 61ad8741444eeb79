"""The webhook receiver on loopback: hostile and malformed bodies get a clear 4xx, never a traceback."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpufabric.remediate import Guards, Remediator
from gpufabric.remediate.payload import MAX_BODY
from gpufabric.remediate.server import Receiver
from tests.conftest import INVENTORY, example_plan
from tests.remediate.remediate_fakes import FakeScheduler, alert, payload


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Receiver, FakeScheduler]]:
    plan = example_plan(INVENTORY / "fabric.yml")
    fake = FakeScheduler([s.name for s in plan.servers])
    loop = Remediator(
        plan, [fake], Guards(0.5, 0.5, 600.0), state_path=tmp_path / "s.json", audit_path=tmp_path / "a.jsonl"
    )
    server = Receiver(("127.0.0.1", 0), loop)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server, fake
    server.shutdown()
    server.server_close()
    thread.join(30)


def post(server: Receiver, body: bytes, headers: dict[str, str] | None = None, path: str = "/webhook"):
    conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=30)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json", **(headers or {})})
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()


def test_a_notification_drains_its_server(served):
    server, fake = served
    code, body = post(
        server, json.dumps(payload(alert("GpufabricLinkDown", device="cmp-su2-leaf1", port="swp1"))).encode()
    )
    assert code == 200 and fake.drained == ["gpu03"]
    assert body["actions"][0].startswith("drain [fake] gpu03: GpufabricLinkDown cmp-su2-leaf1:swp1")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (json.dumps({"version": "3", "alerts": []}).encode(), 'version "4"'),
        (json.dumps({"version": "4", "alerts": {}}).encode(), "alerts: a list"),
        (json.dumps(payload({"status": "firing"})).encode(), "'labels' is missing"),
        (json.dumps(payload({**alert("GpufabricLinkDown"), "status": "burning"})).encode(), "'firing' or 'resolved'"),
        (json.dumps(payload(alert("GpufabricLinkDown", device="x\ny"))).encode(), "not printable"),
        (json.dumps(payload(alert("Bad name!"))).encode(), "alertname"),
        (json.dumps(payload({**alert("GpufabricLinkDown"), "fingerprint": "../x"})).encode(), "fingerprint"),
        (json.dumps(payload({**alert("GpufabricLinkDown"), "startsAt": "yesterday"})).encode(), "RFC 3339"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
    ],
)
def test_a_malformed_notification_is_refused_whole(served, body, message):
    server, fake = served
    code, answer = post(server, body)
    assert code == 400 and message in answer["error"] and "Traceback" not in answer["error"]
    assert fake.calls == []


def test_an_oversize_body_is_refused_unread(served):
    server, fake = served
    conn = http.client.HTTPConnection("127.0.0.1", server.server_port, timeout=30)
    try:  # the headers alone: the receiver answers before any of the body is sent
        conn.putrequest("POST", "/webhook")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(MAX_BODY + 1))
        conn.endheaders()
        answer = conn.getresponse()
        code, body = answer.status, json.loads(answer.read())
    finally:
        conn.close()
    assert code == 413 and str(MAX_BODY) in body["error"] and fake.calls == []


def test_other_paths_and_types_are_refused(served):
    server, _ = served
    assert post(server, b"{}", path="/")[0] == 404
    assert post(server, b"{}", headers={"Content-Type": "text/plain"})[0] == 415
