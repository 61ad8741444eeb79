"""The webhook receiver: Alertmanager POSTs notifications to `/webhook`; each is read strictly and
handed to the loop under one lock. A body that is too large, not JSON, or not a version-4 notification
gets a 4xx with a one-line JSON reason; a failure of the loop's own (a scheduler that cannot be
reached) a 500 with the reason, so Alertmanager retries. Never a traceback to the sender.

The hold-downs are looked at every `tick` seconds by a thread of the server, and at every notification.
With an Alertmanager's URL, the nodes a cap kept in are posted back to it as alerts for a person (page.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gpufabric.errors import GpufabricError
from gpufabric.outputs import json_dumps
from gpufabric.remediate.loop import Action, Remediator
from gpufabric.remediate.page import page
from gpufabric.remediate.payload import MAX_BODY, PayloadError, parse_payload

log = logging.getLogger(__name__)
PATH = "/webhook"


class Receiver(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        loop: Remediator,
        report: Callable[[Action], None] | None = None,
        *,
        alertmanager: str | None = None,
    ) -> None:
        super().__init__(address, _Handler)
        self.loop = loop
        self.alertmanager = alertmanager  # where capped nodes are paged (its base URL), if anywhere
        self.lock = threading.Lock()
        self.report = report or (lambda action: None)
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def act(self, body: bytes) -> list[Action]:
        alerts = parse_payload(body)
        with self.lock:
            actions = self.loop.handle(alerts)
        for action in actions:
            self.report(action)
        if self.alertmanager:
            page(self.alertmanager, actions)
        return actions

    def tick(self) -> None:
        with self.lock:
            actions = self.loop.tick()
        for action in actions:
            self.report(action)

    def start_ticking(self, every: float) -> None:
        def run() -> None:
            while not self._stop.wait(every):
                try:
                    self.tick()
                except GpufabricError as exc:
                    log.warning("the hold-down look failed: %s", exc)

        self._ticker = threading.Thread(target=run, name="remediate-tick", daemon=True)
        self._ticker.start()

    def server_close(self) -> None:
        self._stop.set()
        super().server_close()


class _Handler(BaseHTTPRequestHandler):
    server: Receiver
    protocol_version = "HTTP/1.1"
    timeout = 30  # seconds a connection may sit silent (a client that never sends its body lets go of its thread)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), (format % args).encode("unicode_escape").decode("ascii"))

    def _answer(self, code: int, body: dict[str, Any]) -> None:
        data = (json_dumps(body) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._answer(200, {"status": "ok"})
        else:
            self._answer(404, {"error": f"POST notifications to {PATH}; GET /healthz"})

    def do_POST(self) -> None:
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
        try:
            actions = self.server.act(body)
        except PayloadError as exc:
            self._answer(400, {"error": str(exc)})
        except GpufabricError as exc:
            log.warning("a notification could not be acted on: %s", exc)
            self._answer(500, {"error": str(exc)})
        except Exception:  # the sender gets a reason, never a traceback; the log keeps it
            log.exception("a notification failed")
            self._answer(500, {"error": "internal error: see the receiver's log"})
        else:
            self._answer(200, {"actions": [a.line() for a in actions]})
