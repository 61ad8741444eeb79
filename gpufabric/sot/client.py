"""A small client of Nautobot's REST API, strict about what it reads back.

The server is outside input: every answer is read up to a bound, within a whole deadline per request
and per command, must be JSON of the expected shape (a page no larger than asked for), and anything
else is a `SotError` that names the request, never the token. The token is read from the environment
variable the operator names; it travels only in the Authorization header, only to the server's own
origin (gpufabric.http_api: no redirect elsewhere, never to http), and is redacted from anything the
server says back.
"""

from __future__ import annotations

import ipaddress
import os
import re
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gpufabric.errors import GpufabricError, printable
from gpufabric.http_api import Bounds, HttpApiError, HttpUnreachableError, Request, call, json_body, shown
from gpufabric.outputs import json_dumps

MAX_BODY = 16 * 1024 * 1024  # bytes of one answer: a page of 1,000 objects is well under 4 MiB
PAGE = 1000  # objects per page asked for (Nautobot's default MAX_PAGE_SIZE)
MAX_PAGES = 1000  # pages of one listing: a million objects
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
SHOWN = 300  # characters of a server's error text shown
DEADLINE = 3600.0  # seconds for a whole command's requests (--deadline)


class SotError(GpufabricError):
    """The source of truth refused a request, could not be reached, or answered something unreadable."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str) -> str:
    """The server's base URL, checked: https, or http on a loopback address only (no token in clear on a
    network); no user, query or fragment. Returned without a trailing slash."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        _ = parts.port
    except ValueError as exc:
        raise SotError(f"source of truth URL {printable(url)!r} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not host:
        raise SotError(f"source of truth URL {printable(url)!r}: give http(s)://HOST[:PORT]")
    if parts.scheme == "http" and not _loopback(host):
        raise SotError(
            f"source of truth URL {printable(url)!r}: plain http only to a loopback address; use https "
            "(the API token would cross the network in clear)"
        )
    if parts.username or parts.password or parts.query or parts.fragment:
        raise SotError(f"source of truth URL {printable(url)!r}: no user, query or fragment in it")
    return url.rstrip("/")


def token_from_env(name: str) -> str:
    """The API token from the environment variable `name` (the token itself is never an argument)."""
    if not ENV_NAME.match(name):
        raise SotError(f"token variable {printable(name)!r}: give the NAME of an environment variable (A-Z, 0-9, _)")
    token = os.environ.get(name, "")
    if not token:
        raise SotError(f"environment variable {name} (the API token) is not set or empty")
    if not re.fullmatch(r"[A-Za-z0-9._~+/=-]{8,512}", token):
        raise SotError(f"environment variable {name} does not hold an API token (letters and digits)")
    return token


@dataclass
class Nautobot:
    """Nautobot's REST API at `url` (checked), authorized by `token`. `timeout`: seconds for one request,
    whole (connect, send, the answer to its last byte); `deadline`: seconds for every request of the
    command together, counted from when the client is made."""

    url: str
    token: str = field(repr=False)
    timeout: float = 60.0
    requests: int = 0
    deadline: float = DEADLINE
    _ends: float = field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        self.url = check_url(self.url)
        self._ends = time.monotonic() + self.deadline

    def _send(self, method: str, path: str, body: Any = None) -> Any:
        self.requests += 1
        data = None if body is None else json_dumps(body).encode()
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = Request(method, self.url + path, headers, data, (self.token,))
        now = time.monotonic()
        if now >= self._ends:
            raise SotError(f"{request.where}: the command's deadline ({self.deadline:g} s, --deadline) ran out")
        bounds = Bounds(self.timeout, min(now + self.timeout, self._ends), MAX_BODY)
        try:
            reply = call(request, bounds)
            if reply.status // 100 != 2:
                said = shown(reply.body, (self.token,), SHOWN)
                raise SotError(f"{request.where}: the server answered {reply.status}: {said}")
            return json_body(reply, request)
        except HttpUnreachableError as exc:
            raise SotError(f"{exc}: cannot reach the source of truth at {self.url}") from None
        except HttpApiError as exc:
            raise SotError(f"{exc} (the source of truth at {self.url})") from None

    def objects(self, endpoint: str, **params: str) -> list[dict[str, Any]]:
        """Every object of `endpoint` the filters select, page by page (`depth=0`: references as ids)."""
        out: list[dict[str, Any]] = []
        query = {"limit": str(PAGE), "depth": "0", **params}
        path: str | None = f"/api/{endpoint}/?{urllib.parse.urlencode(query)}"
        for _ in range(MAX_PAGES):
            if path is None:
                return out
            page = self._send("GET", path)
            if not isinstance(page, dict) or not isinstance(page.get("results"), list):
                raise SotError(f"GET /api/{endpoint}/: the answer is not a page of results")
            if len(page["results"]) > PAGE:
                raise SotError(
                    f"GET /api/{endpoint}/: a page of {len(page['results'])} results, more than the {PAGE} asked for"
                )
            out += [_object(o, endpoint) for o in page["results"]]
            path = _next(page.get("next"), self.url, endpoint)
        raise SotError(f"GET /api/{endpoint}/: more than {MAX_PAGES} pages")

    def create(self, endpoint: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [o for chunk in _chunks(bodies) for o in self._many("POST", endpoint, chunk)]

    def update(self, endpoint: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [o for chunk in _chunks(bodies) for o in self._many("PATCH", endpoint, chunk)]

    def delete(self, endpoint: str, ids: list[str]) -> None:
        for chunk in _chunks([{"id": i} for i in ids]):
            self._send("DELETE", f"/api/{endpoint}/", chunk)

    def _many(self, method: str, endpoint: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        answer = self._send(method, f"/api/{endpoint}/", bodies)
        if not isinstance(answer, list) or len(answer) != len(bodies):
            raise SotError(f"{method} /api/{endpoint}/: the answer is not the {len(bodies)} objects sent")
        return [_object(o, endpoint) for o in answer]


def _chunks(items: list[dict[str, Any]], size: int = 200) -> Iterator[list[dict[str, Any]]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _object(value: Any, endpoint: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not isinstance(value.get("id"), str) or len(value["id"]) > 64:
        raise SotError(f"/api/{endpoint}/: an object without a text id in the answer")
    return value


def _next(link: Any, base: str, endpoint: str) -> str | None:
    """The next page's path, only on the same server and endpoint."""
    if link is None:
        return None
    if not isinstance(link, str):
        raise SotError(f"GET /api/{endpoint}/: the next page's link is not text")
    parts = urllib.parse.urlsplit(link)
    own = urllib.parse.urlsplit(base)
    if (parts.scheme, parts.netloc) != (own.scheme, own.netloc) or not parts.path.startswith(f"/api/{endpoint}/"):
        raise SotError(f"GET /api/{endpoint}/: the next page is elsewhere ({printable(link[:SHOWN])})")
    return f"{parts.path}?{parts.query}"
