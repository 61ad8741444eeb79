"""The real Alertmanager (Debian's prometheus-alertmanager) notifying `remediate`'s receiver on loopback,
which drains through a FAKE scheduler that records its calls (no Slurm, no Kubernetes here).

Debian's Alertmanager reads its default template from /usr/share/prometheus/alertmanager/default.tmpl.
When the package is only unpacked (scripts/test.sh, into .cache/alertmanager), the daemon runs in a
mount namespace of its own whose /usr/share is the unpacked tree laid over the real one (overlayfs):
root, and so under the lab lock (`flock /work/notes/lab.lock`), beside the lab tier."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpufabric.acceptance.screen import screen, signal_record, slow_alerts
from gpufabric.acceptance.suite import screen_suite
from gpufabric.remediate import Guards, Remediator
from gpufabric.remediate.alertmanager import alertmanager_yaml
from gpufabric.remediate.auth import read_token, tls_context
from gpufabric.remediate.server import Receiver
from gpufabric.telemetry.alert_post import post_alerts
from tests.alertmanager_run import alertmanager_command
from tests.conftest import INVENTORY, example_plan
from tests.remediate.remediate_fakes import FakeScheduler
from tests.screen_outputs import record
from tests.tls_server import make_pki

pytestmark = [
    pytest.mark.lab,
    pytest.mark.beside_lab,
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="Debian's unpacked Alertmanager runs in a mount namespace (root)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(what: str, ok: Callable[[], bool], deadline: float = 120.0) -> None:
    end = time.monotonic() + deadline
    while not ok():
        if time.monotonic() > end:
            raise AssertionError(f"not within {deadline:.0f} s: {what}")
        time.sleep(0.2)


def _post_alert(port: int, labels: dict[str, str], ends: datetime | None = None) -> None:
    now = datetime.now(UTC)
    body = [{"labels": labels, "startsAt": (now - timedelta(minutes=1)).isoformat()}]
    if ends is not None:
        body[0]["endsAt"] = ends.isoformat()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v2/alerts", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert answer.status == 200


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=5) as answer:
            return answer.status == 200
    except OSError:
        return False


def test_the_real_alertmanager_drives_the_receiver(tmp_path: Path):
    plan = example_plan(INVENTORY / "fabric.yml")
    fake = FakeScheduler([s.name for s in plan.servers])
    loop = Remediator(
        plan, [fake], Guards(0.5, 0.5, 0.0), state_path=tmp_path / "s.json", audit_path=tmp_path / "a.jsonl"
    )
    receiver = Receiver(("127.0.0.1", 0), loop)
    serving = threading.Thread(target=receiver.serve_forever, args=(0.05,), daemon=True)
    serving.start()
    port = _free_port()
    config = tmp_path / "alertmanager.yml"
    config.write_text(
        alertmanager_yaml(f"http://127.0.0.1:{receiver.server_port}/webhook", group_wait="1s", group_interval="1s")
    )
    manager = subprocess.Popen(
        alertmanager_command([f"--config.file={config}", f"--storage.path={tmp_path / 'data'}",
                  f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="]),
        stdout=subprocess.DEVNULL, stderr=(tmp_path / "alertmanager.log").open("w"),
    )  # fmt: skip
    try:

        def ready() -> bool:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=5) as answer:
                    return answer.status == 200
            except OSError:
                return False

        _wait("Alertmanager ready", ready)
        cut = {"alertname": "GpufabricLinkDown", "device": "cmp-su1-leaf1", "port": "swp2", "peer": "gpu02"}
        spine = {"alertname": "GpufabricLinkDown", "device": "cmp-spine1", "port": "swp1", "peer": "cmp-su1-leaf1"}
        _post_alert(port, cut)
        _post_alert(port, spine)
        _wait("gpu02 drained", lambda: fake.drained == ["gpu02"])
        records = lambda: [  # noqa: E731 (the trail is written after the action: absent for a moment on a busy machine)
            json.loads(x)
            for x in ((tmp_path / "a.jsonl").read_text() if (tmp_path / "a.jsonl").exists() else "").splitlines()
        ]
        _wait("the spine's alert recorded", lambda: any(r["part"] == "cmp-spine1:swp1" for r in records()))
        mark = "gpufabric remediate: GpufabricLinkDown@cmp-000011,cmp-su1-leaf1:swp2"  # the cable, then its leaf end
        assert fake.calls == [("take_out", "gpu02", mark)]
        _post_alert(port, cut, ends=datetime.now(UTC) - timedelta(seconds=1))
        _wait("gpu02 resumed", lambda: fake.drained == [])
        assert [c[:2] for c in fake.calls] == [("take_out", "gpu02"), ("put_back", "gpu02")]
        drained = next(r for r in records() if r["action"] == "drain")
        assert drained["alert"]["labels"]["peer"] == "gpu02" and len(drained["alert"]["fingerprint"]) == 16

        # The slow-node screen's signal, posted to the same Alertmanager, routed to the loop: gpu03 out.
        suite = screen_suite(plan)
        found = screen(suite, plan, record(tmp_path / "screen", suite, slow_nics={"gpu03 eth1": 180.0}))
        post_alerts(f"http://127.0.0.1:{port}", slow_alerts(signal_record(found, tmp_path), datetime.now(UTC),
                                                            timedelta(minutes=30)))  # fmt: skip
        _wait("gpu03 drained for the screen", lambda: fake.drained == ["gpu03"])
        assert fake.calls[-1] == ("take_out", "gpu03", "gpufabric remediate: GpufabricSlowPart@gpu03:eth1")
    finally:
        manager.terminate()
        manager.wait(60)
        receiver.shutdown()
        receiver.server_close()


def test_the_real_alertmanager_sends_its_bearer_token_over_tls(tmp_path: Path):
    """Alertmanager configured by `alertmanager_yaml(..., token_file, ca_file)` checks the receiver's
    certificate against the CA and sends the token from its file: the receiver (TLS, token required) drains.
    The same Alertmanager with the CA but another token is answered 401 and drains nothing."""
    plan = example_plan(INVENTORY / "fabric.yml")
    pki = make_pki(tmp_path, "127.0.0.1")
    pki.key_file.chmod(0o600)
    token = tmp_path / "remediate.token"
    token.write_text("f00dfeedf00dfeedf00dfeedf00dfeed\n")
    token.chmod(0o600)
    wrong = tmp_path / "wrong.token"
    wrong.write_text("0badc0de0badc0de0badc0de0badc0de\n")
    for credentials, fingerprint, drained in ((wrong, "wrong", []), (token, "right", ["gpu02"])):
        fake = FakeScheduler([s.name for s in plan.servers])
        folder = tmp_path / fingerprint
        folder.mkdir(mode=0o700)
        loop = Remediator(
            plan, [fake], Guards(0.5, 0.5, 600.0), state_path=folder / "s.json", audit_path=folder / "a.jsonl"
        )
        receiver = Receiver(
            ("127.0.0.1", 0), loop, token=read_token(token), tls=tls_context(pki.cert_file, pki.key_file)
        )
        serving = threading.Thread(target=receiver.serve_forever, args=(0.05,), daemon=True)
        serving.start()
        port = _free_port()
        config = folder / "alertmanager.yml"
        config.write_text(
            alertmanager_yaml(f"https://127.0.0.1:{receiver.server_port}/webhook", group_wait="1s",
                              group_interval="1s", token_file=str(credentials), ca_file=str(pki.ca_file))
        )  # fmt: skip
        log = folder / "alertmanager.log"
        manager = subprocess.Popen(
            alertmanager_command([f"--config.file={config}", f"--storage.path={folder / 'data'}",
                      f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="]),
            stdout=subprocess.DEVNULL, stderr=log.open("w"),
        )  # fmt: skip
        try:
            _wait("Alertmanager ready", lambda: _ready(port))  # noqa: B023 (used within the iteration)
            _post_alert(port, {"alertname": "GpufabricLinkDown", "device": "cmp-su1-leaf1", "port": "swp2"})
            if drained:
                _wait("gpu02 drained through TLS with the token", lambda: fake.drained == drained)  # noqa: B023
                assert [r for r in log.read_text().splitlines() if "401" in r] == []
            else:
                _wait("Alertmanager told 401", lambda: "401" in log.read_text())  # noqa: B023
                assert fake.calls == [] and "x509" not in log.read_text()  # the certificate was accepted
        finally:
            manager.terminate()
            manager.wait(60)
            receiver.shutdown()
            receiver.server_close()
    assert "f00dfeed" not in (tmp_path / "right" / "a.jsonl").read_text()  # the token is never recorded
