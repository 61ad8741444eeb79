"""`gpufabric remediate serve` and `gpufabric telemetry alertmanager` as a user runs them."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import INVENTORY, ROOT, run_in_process
from tests.remediate.remediate_fakes import alert, payload


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow  # a receiver process started, fed and stopped: seconds; in the whole suite
def test_serve_dry_run_receives_records_and_stops_on_sigterm(tmp_path: Path):
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    log = (tmp_path / "serve.log").open("w")
    serve = subprocess.Popen(
        [sys.executable, "-m", "gpufabric", "remediate", "serve", str(INVENTORY / "fabric.yml"), "--dry-run",
         "--listen", f"127.0.0.1:{port}", "--state", str(tmp_path / "s.json"),
         "--audit-log", str(tmp_path / "a.jsonl")],
        stdout=subprocess.DEVNULL, stderr=log, env=env,
    )  # fmt: skip
    try:
        end = time.monotonic() + 120
        while "receiving on" not in (tmp_path / "serve.log").read_text():
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < end, "the receiver did not start within 120 s"
            time.sleep(0.2)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        body = json.dumps(payload(alert("GpufabricLinkDown", device="cmp-su1-leaf1", port="swp1"))).encode()
        conn.request("POST", "/webhook", body=body, headers={"Content-Type": "application/json"})
        answer = conn.getresponse()
        assert answer.status == 200 and json.loads(answer.read())["actions"][0].startswith("drain (dry run) gpu01")
        conn.close()
        start, record = (json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines())
        assert start["action"] == "start"  # the trail proved writable before the receiver listened
        assert (record["action"], record["nodes"], record["dry_run"]) == ("drain", ["gpu01"], True)
    finally:
        serve.send_signal(signal.SIGTERM)
        code = serve.wait(60)
    assert code == 0
    assert "drain (dry run) gpu01: GpufabricLinkDown cmp-su1-leaf1:swp1" in (tmp_path / "serve.log").read_text()


def test_serve_refuses_bad_settings():
    fabric = str(INVENTORY / "fabric.yml")
    share = run_in_process("gpufabric", "remediate", "serve", fabric, "--max-share", "2")
    assert share.returncode == 2 and "a share from 0 to 1" in share.stderr
    hold = run_in_process("gpufabric", "remediate", "serve", fabric, "--hold-down", "ten")
    assert hold.returncode == 2 and "600s, 10m" in hold.stderr
    listen = run_in_process("gpufabric", "remediate", "serve", fabric, "--listen", "example.com:80")
    assert listen.returncode == 2 and "IP address" in listen.stderr
    nobody = run_in_process("gpufabric", "remediate", "serve", fabric, "--listen", "127.0.0.1:1")
    assert nobody.returncode == 2 and "no scheduler named" in nobody.stderr


def test_telemetry_alertmanager_writes_the_routes(tmp_path: Path):
    fabric, target = str(INVENTORY / "fabric.yml"), tmp_path / "alertmanager.yml"
    assert run_in_process("gpufabric", "telemetry", "alertmanager", fabric, "-o", str(target)).returncode == 0
    text = target.read_text()
    assert "url: http://127.0.0.1:9095/webhook" in text and "send_resolved: true" in text
    assert run_in_process("gpufabric", "telemetry", "alertmanager", fabric, "--webhook", "ftp://x").returncode == 2
    assert run_in_process("gpufabric", "telemetry", "alertmanager", fabric, "--group-wait", "soon").returncode == 2


def test_telemetry_alertmanager_writes_the_webhook_s_http_config(tmp_path: Path):
    fabric, target = str(INVENTORY / "fabric.yml"), tmp_path / "alertmanager.yml"
    done = run_in_process(
        "gpufabric", "telemetry", "alertmanager", fabric, "--webhook", "https://127.0.0.1:9095/webhook",
        "--webhook-token-file", "/etc/alertmanager/remediate.token", "--webhook-ca-file", "/etc/alertmanager/ca.pem",
        "-o", str(target),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = target.read_text()
    assert "credentials_file: /etc/alertmanager/remediate.token" in text and "ca_file: /etc/alertmanager/ca.pem" in text
    relative = run_in_process("gpufabric", "telemetry", "alertmanager", fabric, "--webhook-token-file", "token")
    assert relative.returncode == 2 and "not an absolute path" in relative.stderr


@pytest.mark.slow  # a receiver process started, fed over TLS and stopped: seconds; in the whole suite
def test_serve_with_a_token_and_tls_answers_only_the_token_and_never_shows_it(tmp_path: Path):
    import ssl

    from tests.tls_server import make_pki

    secret = "5ecre75ecre75ecre75ecre75ecre7aa"
    token = tmp_path / "token"
    token.write_text(secret + "\n")
    token.chmod(0o600)
    pki = make_pki(tmp_path, "127.0.0.1")
    pki.key_file.chmod(0o600)
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    log = (tmp_path / "serve.log").open("w")
    serve = subprocess.Popen(
        [sys.executable, "-m", "gpufabric", "remediate", "serve", str(INVENTORY / "fabric.yml"), "--dry-run",
         "--listen", f"127.0.0.1:{port}", "--state", str(tmp_path / "s.json"), "--audit-log",
         str(tmp_path / "a.jsonl"), "--token-file", str(token), "--tls-cert", str(pki.cert_file),
         "--tls-key", str(pki.key_file), "-vv"],
        stdout=subprocess.DEVNULL, stderr=log, env=env,
    )  # fmt: skip
    context = ssl.create_default_context(cafile=str(pki.ca_file))
    body = json.dumps(payload(alert("GpufabricLinkDown", device="cmp-su1-leaf1", port="swp1"))).encode()

    def post(headers: dict[str, str]) -> tuple[int, dict]:
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=30, context=context)
        try:
            conn.request("POST", "/webhook", body=body, headers={"Content-Type": "application/json", **headers})
            answer = conn.getresponse()
            return answer.status, json.loads(answer.read())
        finally:
            conn.close()

    try:
        end = time.monotonic() + 120
        while "receiving on" not in (tmp_path / "serve.log").read_text():
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < end, "the receiver did not start within 120 s"
            time.sleep(0.2)
        assert f"https://127.0.0.1:{port}/webhook" in (tmp_path / "serve.log").read_text()
        assert post({})[0] == 401
        assert post({"Authorization": "Bearer " + secret[::-1]})[0] == 401
        code, answer = post({"Authorization": f"Bearer {secret}"})
        assert code == 200 and answer["actions"][0].startswith("drain (dry run) gpu01")
    finally:
        serve.send_signal(signal.SIGTERM)
        code = serve.wait(60)
    assert code == 0
    for written in (tmp_path / "serve.log", tmp_path / "a.jsonl", tmp_path / "s.json"):
        assert secret not in written.read_text() and secret[::-1] not in written.read_text()
