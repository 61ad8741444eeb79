"""The webhook receiver: Alertmanager POSTs notifications to `/webhook`; each is read strictly and
handed to the loop under one lock. A body that is too large, not JSON, or not a version-4 notification
gets a 4xx with a one-line JSON reason; a failure of the loop's own (a scheduler that cannot be
reached) a 500 with the reason, so Alertmanager retries. Never a traceback to the sender.

- With a token (auth.py), a request without `Authorization: Bearer <token>` gets a 401 before its body
  is read; with a certificate, it speaks TLS only (the handshake in the request's own thread, within
  the connection's timeout, so a client that never finishes it holds no one else up).
- When the trail or the record can no longer be written (a full disk, a file replaced), the loop stops
  acting: said once in the log, and every notification after that gets a 503 and drains nothing, until
  the receiver is restarted with a trail it can write. Its record still holds what it drained.
- The hold-downs are looked at every `tick` seconds by a thread of the server, and at every
  notification. The thread outlives any error of one look: it logs it and looks again; `GET /healthz`
  says how many looks ran and failed (and, to a caller with the token, the last error).
- With an Alertmanager's URL, the nodes a cap kept in are posted back to it as alerts for a person (page.py).
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gpufabric.errors import GpufabricError, printable
from gpufabric.outputs import json_dumps
from gpufabric.remediate.auth import check_listen, token_matches
from gpufabric.remediate.loop import Action, Remediator
from gpufabric.remediate.page import page
from gpufabric.remediate.payload import MAX_BODY, PayloadError, parse_payload
from gpufabric.remediate.trail import TrailError

log = logging.getLogger(__name__)
PATH = "/webhook"
HANDSHAKE = 30.0  # seconds a TLS client may take to finish its handshake


class NotActingError(GpufabricError):
    """The loop acts no more: its trail or record failed (the message says which and why)."""


class Receiver(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        loop: Remediator,
        report: Callable[[Action], None] | None = None,
        *,
        alertmanager: str | None = None,
        token: bytes | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        check_listen(address[0], token)  # AuthError: no other address without a token
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        if tls is not None:  # the handshake is done in each request's thread (finish_request), not in accept
            self.socket = tls.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)
        self.tls = tls is not None
        self.token = token
        self.loop = loop
        self.alertmanager = alertmanager  # where capped nodes are paged (its base URL), if anywhere
        self.lock = threading.Lock()
        self.report = report or (lambda action: None)
        self.broken = ""  # why the loop acts no more; "" while it acts
        self.looks = 0  # hold-down looks done, and failed
        self.look_errors = 0
        self.last_look_error = ""
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def stop_acting(self, exc: TrailError) -> None:
        """From now on act on nothing; say so once. Called under the lock."""
        if not self.broken:
            self.broken = str(exc)
            log.error("the remediation loop acts on nothing more, until restarted: %s", exc)

    def act(self, body: bytes) -> list[Action]:
        alerts = parse_payload(body)
        with self.lock:
            if self.broken:
                raise NotActingError(self.broken)
            try:
                actions = self.loop.handle(alerts)
            except TrailError as exc:
                self.stop_acting(exc)
                raise NotActingError(self.broken) from None
        for action in actions:
            self.report(action)
        if self.alertmanager:
            page(self.alertmanager, actions)
        return actions

    def tick(self) -> None:
        with self.lock:
            if self.broken:
                return
            try:
                actions = self.loop.tick()
            except TrailError as exc:
                self.stop_acting(exc)
                return
        for action in actions:
            self.report(action)

    def look(self) -> None:
        """One look at the hold-downs that never raises: an error is counted, logged and shown by /healthz."""
        try:
            self.tick()
        except GpufabricError as exc:
            self._failed(str(exc))
        except Exception as exc:  # a bug must not end the thread that puts nodes back
            self._failed(f"{type(exc).__name__}: {exc}")
            log.debug("the hold-down look's error", exc_info=True)
        else:
            self.looks += 1

    def _failed(self, why: str) -> None:
        self.look_errors += 1
        self.last_look_error = why
        log.error("a look at the hold-downs failed (the next one comes at the next tick): %s", why)

    def start_ticking(self, every: float) -> None:
        def run() -> None:
            while not self._stop.wait(every):
                self.look()

        self._ticker = threading.Thread(target=run, name="remediate-tick", daemon=True)
        self._ticker.start()

    def health(self, detailed: bool) -> tuple[int, dict[str, Any]]:
        ticking = self._ticker is not None and self._ticker.is_alive()
        body: dict[str, Any] = {
            "status": "not acting" if self.broken else "ok",
            "hold_down_thread": "running" if ticking else "not running",
            "looks": self.looks,
            "look_errors": self.look_errors,
        }
        if detailed:
            body["last_look_error"] = self.last_look_error
            body["not_acting_because"] = self.broken
        return (503 if self.broken else 200), body

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self.tls:
            request.settimeout(HANDSHAKE)
            request.do_handshake()  # ssl.SSLError, OSError: handle_error, at debug level
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that breaks off (a failed handshake, a reset): its business, not a traceback on stderr.
        log.debug("a connection from %s ended in an error", client_address, exc_info=True)

    def server_close(self) -> None:
        self._stop.set()
        super().server_close()


class _Handler(BaseHTTPRequestHandler):
    server: Receiver
    protocol_version = "HTTP/1.1"
    timeout = 30  # seconds a connection may sit silent (a client that never sends its body lets go of its thread)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), printable(format % args))

    def _answer(self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = (json_dumps(body) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _authorized(self) -> bool:
        token = self.server.token
        return token is None or token_matches(self.headers.get("Authorization"), token)

    def do_GET(self) -> None:
        if self.path == "/healthz":
            code, body = self.server.health(detailed=self._authorized())
            self._answer(code, body)
        else:
            self._answer(404, {"error": f"POST notifications to {PATH}; GET /healthz"})

    def do_POST(self) -> None:
        if not self._authorized():
            self.close_connection = True  # the body is not read: the connection cannot be reused
            self._answer(
                401,
                {"error": "a bearer token is required (Alertmanager: http_config authorization credentials_file)"},
                {"WWW-Authenticate": 'Bearer realm="gpufabric-remediate"'},
            )
            return
        if self.path != PATH:
            self.close_connection = True
            self._answer(404, {"error": f"POST notifications to {PATH}"})
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            self._answer(411, {"error": "a Content-Length is required"})
            return
        if int(length) > MAX_BODY:
            self.close_connection = True  # the body is not read: the connection cannot be reused
            self._answer(413, {"error": f"the body is larger than {MAX_BODY} bytes"})
            return
        kind = self.headers.get("Content-Type", "").split(";")[0].strip()
        body = self.rfile.read(int(length))
        if kind != "application/json":
            self._answer(415, {"error": "Content-Type application/json is expected"})
            return
        started = time.monotonic()
        try:
            actions = self.server.act(body)
        except PayloadError as exc:
            self._answer(400, {"error": str(exc)})
        except NotActingError as exc:  # said once in the log when it began; each sender is told
            self._answer(503, {"error": f"the loop acts on nothing until restarted: {exc}"})
        except GpufabricError as exc:
            log.warning("a notification could not be acted on: %s", exc)
            self._answer(500, {"error": str(exc)})
        except Exception:  # the sender gets a reason, never a traceback; the log keeps it
            log.exception("a notification failed")
            self._answer(500, {"error": "internal error: see the receiver's log"})
        else:
            log.debug("a notification acted on in %.3f s", time.monotonic() - started)
            self._answer(200, {"actions": [a.line() for a in actions]})
