"""`job timeline` reading the real Alertmanager's API v2 (Debian's prometheus-alertmanager, on loopback):
alerts posted as Prometheus posts them, read back through GET /api/v2/alerts as Alertmanager itself answers.
When the package is only unpacked (scripts/test.sh, into .cache/alertmanager) the daemon runs in a mount
namespace of its own (tests/alertmanager_run.py): root, beside the lab tier, as the remediation loop's
live test."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.alertmanager_run import alertmanager_command
from tests.conftest import run_in_process
from tests.loopback import free_port, http_ready

pytestmark = [
    pytest.mark.lab,
    pytest.mark.beside_lab,
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="Debian's unpacked Alertmanager runs in a mount namespace (root)"),
]


def _post(port: int, alerts: list[dict]) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v2/alerts", json.dumps(alerts).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200


def test_the_real_alertmanager_s_alerts_on_the_footprint(tmp_path: Path):
    port = free_port()
    config = tmp_path / "alertmanager.yml"
    config.write_text("route:\n  receiver: nobody\nreceivers:\n  - name: nobody\n")
    manager = subprocess.Popen(
        alertmanager_command([f"--config.file={config}", f"--storage.path={tmp_path / 'data'}",
                              f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="]),
        stdout=subprocess.DEVNULL, stderr=(tmp_path / "alertmanager.log").open("w"),
    )  # fmt: skip
    try:
        end = time.monotonic() + 120
        while not http_ready(port):
            assert time.monotonic() < end, (tmp_path / "alertmanager.log").read_text()
            time.sleep(0.2)
        now = datetime.now(UTC).replace(microsecond=0)
        started = now - timedelta(minutes=5)
        _post(port, [
            {"labels": {"alertname": "GpufabricLinkDown", "device": "cmp-su1-leaf1", "port": "swp1"},
             "annotations": {"summary": "cmp-su1-leaf1 swp1 down"}, "startsAt": started.isoformat()},
            {"labels": {"alertname": "GpufabricLinkDown", "device": "cmp-su4-leaf1", "port": "swp1"},
             "startsAt": started.isoformat()},  # a leaf the job does not use
            {"labels": {"alertname": "GpufabricSlowPart", "host": "gpu03"},
             "startsAt": (now - timedelta(hours=2)).isoformat()},
        ])  # fmt: skip
        since = now - timedelta(minutes=30)
        done = run_in_process("gpufabric", "job", "timeline", "--nodes", "gpu[01,03]", "--since", since.isoformat(),
                              "--alertmanager", f"http://127.0.0.1:{port}", "--audit-log", tmp_path / "none",
                              "--remediation-log", tmp_path / "none", "--json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        events = json.loads(done.stdout)["events"]
        got = [(e["kind"], e["device"], e["port"], e["node"], e["time"]) for e in events]
        assert got == [
            ("alert", None, None, "gpu03", since.isoformat(timespec="milliseconds").replace("+00:00", "Z")),
            ("alert", "cmp-su1-leaf1", "swp1", None, started.isoformat(timespec="milliseconds").replace("+00:00", "Z")),
        ]
        assert events[1]["summary"] == "GpufabricLinkDown active: cmp-su1-leaf1 swp1 down"
        assert events[0]["summary"].startswith("GpufabricSlowPart active (firing since ")
        # Alertmanager's fingerprint names the alert in the source.
        assert (
            events[1]["source"].startswith(f"http://127.0.0.1:{port}/api/v2/alerts#") and len(events[1]["source"]) > 50
        )
    finally:
        manager.terminate()
        manager.wait(60)
