"""The remediation receiver against what should stop it: a trail it cannot write (at start and half-way),
a record edited by hand, a hold-down look that fails, a caller without the token, an address other than
loopback. Real HTTP(S) requests to the receiver on 127.0.0.1; the scheduler is the FAKE of
remediate_fakes.py (it records calls)."""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gpufabric.errors import LocatedError
from gpufabric.remediate import Guards, Remediator
from gpufabric.remediate.auth import AuthError, read_token, tls_context
from gpufabric.remediate.record import RecordError
from gpufabric.remediate.server import Receiver
from gpufabric.remediate.trail import TrailError
from tests.conftest import INVENTORY, ROOT, cli_env, example_plan, stop_command
from tests.remediate.remediate_fakes import FakeScheduler, alert, payload
from tests.tls_server import make_pki

TOKEN = "0123456789abcdef0123456789abcdef"  # a test's token, never a real one
CUT = alert("GpufabricLinkDown", device="cmp-su1-leaf1", port="swp1")  # gpu01's cable


@pytest.fixture
def plan():
    return example_plan(INVENTORY / "fabric.yml")


def _loop(plan, folder: Path, fake: FakeScheduler | None = None, hold_down: float = 600.0, **paths: Path):
    fake = fake or FakeScheduler([s.name for s in plan.servers])
    state = paths.get("state", folder / "s.json")
    audit = paths.get("audit", folder / "a.jsonl")
    return Remediator(plan, [fake], Guards(0.5, 0.5, hold_down), state_path=state, audit_path=audit), fake


class Served:
    def __init__(self, receiver: Receiver, context: ssl.SSLContext | None = None) -> None:
        self.receiver = receiver
        self.context = context
        self.thread = threading.Thread(target=receiver.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def request(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None):
        port = self.receiver.server_port
        if self.context is not None:
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                "127.0.0.1", port, timeout=30, context=self.context
            )
        else:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            sent = {"Content-Type": "application/json", **(headers or {})}
            conn.request(method, path, body=body or None, headers=sent)
            answer = conn.getresponse()
            return answer.status, json.loads(answer.read()), dict(answer.getheaders())
        finally:
            conn.close()

    def post(self, *alerts: dict[str, object], token: str | None = None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return self.request("POST", "/webhook", json.dumps(payload(*alerts)).encode(), headers)

    def close(self) -> None:
        self.receiver.shutdown()
        self.receiver.server_close()
        self.thread.join(30)


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    started: list[Served] = []

    def start(loop: Remediator, context: ssl.SSLContext | None = None, **options) -> Served:
        served = Served(Receiver(("127.0.0.1", 0), loop, **options), context)
        started.append(served)
        return served

    yield start
    for served in started:
        served.close()


def _wait(what: str, ok: Callable[[], bool], deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while not ok():
        assert time.monotonic() < end, f"not within {deadline:.0f} s: {what}"
        time.sleep(0.05)


def _serve_command(tmp_path: Path, *args: str, timeout: float = 90.0) -> subprocess.CompletedProcess[str]:
    """`remediate serve` as a user runs it, expected to refuse before it listens: a receiver that starts
    anyway is stopped after `timeout` and the test fails on it."""
    command = [sys.executable, "-m", "gpufabric", "remediate", "serve", str(INVENTORY / "fabric.yml"), "--dry-run",
               "--state", str(tmp_path / "s.json"), *args]  # fmt: skip
    env = cli_env(PYTHONPATH=str(ROOT), HOME=str(tmp_path))
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_command(proc, grace=30)
        pytest.fail(f"the receiver started where it should have refused: {' '.join(args)}")
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def _refused(done: subprocess.CompletedProcess[str], *said: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    for words in said:
        assert words in done.stderr, done.stderr


# -- a trail it cannot write, at start ---------------------------------------------------------------


def test_a_fifo_as_the_trail_is_refused_at_start(plan, tmp_path):
    os.mkfifo(tmp_path / "a.jsonl", 0o600)
    with pytest.raises(TrailError, match="is a FIFO, not a plain file"):
        _loop(plan, tmp_path)
    done = _serve_command(tmp_path, "--audit-log", str(tmp_path / "a.jsonl"))
    _refused(done, f"the remediation trail {tmp_path / 'a.jsonl'} is a FIFO, not a plain file")


def test_a_symlinked_trail_is_refused_and_nothing_is_written_through_it(plan, tmp_path):
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("someone's file\n")
    (tmp_path / "a.jsonl").symlink_to(elsewhere)
    with pytest.raises(TrailError, match="is a symbolic link"):
        _loop(plan, tmp_path)
    done = _serve_command(tmp_path, "--audit-log", str(tmp_path / "a.jsonl"))
    _refused(done, "is a symbolic link")
    assert elsewhere.read_text() == "someone's file\n"


def test_dev_full_as_the_trail_is_refused_at_start(plan, tmp_path):
    with pytest.raises(TrailError, match="/dev/full is a character device"):
        _loop(plan, tmp_path, audit=Path("/dev/full"))
    _refused(_serve_command(tmp_path, "--audit-log", "/dev/full"), "/dev/full is a character device")


def test_a_trail_or_record_in_a_folder_others_may_write_is_refused(plan, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(TrailError, match=r"folder of the remediation trail .* is writable by others"):
        _loop(plan, tmp_path, audit=shared / "a.jsonl")
    with pytest.raises(TrailError, match=r"folder of the remediation record .* is writable by others"):
        _loop(plan, tmp_path, state=shared / "s.json")


def test_a_trail_others_may_write_is_refused(plan, tmp_path):
    (tmp_path / "a.jsonl").write_text("")
    (tmp_path / "a.jsonl").chmod(0o666)
    with pytest.raises(TrailError, match="may be written by others"):
        _loop(plan, tmp_path)


# -- a trail or record that fails half-way ------------------------------------------------------------


def test_a_trail_replaced_by_a_folder_stops_the_loop_before_it_drains(plan, tmp_path, serve, caplog):
    loop, fake = _loop(plan, tmp_path)
    loop.start()
    served = serve(loop)
    (tmp_path / "a.jsonl").unlink()
    (tmp_path / "a.jsonl").mkdir()
    with caplog.at_level(logging.ERROR, logger="gpufabric.remediate"):
        code, body, _ = served.post(CUT)
        assert code == 503 and "a.jsonl" in body["error"] and "acts on nothing" in body["error"]
        assert fake.calls == [] and fake.drained == []  # the intent could not be written: nothing drained
        # Put right, the trail is still not trusted: the receiver acts on nothing until it is restarted.
        (tmp_path / "a.jsonl").rmdir()
        code, _, _ = served.post(alert("GpufabricLinkDown", fingerprint="b2", device="cmp-su2-leaf1", port="swp1"))
        assert code == 503 and fake.calls == []
    said = [r for r in caplog.records if "acts on nothing more" in r.getMessage()]
    assert len(said) == 1  # said once, not per notification
    code, health, _ = served.request("GET", "/healthz")
    assert code == 503 and health["status"] == "not acting"


def test_a_record_that_cannot_be_written_stops_the_loop_before_it_drains(plan, tmp_path, serve):
    loop, fake = _loop(plan, tmp_path)
    loop.start()
    served = serve(loop)
    (tmp_path / "s.json").unlink()
    (tmp_path / "s.json").mkdir()  # the record's rename now fails
    code, body, _ = served.post(CUT)
    assert code == 503 and "remediation record" in body["error"]
    assert fake.calls == []
    intents = [json.loads(x) for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert [r["action"] for r in intents] == ["start", "intent"]  # the intent, and no drain after it


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs (root)")
def test_a_full_disk_under_the_trail_stops_the_loop_before_it_drains(plan, tmp_path, serve):
    disk = tmp_path / "disk"
    disk.mkdir(mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(disk)], check=True)
    try:
        loop, fake = _loop(plan, tmp_path, audit=disk / "a.jsonl")
        loop.start()
        served = serve(loop)
        # The trail's last page filled to its end, then the disk: the next line needs a page there is none of.
        trail = disk / "a.jsonl"
        page = os.statvfs(disk).f_bsize
        with trail.open("a") as fh:
            fh.write(" " * (page - trail.stat().st_size % page - 1) + "\n")
        with (disk / "filler").open("wb", buffering=0) as fh, pytest.raises(OSError, match="No space left"):
            while True:
                fh.write(b"\0" * page)
                fh.flush()
        code, body, _ = served.post(CUT)
        assert code == 503 and "No space left on device" in body["error"]
        assert fake.calls == [] and fake.drained == []
    finally:
        subprocess.run(["umount", str(disk)], check=True)


# -- a record edited by hand ----------------------------------------------------------------------------


def _record(held: dict, out: dict | None = None) -> str:
    return json.dumps({"version": 1, "held": held, "out": out or {}}, indent=1)


HELD = {
    "alert": {"name": "GpufabricLinkDown", "status": "resolved", "fingerprint": "a1",
              "starts_at": "2026-11-25T15:00:00Z", "labels": {"alertname": "GpufabricLinkDown"}},
    "part": "cmp-su1-leaf1:swp1", "nodes": ["gpu01"], "resolved_at": 1_790_000_000.0,
}  # fmt: skip
OUT = {"gpu01": {"mark": "gpufabric remediate: GpufabricLinkDown@cmp-su1-leaf1:swp1", "ours": ["fake"],
                 "holders": ["a1"], "dry": False}}  # fmt: skip
DEEP = 150  # under the JSON reader's own bound (200): the record's shape must refuse it


@pytest.mark.parametrize(
    ("text", "field", "said", "marker"),
    [
        (_record({"a1": {**HELD, "resolved_at": "soon"}}, OUT), "held.a1.resolved_at", "a number or null",
         '"resolved_at": "soon"'),
        (_record({"a1": {**HELD, "nodes": "gpu01"}}, OUT), "held.a1.nodes", "a list is expected, not a string",
         '"nodes": "gpu01"'),
        (
            _record({"a1": {**HELD, "alert": {**HELD["alert"], "labels": {"x": "[" * DEEP + "]" * DEEP}}}}, OUT)
            .replace('"[' + "[" * (DEEP - 1), "[" * DEEP).replace("]" * DEEP + '"', "]" * DEEP),
            "held.a1.alert.labels.x", "a string is expected, not a list", '"x": [[[',
        ),
        ('{"version": 1, "held": ' + "[" * 100_000 + "]" * 100_000 + ', "out": {}}', "", "nests deeper than 200", ""),
        (_record({"a1": HELD}, {"gpu01": {**OUT["gpu01"], "holders": ["b2"]}}), "out.gpu01.holders[0]", "no alert b2",
         '"b2"'),
        (_record({"a1": {**HELD, "resolved_at": 1e300}}, OUT), "held.a1.resolved_at", "more than a day ahead",
         '"resolved_at": 1e+300'),
        (_record({"a1": {**HELD, "alert": {**HELD["alert"], "starts_at": "2026-13-45T15:00:00Z"}}}, OUT),
         "held.a1.alert.starts_at", "is not a time", '"starts_at": "2026-13'),
    ],
    ids=["resolved_at soon", "nodes a string", "deep nesting", "deeper than the reader", "a stray holder", "far ahead",
         "a date that is none"],
)  # fmt: skip
def test_a_hand_edited_record_stops_the_start_with_a_located_error(plan, tmp_path, text, field, said, marker):
    (tmp_path / "s.json").write_text(text)
    with pytest.raises(LocatedError) as caught:
        _loop(plan, tmp_path)
    shown = caught.value.render()
    assert said in shown and str(tmp_path / "s.json") in shown
    assert not (tmp_path / "a.jsonl").exists() or "intent" not in (tmp_path / "a.jsonl").read_text()
    if field:
        assert isinstance(caught.value, RecordError)
        line = next(i for i, t in enumerate(text.splitlines(), 1) if marker in t)
        assert f"s.json:{line}: {field}:" in shown, shown  # the file, the line and the field


def test_a_hand_edited_record_is_exit_2_from_the_command_line(tmp_path):
    (tmp_path / "s.json").write_text(_record({"a1": {**HELD, "resolved_at": "soon"}}, OUT))
    done = _serve_command(tmp_path, "--audit-log", str(tmp_path / "a.jsonl"))
    _refused(done, "held.a1.resolved_at: a number or null is expected, not a string", "the receiver did not start")


def test_a_record_as_the_loop_writes_it_is_read_back(plan, tmp_path):
    (tmp_path / "s.json").write_text(_record({"a1": HELD}, OUT))
    loop, _ = _loop(plan, tmp_path)
    assert loop.held["a1"].resolved_at == 1_790_000_000.0 and loop.out["gpu01"].holders == ["a1"]


# -- the hold-down thread -------------------------------------------------------------------------------


def test_the_hold_down_thread_survives_an_error_and_says_so(plan, tmp_path, serve, caplog):
    loop, fake = _loop(plan, tmp_path, hold_down=0.0)
    served = serve(loop)
    assert served.post(CUT)[0] == 200 and fake.drained == ["gpu01"]
    real, failures = fake.put_back, []

    def breaks_once(node, mark):  # a bug's exception, not a scheduler's refusal
        if not failures:
            failures.append(node)
            raise KeyError("an unexpected answer")
        return real(node, mark)

    fake.put_back = breaks_once
    with caplog.at_level(logging.ERROR, logger="gpufabric.remediate"):
        assert served.post({**CUT, "status": "resolved"})[0] == 500  # the notification's own look failed
        served.receiver.start_ticking(0.05)
        _wait("gpu01 put back by a later look", lambda: fake.drained == [])
        # The look that put it back is counted once it has ended, a moment after the put-back: waited for.
        _wait("that look counted", lambda: served.request("GET", "/healthz")[1]["looks"] >= 1)
    assert failures == ["gpu01"]
    code, health, _ = served.request("GET", "/healthz")
    assert code == 200 and health["hold_down_thread"] == "running" and health["looks"] >= 1
    records = [json.loads(x) for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert [r["action"] for r in records][-3:] == ["intent", "intent", "resume"]  # tried, failed, tried again


def test_a_failing_look_is_logged_counted_and_the_thread_goes_on(plan, tmp_path, serve, caplog):
    loop, _fake = _loop(plan, tmp_path, hold_down=0.0)
    served = serve(loop)
    calls = []

    def broken_tick():
        calls.append(1)
        if len(calls) < 3:
            raise ZeroDivisionError("a bug in a look")
        return []

    loop.tick = broken_tick  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR, logger="gpufabric.remediate"):
        served.receiver.start_ticking(0.05)
        _wait("three looks", lambda: len(calls) >= 4)
    code, health, _ = served.request("GET", "/healthz")
    assert code == 200 and health["hold_down_thread"] == "running" and health["look_errors"] == 2
    assert health["last_look_error"] == "ZeroDivisionError: a bug in a look"  # no token here: details shown
    assert sum("a bug in a look" in r.getMessage() for r in caplog.records) == 2


# -- who may ask ------------------------------------------------------------------------------------


def _token_file(tmp_path: Path, text: str = TOKEN + "\n", mode: int = 0o600) -> Path:
    path = tmp_path / "token"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_a_post_without_the_token_gets_401_and_drains_nothing(plan, tmp_path, serve):
    loop, fake = _loop(plan, tmp_path)
    served = serve(loop, token=read_token(_token_file(tmp_path)))
    for token in (None, "wrong" + TOKEN, TOKEN[:-1]):
        code, body, headers = served.post(CUT, token=token)
        assert code == 401 and "bearer token" in body["error"] and headers["WWW-Authenticate"].startswith("Bearer")
    code, _, _ = served.request("POST", "/webhook", b"{}", {"Authorization": f"Basic {TOKEN}"})
    assert code == 401 and fake.calls == []
    code, health, _ = served.request("GET", "/healthz")
    assert code == 200 and "last_look_error" not in health  # the details only to a caller with the token
    code, body, _ = served.post(CUT, token=TOKEN)
    assert code == 200 and fake.drained == ["gpu01"]


def test_a_token_file_others_can_read_or_that_holds_no_token_is_refused(tmp_path):
    with pytest.raises(AuthError, match="readable or writable by others") as caught:
        read_token(_token_file(tmp_path, mode=0o644))
    assert TOKEN not in str(caught.value)
    with pytest.raises(AuthError, match="does not hold one bearer token") as caught:
        read_token(_token_file(tmp_path, "short\n"))
    with pytest.raises(AuthError, match="does not hold one bearer token") as caught:
        read_token(_token_file(tmp_path, f"{TOKEN}\n{TOKEN}\n"))
    assert TOKEN not in str(caught.value)
    assert read_token(_token_file(tmp_path, f"  {TOKEN}\n\n")) == TOKEN.encode()


def test_no_address_but_loopback_without_a_token(plan, tmp_path):
    loop, _ = _loop(plan, tmp_path)
    with pytest.raises(AuthError, match="not a loopback address"):
        Receiver(("0.0.0.0", 0), loop)
    done = _serve_command(tmp_path, "--listen", "0.0.0.0:9", "--audit-log", str(tmp_path / "a.jsonl"))
    _refused(done, "--listen 0.0.0.0: not a loopback address, and no --token-file")


def test_the_token_is_never_shown_or_recorded(tmp_path):
    token = _token_file(tmp_path, mode=0o644)
    done = _serve_command(tmp_path, "--token-file", str(token), "--audit-log", str(tmp_path / "a.jsonl"))
    _refused(done, "readable or writable by others")
    assert TOKEN not in done.stderr + done.stdout


def test_tls_with_the_token_drains_and_plain_http_gets_nothing(plan, tmp_path, serve):
    pki = make_pki(tmp_path, "127.0.0.1")
    pki.key_file.chmod(0o600)
    client = ssl.create_default_context(cafile=str(pki.ca_file))
    loop, fake = _loop(plan, tmp_path)
    served = serve(loop, client, token=TOKEN.encode(), tls=tls_context(pki.cert_file, pki.key_file))
    # A client that connects and never says anything holds no one else up: its handshake waits in its thread.
    with socket.create_connection(("127.0.0.1", served.receiver.server_port), timeout=30):
        assert served.post(CUT, token=None)[0] == 401
        code, _body, _ = served.post(CUT, token=TOKEN)
    assert code == 200 and fake.drained == ["gpu01"]
    plain = http.client.HTTPConnection("127.0.0.1", served.receiver.server_port, timeout=30)
    with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
        plain.request("POST", "/webhook", body=b"{}", headers={"Authorization": f"Bearer {TOKEN}"})
        plain.getresponse().read()
    plain.close()
    assert fake.calls == [("take_out", "gpu01", fake.calls[0][2])]


def test_a_key_others_can_read_or_a_certificate_that_is_none_is_refused(tmp_path):
    pki = make_pki(tmp_path, "127.0.0.1")
    pki.key_file.chmod(0o644)
    with pytest.raises(AuthError, match="readable by others"):
        tls_context(pki.cert_file, pki.key_file)
    pki.key_file.chmod(0o600)
    with pytest.raises(AuthError, match="not a PEM certificate and its key"):
        tls_context(pki.ca_file, pki.key_file)  # the CA's certificate does not go with this key
