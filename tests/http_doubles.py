"""Real HTTP(S) servers on loopback for the tests of gpufabric's API clients (Nautobot, Kubernetes): Python's
http.server in a thread (TLS by the standard library's ssl, with a test CA from tests/tls_server.py),
each answering through a function the test gives. They record every request's method, path and
Authorization header, so a test can tell whether a token reached a server it should never reach.

`Reply.drip` sends the body a byte at a time with a pause between bytes (a server that holds a client
without ever going quiet for a whole read timeout); `Reply.endless` streams bytes until the client
hangs up (no Content-Length: a body without an end)."""

from __future__ import annotations

import contextlib
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tls_server import Pki


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    drip: float = 0.0  # seconds between bytes of the body (0: all at once)
    drip_for: float = 20.0  # a dripping answer stops after this long (so the old, unbounded client ends)
    endless: bool = False  # stream the body over and over, without a length, until the client hangs up
    content_length: int | None = None  # a Content-Length to claim (None: the body's own)


@dataclass
class Seen:
    method: str
    path: str
    authorization: str | None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    answer: Callable[[str, str], Reply]
    seen: list[Seen]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def _reply(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.server.seen.append(Seen(self.command, self.path, self.headers.get("Authorization")))
        reply = self.server.answer(self.command, self.path)
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        for key, value in reply.headers.items():
            self.send_header(key, value)
        if reply.endless:
            self.send_header("Connection", "close")
        else:
            size = reply.content_length if reply.content_length is not None else len(reply.body)
            self.send_header("Content-Length", str(size))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            self._body(reply)
        self.close_connection = True

    def _body(self, reply: Reply) -> None:
        if reply.endless:
            chunk = reply.body or b" " * 65536
            while True:
                self.wfile.write(chunk)
        if reply.drip:
            ends = time.monotonic() + reply.drip_for
            for i in range(len(reply.body)):
                if time.monotonic() > ends:
                    return
                self.wfile.write(reply.body[i : i + 1])
                self.wfile.flush()
                time.sleep(reply.drip)
            return
        self.wfile.write(reply.body)

    do_GET = do_POST = do_PATCH = do_DELETE = _reply  # noqa: N815 (http.server's names)

    def log_message(self, *args: Any) -> None:
        pass


@dataclass
class Served:
    url: str
    seen: list[Seen]

    @property
    def authorizations(self) -> list[str | None]:
        return [s.authorization for s in self.seen]


@contextlib.contextmanager
def serve(
    answer: Callable[[str, str], Reply], *, address: str = "127.0.0.1", pki: Pki | None = None
) -> Iterator[Served]:
    """A server on `address` (a free port) answering with `answer(method, path)`; https with `pki`."""
    server = _Server((address, 0), _Handler)
    server.answer, server.seen = answer, []
    if pki is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(pki.cert_file, pki.key_file)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    # shutdown() returns at serve_forever's next poll: every 0.5 s by default, half a second a test (the other
    # doubles poll as often, for the same reason)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    scheme = "https" if pki is not None else "http"
    try:
        yield Served(f"{scheme}://{address}:{server.server_address[1]}", server.seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def redirect(to: str, status: int = 302) -> Callable[[str, str], Reply]:
    """A server that sends every request on to `to` + its path."""
    return lambda method, path: Reply(status, b"", {"Location": to + path})
