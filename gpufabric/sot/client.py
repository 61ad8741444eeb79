"""The source of truth's REST API through its own client library (pynautobot), strict about what it
reads back.

The library makes the requests (its session and Token authorization, the API version pinned, its
pagination); gpufabric.http_guard's adapter sits under it. The server is outside input: every answer is
read up to a bound, within a whole deadline per request and per command, must be strict JSON of the
expected shape (a page no larger than asked for, each object with a text id, a next page only on the
same endpoint) before the library sees it, and anything else is a `SotError` that names the request,
never the token. The token is read from the environment variable the operator names; it travels only in
the Authorization header, only to the server's own origin (no redirect is followed, no proxy from the
environment), and is redacted from anything the server says back.
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
from gpufabric.http_api import HttpApiError, HttpUnreachableError, shown

MAX_BODY = 16 * 1024 * 1024  # bytes of one answer: a page of 1,000 objects is well under 4 MiB
PAGE = 1000  # objects per page asked for (Nautobot's default MAX_PAGE_SIZE)
MAX_PAGES = 1000  # pages of one listing: a million objects
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
SHOWN = 300  # characters of a server's error text shown
DEADLINE = 3600.0  # seconds for a whole command's requests (--deadline)
# The REST API version asked for (pynautobot's api_version: `Accept: application/json; version=...`), so a
# newer server answers in the shapes this code reads; tested against Nautobot 3.2 (scripts/sot_server.sh).
API_VERSION = "2.4"


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
class Source:
    """A source of truth's REST API at `url` (checked), authorized by `token`, through its own client library
    (the subclasses: `Nautobot`, `NetBox`) with gpufabric.http_guard's adapter under it. `timeout`: seconds
    for one request, whole (connect, send, the answer to its last byte); `deadline`: seconds for every
    request of the command together, counted from when the client is made; `ca_file`: the CA bundle the
    server's certificate is checked against (default: the system's)."""

    url: str
    token: str = field(repr=False)
    timeout: float = 60.0
    requests: int = 0
    deadline: float = DEADLINE
    ca_file: str | None = None
    _ends: float = field(default=0.0, init=False, repr=False)
    _pages: int = field(default=0, init=False, repr=False)
    _listing: str | None = field(default=None, init=False, repr=False)  # the endpoint being listed
    _api: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.url = check_url(self.url)
        self._library()  # imported and made now (no request yet), so the deadline counts requests only
        self._ends = time.monotonic() + self.deadline

    # -- the library, guarded --------------------------------------------------------------------

    kind = "source of truth"
    tag_filter = "tags"  # the listing filter that selects by tag (its value: the tag's name)
    numeric_ids = False  # objects' ids are numbers (NetBox), not UUIDs

    def _library(self) -> Any:
        """The library's API object, its session guarded (made at the first call)."""
        raise NotImplementedError

    def _errors(self) -> tuple[type[BaseException], type[BaseException]]:
        """The library's RequestError and ContentError."""
        raise NotImplementedError

    def _request(self, endpoint: str, **kwargs: Any) -> Any:
        """The library's Request object for `endpoint` (dcim/devices)."""
        raise NotImplementedError

    def _shape(self, value: dict[str, Any]) -> dict[str, Any]:
        """An object as the sync and the pull read it (the server's own shape, for Nautobot)."""
        return value

    def _guard(self, session: Any) -> None:
        from gpufabric.http_guard import guard_session

        guard_session(
            session, self.url, seconds=self._seconds, max_bytes=lambda: MAX_BODY, secrets=(self.token,),
            check=self._check_page, ca_file=self.ca_file,
        )  # fmt: skip

    def _seconds(self, where: str) -> float:
        """This request's whole deadline: `timeout`, cut to what is left of the command's."""
        self.requests += 1
        if self._listing is not None and where.startswith(f"GET {self._listing}"):
            self._pages += 1  # counted before it is asked: the page past the bound is never requested
            if self._pages > MAX_PAGES:
                raise SotError(f"GET {self._listing}: more than {MAX_PAGES} pages")
        left = self._ends - time.monotonic()
        if left <= 0:
            raise SotError(f"{where}: the command's deadline ({self.deadline:g} s, --deadline) ran out")
        return min(self.timeout, left)

    def _check_page(self, method: str, url: str, value: Any) -> None:
        """A page of the listing under way, before the library follows it: a page of results, no
        more than asked for, each object with a text id, and a next page only on this server's endpoint."""
        parts = urllib.parse.urlsplit(url)
        query = urllib.parse.parse_qs(parts.query)
        if method != "GET" or self._listing is None or not parts.path.startswith(self._listing):
            return
        where = f"GET {parts.path}"
        if not isinstance(value, dict) or not isinstance(value.get("results"), list):
            raise SotError(f"{where}: the answer is not a page of results")
        limit = query.get("limit", [str(PAGE)])[0]
        asked = min(int(limit), PAGE) if limit.isdigit() else PAGE
        if len(value["results"]) > asked:
            raise SotError(f"{where}: a page of {len(value['results'])} results, more than the {asked} asked for")
        for o in value["results"]:
            _object(o, parts.path, self.numeric_ids)
        _next(value.get("next"), self.url, parts.path)

    def _call(self, where: str, run: Any) -> Any:
        """`run()` (the library's request), its failures as SotErrors that name the request."""
        RequestError, ContentError = self._errors()
        try:
            return run()
        except SotError:
            raise
        except HttpUnreachableError as exc:
            raise SotError(f"{exc}: cannot reach the source of truth at {self.url}") from None
        except HttpApiError as exc:
            if time.monotonic() >= self._ends:  # cut short by the command's deadline, not the request's
                raise SotError(f"{where}: the command's deadline ({self.deadline:g} s, --deadline) ran out") from None
            raise SotError(f"{exc} (the source of truth at {self.url})") from None
        except RequestError as exc:
            reply = getattr(exc, "req", None)
            if reply is None:
                raise SotError(f"{where}: the request failed ({type(exc).__name__})") from None
            said = shown(reply.content or b"", (self.token,), SHOWN)
            raise SotError(f"{where}: the server answered {reply.status_code}: {said}") from None
        except ContentError:
            raise SotError(f"{where}: the answer is not JSON") from None
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:  # a shape the library trips on
            raise SotError(f"{where}: the answer is not what {self.kind} sends ({type(exc).__name__})") from None

    # -- what the sync and the pull ask ------------------------------------------------------------

    def objects(self, endpoint: str, **params: str) -> list[dict[str, Any]]:
        """Every object of `endpoint` the filters select, page by page (`depth=0`: references as ids)."""
        self._pages, self._listing = 0, f"/api/{endpoint}/"
        request = self._request(endpoint, filters=self._filters(params), limit=PAGE)
        try:
            found = self._call(f"GET /api/{endpoint}/", lambda: list(request.get()))
        finally:
            self._listing = None
        return [self._shape(_object(o, endpoint, self.numeric_ids)) for o in found]

    def _filters(self, params: dict[str, str]) -> dict[str, str]:
        return {"depth": "0", **params}

    def create(self, endpoint: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [o for chunk in _chunks(bodies) for o in self._many("POST", endpoint, chunk)]

    def update(self, endpoint: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [o for chunk in _chunks(bodies) for o in self._many("PATCH", endpoint, chunk)]

    def delete(self, endpoint: str, ids: list[str]) -> None:
        for chunk in _chunks([{"id": i} for i in ids]):
            request = self._request(endpoint)
            self._call(f"DELETE /api/{endpoint}/", lambda request=request, chunk=chunk: request.delete(chunk))

    def _many(self, method: str, endpoint: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        request = self._request(endpoint)
        send = request.post if method == "POST" else request.patch
        answer = self._call(f"{method} /api/{endpoint}/", lambda: send(bodies))
        if not isinstance(answer, list) or len(answer) != len(bodies):
            raise SotError(f"{method} /api/{endpoint}/: the answer is not the {len(bodies)} objects sent")
        return [_object(o, endpoint) for o in answer]


@dataclass
class Nautobot(Source):
    """Nautobot, through pynautobot: its session, its Token authorization, the REST API version pinned
    (`api_version`), its requests and pagination."""

    api_version: str = API_VERSION
    kind = "Nautobot"

    def _library(self) -> Any:
        if self._api is None:
            try:
                import pynautobot
            except ImportError:
                raise SotError("pynautobot is not installed: pip install 'gpufabric[sot]'") from None
            api = pynautobot.api(self.url, token=self.token, api_version=self.api_version)
            self._guard(api.http_session)
            self._api = api
        return self._api

    def _errors(self) -> tuple[type[BaseException], type[BaseException]]:
        from pynautobot.core.query import ContentError, RequestError

        return RequestError, ContentError

    def _request(self, endpoint: str, **kwargs: Any) -> Any:
        from pynautobot.core.query import Request as LibraryRequest

        api = self._library()
        return LibraryRequest(
            base=f"{api.base_url}/{endpoint}/", http_session=api.http_session, token=self.token,
            api_version=self.api_version, **kwargs,
        )  # fmt: skip


@dataclass
class NetBox(Source):
    """NetBox, through pynetbox: its session, its authorization (`Token`, or `Bearer` for a v2 token), its
    requests and offset pagination. Read only: `sot pull`. NetBox differs from Nautobot in what the pull
    reads in three ways, made alike here: ids are numbers (given as text), a listing selects by the tag's
    slug (`tag=`), and a rack position is a decimal (a whole one given as a whole number)."""

    kind = "NetBox"
    tag_filter = "tag"
    numeric_ids = True

    def _library(self) -> Any:
        if self._api is None:
            try:
                import pynetbox
            except ImportError:
                raise SotError("pynetbox is not installed: pip install 'gpufabric[sot]'") from None
            api = pynetbox.api(self.url, token=self.token)
            self._guard(api.http_session)
            self._api = api
        return self._api

    def _errors(self) -> tuple[type[BaseException], type[BaseException]]:
        from pynetbox.core.query import ContentError, RequestError

        return RequestError, ContentError

    def _request(self, endpoint: str, **kwargs: Any) -> Any:
        from pynetbox.core.query import Request as LibraryRequest

        api = self._library()
        return LibraryRequest(base=f"{api.base_url}/{endpoint}/", http_session=api.http_session, token=self.token,
                              **kwargs)  # fmt: skip

    def _filters(self, params: dict[str, str]) -> dict[str, str]:
        return dict(params)  # NetBox has no depth: references come nested, with their ids

    def _shape(self, value: dict[str, Any]) -> dict[str, Any]:
        shaped = _ids_as_text(value)
        position = shaped.get("position")
        if isinstance(position, float) and position.is_integer():
            shaped["position"] = int(position)
        return shaped  # type: ignore[no-any-return]

    def create(self, endpoint: str, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        raise SotError("gpufabric writes to Nautobot only: `sot push` to NetBox is not supported (use --kind nautobot)")

    update = create

    def delete(self, endpoint: str, ids: list[str]) -> None:
        raise SotError("gpufabric writes to Nautobot only: `sot push` to NetBox is not supported (use --kind nautobot)")


def _ids_as_text(value: Any, depth: int = 0) -> Any:
    """Every object's and reference's numeric `id` as text, as Nautobot's UUIDs are (NetBox numbers them)."""
    if isinstance(value, dict):
        out = {k: _ids_as_text(v, depth + 1) for k, v in value.items()}
        if isinstance(out.get("id"), int) and not isinstance(out["id"], bool):
            out["id"] = str(out["id"])
        return out
    if isinstance(value, list):
        return [_ids_as_text(v, depth + 1) for v in value]
    return value


KINDS: dict[str, type[Source]] = {"nautobot": Nautobot, "netbox": NetBox}


def _chunks(items: list[dict[str, Any]], size: int = 200) -> Iterator[list[dict[str, Any]]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _object(value: Any, endpoint: str, numeric: bool = False) -> dict[str, Any]:
    """An object of an answer: with a text id (Nautobot's UUID), or with `numeric`, a whole number (NetBox's)."""
    where = endpoint if endpoint.startswith("/") else f"/api/{endpoint}/"
    if numeric and isinstance(value, dict) and type(value.get("id")) is int and 0 < value["id"] < 1 << 63:
        value = {**value, "id": str(value["id"])}
    if not isinstance(value, dict) or not isinstance(value.get("id"), str) or len(value["id"]) > 64:
        raise SotError(f"{where}: an object without a text id in the answer")
    return value


def _next(link: Any, base: str, path: str) -> str | None:
    """The next page's path, only on the same server and endpoint (`path`, /api/<endpoint>/)."""
    if link is None:
        return None
    if not isinstance(link, str):
        raise SotError(f"GET {path}: the next page's link is not text")
    parts = urllib.parse.urlsplit(link)
    own = urllib.parse.urlsplit(base)
    if (parts.scheme, parts.netloc) != (own.scheme, own.netloc) or not parts.path.startswith(path):
        raise SotError(f"GET {path}: the next page is elsewhere ({printable(link[:SHOWN])})")
    return f"{parts.path}?{parts.query}"
