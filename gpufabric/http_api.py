"""The one way gpufabric calls an outside HTTP API with a token: Nautobot (gpufabric/sot/client.py) and
the Kubernetes API server (gpufabric/scheduler/kubernetes.py).

The server is outside input, and so is anything it redirects to. Here:

- **No redirect leaves the origin.** A 3xx whose Location is another scheme, host or port is refused
  (the token would go with the request, to a server nobody named, or in clear after a downgrade to
  http); one on the same origin is followed for GET only, at most `MAX_REDIRECTS` times. Python's
  urllib follows every redirect and keeps the Authorization header across hosts: it is not used.
- **Every request has a whole deadline.** The socket timeout bounds each read, and a watchdog shuts
  the socket down when the request's deadline passes (connect, send, headers and body together), so a
  server that drips one byte a second cannot hold a command forever. The caller gives the deadline: a
  request's own, cut to what is left of its command's.
- **The answer is bounded.** At most `max_bytes` (an over-size Content-Length is refused before
  reading), decoded and parsed as gpufabric reads any outside JSON (gpufabric.inputs: UTF-8 located,
  no NaN, nesting at most 200 levels).
- **A token is never shown.** Every message built from what the server said (an error body, a
  Location) passes through `redact` with the request's secrets, then `printable`.

Each failure is an `HttpApiError` (a GpufabricError: exit 2) whose message names the request.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpufabric.errors import GpufabricError, printable
from gpufabric.inputs import InputError, decode_text, json_text

MAX_REDIRECTS = 3
CHUNK = 64 * 1024
SHOWN = 300  # characters of a server's text shown in an error
REDACTED = "[redacted]"


class HttpApiError(GpufabricError):
    """A request that failed: unreachable, too slow, too large, redirected elsewhere, not JSON."""


class HttpUnreachableError(HttpApiError):
    """No connection to the server could be made (nothing was sent)."""


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def origin(url: str) -> Origin:
    """scheme, host and port of `url` (the port its scheme's default when not written)."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    scheme = parts.scheme.lower()
    default = {"http": 80, "https": 443}.get(scheme, -1)
    return Origin(scheme, (parts.hostname or "").lower(), port if port is not None else default)


def redact(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret (each at least 4 characters) replaced: a server that echoes the
    Authorization header back in an error body must not get the token printed."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def shown(raw: bytes | str, secrets: Sequence[str], limit: int = SHOWN) -> str:
    """A server's text as an error may show it: redacted (before it is cut, so no part of a token
    survives the cut), then cut to `limit` characters, control characters escaped."""
    text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
    text = redact(text, secrets)
    cut = text[:limit] + ("..." if len(text) > limit else "")
    return printable(cut)


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    content_type: str = ""


@dataclass(frozen=True)
class Request:
    """One call: where, how, with which headers, and the secrets the headers hold (for redaction)."""

    method: str
    url: str
    headers: dict[str, str]
    data: bytes | None = None
    secrets: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        """The request as an error names it: method and path, never the query (it may hold names) or
        a header."""
        return f"{self.method} {urllib.parse.urlsplit(self.url).path}"


@dataclass(frozen=True)
class Bounds:
    timeout: float  # seconds for one read (and the connect)
    deadline: float  # time.monotonic() by which the whole request must be done
    max_bytes: int
    tls: ssl.SSLContext | None = None


def call(request: Request, bounds: Bounds) -> Reply:
    """`request`, following redirects only on its own origin (GET only), within `bounds`."""
    start = origin(request.url)
    current = request
    for _ in range(MAX_REDIRECTS + 1):
        reply, location = _once(current, bounds)
        if location is None:
            return reply
        target = urllib.parse.urljoin(current.url, location)
        there = origin(target)
        if there != start:
            clear = ", in clear" if there.scheme == "http" and start.scheme == "https" else ""
            raise HttpApiError(
                f"{request.where}: the server answered {reply.status}, a redirect to "
                f"{shown(str(there), request.secrets)}; gpufabric follows no redirect to another origin than "
                f"{start} (the token would go with it{clear}): give the server's own address"
            )
        if current.method not in ("GET", "HEAD"):
            raise HttpApiError(f"{request.where}: the server redirected a {current.method} ({reply.status})")
        current = Request(current.method, target, current.headers, None, current.secrets)
    raise HttpApiError(f"{request.where}: more than {MAX_REDIRECTS} redirects")


def _connection(url: str, bounds: Bounds, timeout: float) -> http.client.HTTPConnection:
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "", parts.port
    if parts.scheme == "https":
        return http.client.HTTPSConnection(host, port, timeout=timeout, context=bounds.tls)
    if parts.scheme == "http":
        return http.client.HTTPConnection(host, port, timeout=timeout)
    raise HttpApiError(f"{url[:80]!r}: not an http(s) URL")


class _Watchdog:
    """Shuts a connection's socket down when the request's deadline passes: any read blocked on it
    returns at once, however slowly the server sends."""

    def __init__(self, connection: http.client.HTTPConnection, seconds: float) -> None:
        self.fired = False
        self._connection = connection
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        self.fired = True
        sock = self._connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # closed already
                sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        self._timer.cancel()


def _once(request: Request, bounds: Bounds) -> tuple[Reply, str | None]:
    """One exchange: the reply, and the Location of a redirect (None when the reply is not one)."""
    left = bounds.deadline - time.monotonic()
    if left <= 0:
        raise HttpApiError(f"{request.where}: the command's time ran out before this request")
    connection = _connection(request.url, bounds, min(bounds.timeout, left))
    watchdog = _Watchdog(connection, left)
    parts = urllib.parse.urlsplit(request.url)
    target = parts.path or "/"
    if parts.query:
        target += f"?{parts.query}"
    try:
        connection.connect()
    except (OSError, ValueError) as exc:
        watchdog.cancel()
        connection.close()
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise HttpUnreachableError(f"{request.where}: cannot connect: {shown(reason, request.secrets)}") from None
    try:
        connection.request(request.method, target, body=request.data, headers=request.headers)
        response = connection.getresponse()
        if 300 <= response.status < 400 and response.status != 304:
            location = response.getheader("Location")
            if location is None:
                raise HttpApiError(f"{request.where}: the server answered {response.status} without a Location")
            return Reply(response.status, b""), location
        body = _body(response, request, bounds)
        if watchdog.fired:
            raise TimeoutError
        return Reply(response.status, body, response.getheader("Content-Type") or ""), None
    except HttpApiError:
        raise
    except TimeoutError:
        if watchdog.fired:
            raise HttpApiError(f"{request.where}: no whole answer within {_seconds(bounds, left)}") from None
        raise HttpApiError(f"{request.where}: no answer within {bounds.timeout:g} s (nothing arrived)") from None
    except ssl.SSLError as exc:
        raise HttpApiError(f"{request.where}: TLS: {shown(str(exc), request.secrets)}") from None
    except (http.client.HTTPException, OSError, ValueError) as exc:
        if watchdog.fired:
            raise HttpApiError(f"{request.where}: no whole answer within {_seconds(bounds, left)}") from None
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise HttpApiError(f"{request.where}: {shown(reason, request.secrets)}") from None
    finally:
        watchdog.cancel()
        connection.close()


def _seconds(bounds: Bounds, left: float) -> str:
    return f"{left:.3g} s"


def _body(response: http.client.HTTPResponse, request: Request, bounds: Bounds) -> bytes:
    """At most `max_bytes` of the answer's body, read a chunk at a time; more is refused, not cut."""
    length = response.getheader("Content-Length")
    if length is not None and length.strip().isdigit() and int(length) > bounds.max_bytes:
        raise HttpApiError(
            f"{request.where}: the answer is larger than {bounds.max_bytes} bytes (Content-Length {int(length)})"
        )
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = response.read1(CHUNK)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > bounds.max_bytes:
            raise HttpApiError(f"{request.where}: the answer is larger than {bounds.max_bytes} bytes")
        chunks.append(chunk)


def json_body(reply: Reply, request: Request) -> Any:
    """The reply's body as JSON, read as gpufabric reads any outside JSON: UTF-8 (the first byte that is
    not, located), no NaN or Infinity, nesting at most 200 levels; an empty body is None."""
    if not reply.body.strip():
        return None
    try:
        return json_text(decode_text(reply.body, request.where, "the answer"), request.where, "the answer")
    except InputError as exc:
        problem = exc.problems[0]
        line = exc.line_of(problem.path)
        at = f" (line {line})" if line else ""
        raise HttpApiError(f"{request.where}: {shown(problem.message, request.secrets)}{at}") from None
