"""The slow-node screen feeds the remediation loop: `acceptance screen report --alertmanager URL` posts one
GpufabricSlowPart alert per signal to Alertmanager's API (here a TEST DOUBLE of `POST /api/v2/alerts`
that records the bodies it is sent, written from Alertmanager's API v2 postableAlert: labels, annotations,
startsAt, endsAt); the loop maps the alert's part to the servers behind it by the plan and drains them
(through the FAKE scheduler of remediate_fakes.py). The real Alertmanager routes the same alert in
test_remediate_alertmanager_live.py."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gpufabric.acceptance.screen import SLOW_ALERT
from gpufabric.acceptance.suite import screen_suite
from gpufabric.remediate import Guards, Remediator, parse_payload, target_of
from tests.conftest import INVENTORY, example_plan, run_in_process
from tests.remediate.remediate_fakes import FakeScheduler, payload
from tests.screen_outputs import record


class AlertmanagerApiDouble(ThreadingHTTPServer):
    """Records what is POSTed to /api/v2/alerts and answers 200, as Alertmanager does for valid alerts."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Api)
        self.posted: list[list[dict]] = []


class _Api(BaseHTTPRequestHandler):
    server: AlertmanagerApiDouble

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        ok = self.path == "/api/v2/alerts" and self.headers.get("Content-Type") == "application/json"
        if ok:
            self.server.posted.append(json.loads(body))
        self.send_response(200 if ok else 400)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def api():
    server = AlertmanagerApiDouble()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _notify(posted: dict, status: str = "firing") -> dict:
    """Alertmanager's webhook alert for a posted alert (what it sends the receiver once it routes it)."""
    return {
        "status": status,
        "labels": posted["labels"],
        "annotations": posted["annotations"],
        "startsAt": posted["startsAt"],
        "endsAt": posted["endsAt"],
        "generatorURL": "",
        "fingerprint": "5107a1e0c3b2d4f6",
    }


def test_the_screen_posts_its_slow_nic_and_the_loop_drains_that_node(tmp_path: Path, api: AlertmanagerApiDouble):
    fabric = INVENTORY / "fabric.yml"
    plan = example_plan(fabric)
    results = record(tmp_path / "slow", screen_suite(plan), slow_nics={"gpu03 eth1": 180.0})
    done = run_in_process("gpufabric", "acceptance", "screen", "report", fabric, "--results", results,
                          "--alertmanager", f"http://127.0.0.1:{api.server_port}", "--alert-for", "90m")  # fmt: skip
    assert done.returncode == 4, done.stderr  # a signal
    assert "posted 1 signals" in done.stderr
    ((posted,),) = api.posted
    assert posted["labels"] == {"alertname": SLOW_ALERT, "severity": "warning", "fabric": "lab",
                                "part": "gpu03 eth1", "part_kind": "nic"}  # fmt: skip
    starts, ends = (datetime.fromisoformat(posted[k]) for k in ("startsAt", "endsAt"))
    assert (ends - starts).total_seconds() == 90 * 60 and starts <= datetime.now(UTC)
    assert "nodes gpu03" in posted["annotations"]["summary"]

    fake = FakeScheduler([s.name for s in plan.servers])
    loop = Remediator(plan, [fake], Guards(0.5, 0.5, 0.0), state_path=tmp_path / "s.json", audit_path=tmp_path / "a")
    loop.handle(parse_payload(json.dumps(payload(_notify(posted))).encode()))
    assert fake.calls == [("take_out", "gpu03", f"gpufabric remediate: {SLOW_ALERT}@gpu03:eth1")]
    loop.handle(parse_payload(json.dumps(payload(_notify(posted, "resolved"))).encode()))
    assert fake.drained == []  # a hold-down of 0: back at once


def test_nothing_slow_posts_nothing(tmp_path: Path, api: AlertmanagerApiDouble):
    fabric = INVENTORY / "fabric.yml"
    results = record(tmp_path / "ok", screen_suite(example_plan(fabric)))
    done = run_in_process("gpufabric", "acceptance", "screen", "report", fabric, "--results", results,
                          "--alertmanager", f"http://127.0.0.1:{api.server_port}")  # fmt: skip
    assert done.returncode == 0 and api.posted == [] and "no signal to post" in done.stderr


def test_a_slow_leaf_names_its_servers_and_a_fabric_cable_nobody():
    plan = example_plan(INVENTORY / "fabric.yml")
    leaf = target_of(plan, {"alertname": SLOW_ALERT, "part": "cmp-su2-leaf1"})
    assert leaf is not None and leaf.nodes == ("gpu03", "gpu04")
    spine = target_of(plan, {"alertname": SLOW_ALERT, "part": "cmp-spine1"})
    assert spine is not None and spine.nodes == ()
    stranger = target_of(plan, {"alertname": SLOW_ALERT, "part": "gpu99 eth1"})
    assert stranger is not None and stranger.nodes == () and "not a part" in stranger.why


def test_an_unreachable_alertmanager_fails_the_report_by_name(tmp_path: Path):
    fabric = INVENTORY / "fabric.yml"
    results = record(tmp_path / "slow", screen_suite(example_plan(fabric)), slow_nodes={"gpu02": 210.0})
    done = run_in_process("gpufabric", "acceptance", "screen", "report", fabric, "--results", results,
                          "--alertmanager", "http://127.0.0.1:9")  # fmt: skip
    assert done.returncode == 2 and "Alertmanager at http://127.0.0.1:9 was not reached" in done.stderr
