"""The source of truth's client and its token against real HTTP(S) servers on loopback (tests/http_doubles.py):
a redirect to another port, another host or to plain http is refused and the second server never sees
the token; a server echoing the token in its error is shown redacted; a dripping server is stopped by
the whole-request deadline and the command's; a page larger than asked for is refused."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import run_in_process
from http_doubles import Reply, redirect, serve
from tls_server import make_pki

from gpufabric.sot import client as client_mod
from gpufabric.sot.client import Nautobot, SotError

TOKEN = "canary-sot-token-91c2d7e4"


def page(results: list[dict[str, str]], next_link: str | None = None) -> Reply:
    return Reply(200, json.dumps({"count": len(results), "next": next_link, "results": results}).encode())


def ok(method: str, path: str) -> Reply:
    return page([{"id": "a", "name": "Active"}])


@pytest.mark.parametrize("elsewhere", ["127.0.0.1", "127.0.0.2"])  # another port; another host
def test_a_redirect_to_another_origin_is_refused_and_the_token_stays(elsewhere: str) -> None:
    with serve(ok, address=elsewhere) as other, serve(redirect(other.url)) as first:
        with pytest.raises(SotError) as caught:
            Nautobot(first.url, TOKEN, timeout=5).objects("extras/statuses")
        assert f"a redirect to {other.url}" in str(caught.value) and "follows no redirect" in str(caught.value)
        assert first.authorizations == [f"Token {TOKEN}"]
        assert other.seen == []  # never reached: neither the token nor the request went there


def test_a_redirect_from_https_to_http_is_refused_in_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pki = make_pki(tmp_path, "127.0.0.1")
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca_file))  # the client's default trust: the test CA
    with serve(ok) as plain, serve(redirect(plain.url), pki=pki) as secure:
        assert secure.url.startswith("https://")
        with pytest.raises(SotError, match="the token would go with it, in clear"):
            Nautobot(secure.url, TOKEN, timeout=5).objects("extras/statuses")
        assert secure.authorizations == [f"Token {TOKEN}"] and plain.seen == []
        # The same server without the redirect answers, over TLS checked against the test CA.
    with serve(ok, pki=pki) as secure:
        assert Nautobot(secure.url, TOKEN, timeout=5).objects("extras/statuses") == [{"id": "a", "name": "Active"}]


def test_a_redirect_on_the_same_origin_is_refused_too() -> None:
    # The client library would follow it (requests does); gpufabric follows none, even on its own origin: the
    # error names where it pointed, and the moved path is never asked.
    def answer(method: str, path: str) -> Reply:
        if path.startswith("/api/extras/statuses"):
            return Reply(301, b"", {"Location": "/api/moved/statuses/?limit=1000&depth=0"})
        return ok(method, path)

    with serve(answer) as server:
        with pytest.raises(SotError, match=r"a redirect to /api/moved/statuses/.*gpufabric follows no redirect"):
            Nautobot(server.url, TOKEN, timeout=5).objects("extras/statuses")
        assert [s.path.split("?")[0] for s in server.seen] == ["/api/extras/statuses/"]
        assert server.authorizations == [f"Token {TOKEN}"]


def test_a_token_echoed_back_is_never_printed() -> None:
    body = json.dumps({"detail": f"Invalid token header. Authorization: Token {TOKEN}"}).encode()
    with serve(lambda m, p: Reply(403, body)) as server:
        done = run_in_process("gpufabric", "sot", "push", "--url", server.url, GPUFABRIC_SOT_TOKEN=TOKEN)
    assert done.returncode == 2, done.stderr
    assert "answered 403" in done.stderr and "Token [redacted]" in done.stderr
    assert TOKEN not in done.stdout + done.stderr


def test_a_dripping_server_is_stopped_by_the_request_s_whole_deadline() -> None:
    # One byte every 0.2 s: a read never waits a whole --timeout, yet the answer would take minutes.
    body = json.dumps({"count": 0, "next": None, "results": [], "pad": "x" * 1000}).encode()
    with serve(lambda m, p: Reply(200, body, drip=0.2)) as server:
        began = time.monotonic()
        done = run_in_process("gpufabric", "sot", "pull", "--url", server.url, "--timeout", "2",
                              GPUFABRIC_SOT_TOKEN=TOKEN)  # fmt: skip
        took = time.monotonic() - began
    assert done.returncode == 2, done.stderr
    assert "no whole answer within 2 s" in done.stderr and took < 10


def test_the_command_has_a_deadline_across_its_requests() -> None:
    # Each page is quick, and each names a next one: --deadline stops the listing, not the page count.
    def pages(method: str, path: str) -> Reply:
        time.sleep(0.3)
        return page([{"id": "a", "name": "r"}], f"{url}{path.split('?', maxsplit=1)[0]}?offset=1")

    with serve(pages) as server:
        url = server.url
        began = time.monotonic()
        done = run_in_process("gpufabric", "sot", "pull", "--url", url, "--deadline", "2", GPUFABRIC_SOT_TOKEN=TOKEN)
        took = time.monotonic() - began
    assert done.returncode == 2, done.stderr
    assert len(server.seen) >= 2 and took < 10
    assert "deadline (2 s, --deadline) ran out" in done.stderr or "no whole answer within" in done.stderr, done.stderr


def test_a_page_larger_than_asked_for_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_mod, "PAGE", 2)
    with serve(lambda m, p: page([{"id": str(i)} for i in range(3)])) as server:
        with pytest.raises(SotError, match="a page of 3 results, more than the 2 asked for"):
            Nautobot(server.url, TOKEN, timeout=5).objects("dcim/devices")
        assert "limit=2" in server.seen[0].path


def test_an_answer_larger_than_the_bound_is_refused_before_or_while_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_mod, "MAX_BODY", 1 << 20)
    with (
        serve(lambda m, p: Reply(200, b"{}", content_length=1 << 30)) as server,
        pytest.raises(SotError, match=r"larger than 1048576 bytes \(Content-Length 1073741824\)"),
    ):
        Nautobot(server.url, TOKEN, timeout=5).objects("dcim/devices")
    with serve(lambda m, p: Reply(200, endless=True)) as server:
        began = time.monotonic()
        with pytest.raises(SotError, match="larger than 1048576 bytes"):
            Nautobot(server.url, TOKEN, timeout=5).objects("dcim/devices")
        assert time.monotonic() - began < 10


def test_bytes_that_are_not_utf8_are_located() -> None:
    with (
        serve(lambda m, p: Reply(200, b'{"results": [],\n "x": "caf\xe9"}')) as server,
        pytest.raises(SotError, match=r"the answer is not UTF-8 text \(byte 26\) \(line 2\)"),
    ):
        Nautobot(server.url, TOKEN, timeout=5).objects("dcim/devices")
