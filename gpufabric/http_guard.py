"""The guards gpufabric puts around the ecosystem's HTTP clients (the official `kubernetes` client, and
`pynautobot`/`pynetbox` over `requests`), all of which send through urllib3.

Those clients are kept by their projects and know their servers (kubeconfig files, service accounts,
API versions, pagination); what they do not do is distrust the server. Here, under them:

- **No redirect, and no other peer.** The pool manager answers only for the one origin (scheme, host,
  port) it was made for: a request to any other is refused before a connection is made, and a 3xx is
  never followed (urllib3 would follow it to another host, with the client certificate, or from https
  to http). A redirect is an error that names where it pointed.
- **A whole deadline per request.** Every socket the request opens (or reuses) is registered with a
  watchdog that shuts it down when the deadline passes (connect, TLS, send, headers and body together),
  so a server that drips one byte a second cannot hold a command: urllib3's own timeouts bound each
  read, not the whole.
- **A bounded answer.** At most `max_bytes` is read (an over-size Content-Length refused before
  reading), never decompressed by the client (a compressed answer is refused: a small gzip can unpack
  to gigabytes), then parsed as gpufabric reads any outside JSON (`gpufabric.http_api.json_body`).
- **No secret shown.** Messages pass through `gpufabric.http_api.shown` with the request's secrets.

Each failure is a `gpufabric.http_api.HttpApiError` (exit 2) naming the request.

`call` sends one request this way where no kept client exists (Alertmanager's and Prometheus's HTTP
APIs, read by `job timeline` and `triage job`).
"""

from __future__ import annotations

import contextlib
import contextvars
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from gpufabric.http_api import (
    CHUNK,
    HttpApiError,
    HttpUnreachableError,
    Origin,
    Reply,
    Request,
    json_body,
    origin,
    shown,
)


class _Watch:
    """The sockets of one request, shut down together when its deadline passes."""

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self.seconds = seconds
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def add(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self._sockets.append(sock)
            if self.fired:
                _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for sock in self._sockets:
                _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # closed already
        sock.shutdown(socket.SHUT_RDWR)


_CURRENT: contextvars.ContextVar[_Watch | None] = contextvars.ContextVar("gpufabric_http_watch", default=None)


def _register(sock: Any) -> None:
    watch = _CURRENT.get()
    if watch is not None and isinstance(sock, socket.socket):
        watch.add(sock)


class _WatchedConnection(HTTPConnection):
    def _new_conn(self) -> socket.socket:  # the raw socket, before any TLS: a dripping handshake is bounded too
        sock = super()._new_conn()
        _register(sock)
        return sock

    def request(self, *args: Any, **kwargs: Any) -> None:  # a kept-alive connection, reused
        _register(self.sock)
        super().request(*args, **kwargs)


class _WatchedTLSConnection(HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        _register(sock)
        return sock

    def request(self, *args: Any, **kwargs: Any) -> None:
        _register(self.sock)
        super().request(*args, **kwargs)


def _put_conn(pool: HTTPConnectionPool, conn: Any) -> None:
    # A connection is never reused: a server that honours `Connection: close` without saying so in its
    # answer (Django's runserver) has closed it already, and no request is retried. The pool keeps an
    # empty place instead, and opens a new connection for the next request.
    if conn is not None:
        conn.close()
    HTTPConnectionPool._put_conn(pool, None)


class _Pool(HTTPConnectionPool):
    ConnectionCls = _WatchedConnection

    def _put_conn(self, conn: Any) -> None:
        _put_conn(self, conn)


class _TLSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedTLSConnection

    def _put_conn(self, conn: Any) -> None:
        _put_conn(self, conn)


class GuardedPoolManager(urllib3.PoolManager):
    """A urllib3 pool manager for one origin only: no redirect followed, no retry, every socket watched."""

    def __init__(self, only: Origin, **pool_kw: Any) -> None:
        pool_kw.pop("retries", None)
        super().__init__(**pool_kw)
        self.only = only
        self.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}

    def urlopen(self, method: str, url: str, redirect: bool = True, **kw: Any) -> Any:  # type: ignore[override]
        there = origin(url)
        if there != self.only:
            raise HttpApiError(
                f"{method} {urllib.parse.urlsplit(url).path}: not sent to {there}, which is not the server named "
                f"({self.only}): gpufabric sends its credentials to that origin only"
            )
        kw["retries"] = False  # no retry, and a 3xx comes back as it is (judged by `exchange`)
        kw["preload_content"] = False
        kw["headers"] = {**(kw.get("headers") or self.headers), "Connection": "close"}
        return super().urlopen(method, url, redirect=False, **kw)


@dataclass(frozen=True)
class Limits:
    timeout: float  # seconds for the whole request
    max_bytes: int


@contextlib.contextmanager
def watched(seconds: float) -> Iterator[_Watch]:
    """Every socket a request opens or reuses inside is shut down after `seconds`."""
    watch = _Watch(seconds)
    token = _CURRENT.set(watch)
    try:
        yield watch
    finally:
        watch.cancel()
        _CURRENT.reset(token)


def read_body(response: Any, where: str, max_bytes: int) -> bytes:
    """At most `max_bytes` of a urllib3 response's body, as sent (never decompressed); more is refused."""
    encoding = (response.headers.get("Content-Encoding") or "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise HttpApiError(f"{where}: the answer is {shown(encoding, ())}-encoded; gpufabric asks for it plain")
    length = response.headers.get("Content-Length")
    if length is not None and length.strip().isdigit() and int(length) > max_bytes:
        raise HttpApiError(f"{where}: the answer is larger than {max_bytes} bytes (Content-Length {int(length)})")
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = response.read(CHUNK, decode_content=False)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise HttpApiError(f"{where}: the answer is larger than {max_bytes} bytes")
        chunks.append(chunk)


def refuse_redirect(status: int, location: str | None, url: str, where: str, secrets: Sequence[str]) -> None:
    """A 3xx is an error, naming where it pointed (never followed: the credentials would go with it)."""
    if not 300 <= status < 400 or status == 304:
        return
    if location is None:
        raise HttpApiError(f"{where}: the server answered {status} without a Location")
    start = origin(url)
    there = origin(urllib.parse.urljoin(url, location))
    if there != start:
        clear = ", in clear" if there.scheme == "http" and start.scheme == "https" else ""
        raise HttpApiError(
            f"{where}: the server answered {status}, a redirect to {shown(str(there), secrets)}; gpufabric follows "
            f"no redirect to another origin than {start} (the token would go with it{clear}): give the server's "
            "own address"
        )
    raise HttpApiError(
        f"{where}: the server answered {status}, a redirect to {shown(location, secrets)}; gpufabric follows no "
        "redirect: give the API's own address"
    )


def exchange(send: Callable[[], Any], url: str, where: str, limits: Limits, secrets: Sequence[str]) -> Reply:
    """Run `send` (which makes one request through a `GuardedPoolManager` and returns urllib3's response,
    its body unread) under the whole deadline; the reply, its body bounded. urllib3's errors become
    `HttpApiError`s that name the request and show no secret."""
    began = time.monotonic()
    with watched(limits.timeout) as watch:
        try:
            response = send()
            try:
                refuse_redirect(response.status, response.headers.get("Location"), url, where, secrets)
                body = read_body(response, where, limits.max_bytes)
            finally:  # a connection is never reused half-read: closed, then given back (to be opened anew)
                response.close()
                response.release_conn()
            if watch.fired:
                raise TimeoutError
            return Reply(response.status, body, response.headers.get("Content-Type") or "")
        except HttpApiError:
            raise
        except BaseException as exc:  # every transport error is named below, never a traceback
            raise failure(exc, watch.fired, where, limits, secrets=secrets, spent=time.monotonic() - began) from None


def failure(
    exc: BaseException, fired: bool, where: str, limits: Limits, *, secrets: Sequence[str], spent: float
) -> BaseException:
    """The error a transport failure is shown as."""
    if isinstance(exc, (KeyboardInterrupt, SystemExit, MemoryError)):
        return exc
    if fired:
        return HttpApiError(f"{where}: no whole answer within {limits.timeout:.3g} s")
    cause = _cause(exc)
    unreachable = (
        urllib3.exceptions.NewConnectionError,
        urllib3.exceptions.ConnectTimeoutError,
        ConnectionRefusedError,
    )
    if isinstance(cause, unreachable):
        reason = getattr(cause, "strerror", None) or str(cause) or type(cause).__name__
        return HttpUnreachableError(f"{where}: cannot connect: {shown(_short(reason), secrets)}")
    if isinstance(cause, (TimeoutError, urllib3.exceptions.ReadTimeoutError, socket.timeout)):
        return HttpApiError(f"{where}: no answer within {limits.timeout:.3g} s (nothing arrived)")
    if isinstance(cause, urllib3.exceptions.SSLError) or type(cause).__name__ == "SSLError":
        return HttpApiError(f"{where}: TLS: {shown(str(cause), secrets)}")
    reason = getattr(cause, "strerror", None) or str(cause) or type(cause).__name__
    return HttpApiError(f"{where}: {shown(_short(reason), secrets)} (after {spent:.3g} s)")


def _cause(exc: BaseException) -> BaseException:
    """The underlying error of urllib3's (and requests') wrappers."""
    seen = 0
    while seen < 5:
        seen += 1
        inner = getattr(exc, "reason", None)
        if isinstance(inner, BaseException):
            exc = inner
            continue
        args = getattr(exc, "args", ())
        if args and isinstance(args[0], BaseException):
            exc = args[0]
            continue
        break
    return exc


def _short(reason: str) -> str:
    # urllib3 puts the connection object's repr first ("<...HTTPConnection object at 0x...>: Failed to ...").
    return reason.split(">: ", 1)[-1]


# -- services with no kept client (Alertmanager, Prometheus) -------------------------------------


@dataclass(frozen=True)
class Bounds:
    timeout: float  # seconds for one read (and the connect)
    deadline: float  # time.monotonic() by which the whole request must be done
    max_bytes: int
    tls: ssl.SSLContext | None = None


def call(request: Request, bounds: Bounds) -> Reply:
    """`request` through a `GuardedPoolManager` of its own origin: no redirect followed (a 3xx is an error
    naming where it pointed), within the whole deadline, the body bounded and never decompressed."""
    left = bounds.deadline - time.monotonic()
    if left <= 0:
        raise HttpApiError(f"{request.where}: no time left for it (the command's deadline passed)")
    pool_kw: dict[str, Any] = {} if bounds.tls is None else {"ssl_context": bounds.tls}
    pool = GuardedPoolManager(origin(request.url), **pool_kw)
    headers = {**request.headers, "Accept-Encoding": "identity"}
    timeout = urllib3.Timeout(connect=min(bounds.timeout, left), read=min(bounds.timeout, left))

    def send() -> Any:
        return pool.urlopen(request.method, request.url, body=request.data, headers=headers, timeout=timeout)

    try:
        return exchange(send, request.url, request.where, Limits(left, bounds.max_bytes), request.secrets)
    finally:
        pool.clear()


# -- requests (pynautobot, pynetbox) ----------------------------------------------------------------


def guard_session(
    session: Any,
    url: str,
    *,
    seconds: Callable[[str], float],
    max_bytes: Callable[[], int],
    secrets: Sequence[str],
    check: Callable[[str, str, Any], None] | None = None,
    ca_file: str | None = None,
) -> None:
    """Put the guards on a requests Session a client library made (its headers, auth and API version
    kept): every request through `GuardedAdapter`, no proxy or .netrc from the environment, the server's
    certificate checked against `ca_file` (or the system's)."""
    from requests.adapters import HTTPAdapter

    class GuardedAdapter(HTTPAdapter):
        """Sends through a `GuardedPoolManager` of `url`'s origin, under `seconds(where)`'s whole deadline;
        refuses any 3xx; reads the body itself (at most `max_bytes()`), checks it as strict JSON, and
        hands it, parsed, to `check(method, url, value)` before the library sees it."""

        def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any) -> None:
            self.poolmanager = GuardedPoolManager(
                origin(url), num_pools=connections, maxsize=maxsize, block=block, **pool_kwargs
            )

        def send(self, request: Any, stream: bool = False, timeout: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
            where = f"{request.method} {urllib.parse.urlsplit(request.url).path}"
            there = origin(request.url)
            if there != origin(url):  # a link the library followed to another server: not sent
                raise HttpApiError(f"{where}: not sent to {there}, which is not the server named ({origin(url)})")
            # One connection per request, as the server is told: a kept-alive one the server has closed
            # meanwhile would fail the next request, and no request is retried.
            request.headers["Connection"] = "close"
            limit = seconds(where)
            limits = Limits(limit, max_bytes())
            began = time.monotonic()
            with watched(limit) as watch:
                try:
                    response = super().send(request, stream=True, timeout=(limit, limit), **kwargs)
                    try:
                        refuse_redirect(
                            response.status_code, response.headers.get("Location"), request.url, where, secrets
                        )
                        body = read_body(response.raw, where, limits.max_bytes)
                    finally:
                        response.raw.close()
                        response.raw.release_conn()
                    if watch.fired:
                        raise TimeoutError
                except HttpApiError:
                    raise
                except BaseException as exc:
                    raise failure(
                        exc, watch.fired, where, limits, secrets=secrets, spent=time.monotonic() - began
                    ) from None
            response._content = body  # read: the library takes it from here, as if it had read it
            response._content_consumed = True
            if 200 <= response.status_code < 300 and body.strip():
                value = json_body(
                    Reply(response.status_code, body), Request(request.method, request.url, {}, None, tuple(secrets))
                )
                if check is not None:
                    check(request.method, request.url, value)
            return response

    adapter = GuardedAdapter(max_retries=0)
    session.trust_env = False  # no proxy, CA bundle or .netrc from the environment: the token goes nowhere else
    session.max_redirects = 0
    # The system's CAs (and $SSL_CERT_FILE, as Python's ssl reads it) unless a bundle is named: requests'
    # own default would be certifi's alone.
    session.verify = ca_file or ssl.get_default_verify_paths().cafile or True
    session.mount("https://", adapter)
    session.mount("http://", adapter)
