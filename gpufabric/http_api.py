"""What gpufabric's calls to an outside HTTP API with a token share: the error they raise, the origin
(scheme, host, port) a token is bound to, redaction, and the strict reading of a JSON answer.

The requests themselves are made by the ecosystem's clients (the official `kubernetes` client for the
API server, pynautobot and pynetbox for the sources of truth), with gpufabric.http_guard under them:
no redirect, one origin, a whole deadline per request, a bounded answer. Here:

- **A token is never shown.** Every message built from what a server said (an error body, a Location)
  passes through `redact` with the request's secrets, then `printable` (`shown`).
- **JSON is read as gpufabric reads any outside JSON** (`json_body`, gpufabric.inputs): UTF-8 located,
  no NaN, nesting at most 200 levels.

Each failure is an `HttpApiError` (a GpufabricError: exit 2) whose message names the request.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpufabric.errors import GpufabricError, printable
from gpufabric.inputs import InputError, decode_text, json_text

CHUNK = 64 * 1024  # bytes read at a time from an answer
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
