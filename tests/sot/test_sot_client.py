"""The source of truth's client against a hostile server on loopback: bad JSON, huge bodies, wrong types,
links elsewhere, escape sequences; and the URL and token rules. Each is a clear error (exit 2), bounded."""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_in_process

from gpufabric.intent import load_intent_text
from gpufabric.sot.client import MAX_BODY, Nautobot, SotError, check_url, token_from_env
from gpufabric.sot.service import metres, pull

TOKEN = "canary-sot-token-5f0e1d2c"
Answer = tuple[int, bytes]


class Hostile(http.server.ThreadingHTTPServer):
    answer: Callable[[str, str], Answer]
    seen: list[tuple[str, str, str]]


class Handler(http.server.BaseHTTPRequestHandler):
    server: Hostile

    def _reply(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.server.seen.append((self.command, self.path, self.headers.get("Authorization", "")))
        status, body = self.server.answer(self.command, self.path)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client stopped reading
            self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_DELETE = _reply  # noqa: N815 (http.server's names)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hostile() -> Iterator[Callable[[Callable[[str, str], Answer]], tuple[str, Hostile]]]:
    servers: list[Hostile] = []

    def start(answer: Callable[[str, str], Answer]) -> tuple[str, Hostile]:
        server = Hostile(("127.0.0.1", 0), Handler)
        server.answer, server.seen = answer, []
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def page(results: Any, next_link: Any = None) -> Answer:
    return 200, json.dumps({"count": 1, "next": next_link, "previous": None, "results": results}).encode()


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (lambda m, p: (200, b"<html>not json</html>"), "not valid JSON"),
        (lambda m, p: (200, b"[" * 100_000), "nests deeper than 200 levels"),  # past the parser's recursion
        (lambda m, p: (200, b" " * (MAX_BODY + 10)), f"larger than {MAX_BODY} bytes"),
        (lambda m, p: page("nope"), "not a page of results"),
        (lambda m, p: (200, b'{"results": [1, 2]}'), "without a text id"),
        (lambda m, p: page([{"id": 7, "name": "Active"}]), "without a text id"),
        (lambda m, p: page([], "http://127.0.0.2:9/api/extras/statuses/?offset=1"), "next page is elsewhere"),
        (lambda m, p: page([], 42), "next page's link is not text"),
        (lambda m, p: (500, b"\x1b]0;owned\x07\x1b[31mboom " + b"x" * 5000), "answered 500"),
        (lambda m, p: page([{"id": "a", "name": "Planned"}]), "has no status 'Active'"),
    ],
)
def test_hostile_answers_are_clear_errors(hostile: Any, answer: Any, words: str, tmp_path: Path) -> None:
    url, server = hostile(answer)
    began = time.monotonic()
    done = run_in_process("gpufabric", "sot", "push", "--url", url, GPUFABRIC_SOT_TOKEN=TOKEN)
    assert time.monotonic() - began < 60
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and "Traceback" not in done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr  # the server's escapes shown escaped
    assert len(done.stderr) < 2000  # the server's text is cut
    assert TOKEN not in done.stdout + done.stderr
    assert server.seen and all(auth == f"Token {TOKEN}" for _, _, auth in server.seen)


def test_a_page_that_never_ends_is_bounded(hostile: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gpufabric.sot.client.MAX_PAGES", 5)
    url, server = hostile(lambda m, p: page([{"id": "x"}], f"{base}/api/dcim/racks/?offset=1"))
    base = url
    with pytest.raises(SotError, match="more than 5 pages"):
        Nautobot(url, TOKEN).objects("dcim/racks")
    assert len(server.seen) == 5


@pytest.mark.slow  # waits out a server that holds its answers: seconds; in the whole suite
def test_timeout_bounds_each_request_and_is_checked(hostile: Any) -> None:
    # A server that holds every answer 2.5 s: --timeout 1 stops the push there (exit 2, named), the default
    # (60 s) waits for it. The slow answer is the server's, so a busy machine only makes it slower still.
    def slow(method: str, path: str) -> Answer:
        time.sleep(2.5)
        return 200, b"<html>late</html>"

    url, _server = hostile(slow)
    done = run_in_process("gpufabric", "sot", "push", "--url", url, "--timeout", "1", GPUFABRIC_SOT_TOKEN=TOKEN)
    assert done.returncode == 2 and "answer within 1 s" in done.stderr, done.stderr
    done = run_in_process("gpufabric", "sot", "push", "--url", url, GPUFABRIC_SOT_TOKEN=TOKEN)
    assert done.returncode == 2 and "not valid JSON" in done.stderr, done.stderr  # the late answer was read
    done = run_in_process("gpufabric", "sot", "pull", "--url", url, "--timeout", "0", GPUFABRIC_SOT_TOKEN=TOKEN)
    assert done.returncode == 2 and "--timeout" in done.stderr


def test_unreachable_server_is_an_error_naming_it() -> None:
    with pytest.raises(SotError, match=re.escape("cannot reach the source of truth at http://127.0.0.1:9")):
        Nautobot("http://127.0.0.1:9", TOKEN, timeout=5).objects("dcim/racks")


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ftp://127.0.0.1/", "give http(s)://HOST"),
        ("http://192.0.2.10", "plain http only to a loopback address"),
        ("http://nautobot.example.net", "plain http only to a loopback address"),
        ("https://user:pw@nautobot.example.net", "no user, query or fragment"),
        ("https://nautobot.example.net/?x=1", "no user, query or fragment"),
        ("http://127.0.0.1:99999", "is not a URL"),
        ("127.0.0.1:8080", "give http(s)://HOST"),
    ],
)
def test_url_is_checked(url: str, words: str) -> None:
    with pytest.raises(SotError, match=re.escape(words)):
        check_url(url)


def test_urls_allowed() -> None:
    assert check_url("https://nautobot.example.net/") == "https://nautobot.example.net"
    assert check_url("http://localhost:8080") == "http://localhost:8080"
    assert check_url("http://[::1]:8080") == "http://[::1]:8080"


def test_token_only_by_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOT_T", TOKEN)
    assert token_from_env("SOT_T") == TOKEN
    with pytest.raises(SotError, match="give the NAME of an environment variable"):
        token_from_env(TOKEN)
    monkeypatch.setenv("SOT_BAD", "a b\nc")
    with pytest.raises(SotError, match="does not hold an API token") as caught:
        token_from_env("SOT_BAD")
    assert "a b" not in str(caught.value)
    monkeypatch.delenv("SOT_T")
    with pytest.raises(SotError, match=r"SOT_T .*not set"):
        token_from_env("SOT_T")


def test_cli_refuses_without_token_or_with_plain_http_afar() -> None:
    done = run_in_process("gpufabric", "sot", "push", "--url", "http://127.0.0.1:9", GPUFABRIC_SOT_TOKEN="")
    assert done.returncode == 2 and "GPUFABRIC_SOT_TOKEN" in done.stderr
    done = run_in_process("gpufabric", "sot", "pull", "--url", "http://192.0.2.1", GPUFABRIC_SOT_TOKEN=TOKEN)
    assert done.returncode == 2 and "loopback" in done.stderr and TOKEN not in done.stderr


@pytest.mark.parametrize(
    ("racks", "devices", "words"),
    [
        ([{"id": "r", "name": "r01", "custom_fields": {"gpufabric_row": "1", "gpufabric_column": 1}}], [], "whole"),
        ([{"id": "r", "name": 5, "custom_fields": {}}], [], "is not text"),
        ([{"id": "r", "name": "r01", "custom_fields": {}}], [], "no name, row or column"),
        ([], [{"id": "d", "name": "gpu01", "rack": {"id": "elsewhere"}, "custom_fields": {}}], "not the fabric's"),
        ([], [{"id": "d", "name": "gpu01", "custom_fields": {"gpufabric_group": "gpu"}}], "no gpufabric_index"),
        ([], [{"id": "d", "name": "gpu01", "position": True, "custom_fields": {}}], "not a whole number"),
    ],
)
def test_pull_refuses_wrong_types(hostile: Any, racks: Any, devices: Any, words: str) -> None:
    tagged = [{"tags": [{"id": "t"}]} | o for o in racks + devices]  # the fabric's tag, as depth 0 shows it

    def answer(method: str, path: str) -> Answer:
        if "/tags/" in path:
            return page([{"id": "t", "name": "gpufabric-lab"}])
        return page([o for o in tagged if ("/racks/" in path) == (o in tagged[: len(racks)])])

    url, _ = hostile(answer)
    text = (ROOT / "inventory" / "fabric.yml").read_text()
    with pytest.raises(SotError, match=re.escape(words)):
        pull(load_intent_text(text, "fabric.yml"), text, Nautobot(url, TOKEN))


def test_pull_reads_a_cable_length_in_any_unit() -> None:
    assert metres("1234", {"value": "cm", "label": "Centimeters"}, "x") == 13
    assert metres(10, "ft", "x") == 4
    assert metres(2, None, "x") == 2
    for value, unit in (("nan", "m"), (-1, "m"), (3, "parsec"), ("long", "m")):
        with pytest.raises(SotError, match="cable x"):
            metres(value, unit, "x")
