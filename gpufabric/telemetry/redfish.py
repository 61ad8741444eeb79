"""A bounded, read-only DMTF Redfish client for one server's BMC.

Every answer is outside input: it is read within a per-request timeout and a deadline for the whole
read, up to a size cap, parsed as JSON with a depth cap (NaN and Infinity refused), and only then
looked at field by field with type checks. Links are followed only when they are paths of the same
service (`/redfish/v1/...`); a redirect is followed only to the same origin (scheme, host, port), so
the login never goes to another host. The login is sent as HTTP basic authentication over verified
TLS; over plain HTTP only when the caller says so explicitly (a lab), and never shown: an error names
the BMC, the URL path and the field, never the credential.

The resources and properties read are those of DMTF's Redfish schema (DSP8010, 2023.x):
ServiceRoot (`Systems`, `Chassis`), ComputerSystem (`Status.Health`, `Status.HealthRollup`,
`PowerState`), Chassis (`Power`, `Thermal` in the older model; `PowerSubsystem`, `ThermalSubsystem`
in the newer, schema 2020.4 on), Power (`PowerSupplies[]`), PowerSupply, Thermal (`Temperatures[]`,
`Fans[]`), Fan, ThermalMetrics (`TemperatureReadingsCelsius[]`) and Sensor (`Reading`,
`Thresholds.UpperCritical.Reading`); `Status.Health` is one of `OK`, `Warning`, `Critical` (Resource
schema) and `Status.State` `Absent` marks an empty bay.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import socket
import ssl
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from gpufabric.errors import GpufabricError, printable
from gpufabric.hidden import Hidden

# A path this service may point at: under /redfish/v1, plain segments (no `..`, no query, no fragment).
_PATH = re.compile(r"/redfish/v1(/[A-Za-z0-9_.~%:@+,=!$'()*-]{1,128}){0,12}/?")
# A member's id or name as it may reach a label, an alert's summary and a drain's reason.
_ID = re.compile(r"[A-Za-z0-9._:/#()+-]{1,64}")
_NAME = re.compile(r"[A-Za-z0-9 ._:/#()+,-]{1,64}")
HEALTH = {"OK": 0, "Warning": 1, "Critical": 2}
REDIRECTS = 3


@dataclass(frozen=True)
class Limits:
    """How long, how much and how deep one BMC's read may go."""

    request_timeout: float = 5.0  # seconds for one request, connect to last byte
    deadline: float = 20.0  # seconds for the whole read of one BMC
    max_bytes: int = 1 << 20  # one answer's body
    max_depth: int = 32  # JSON nesting (Redfish resources nest a handful of levels)
    max_members: int = 64  # members of one collection (systems, chassis, power supplies, fans, sensors)
    max_requests: int = 256  # requests in one read

    def __post_init__(self) -> None:
        if not 0 < self.request_timeout <= self.deadline:
            raise ValueError("the request timeout must be positive and fit the deadline")


class RedfishError(GpufabricError):
    """A BMC that cannot be read, or whose answer is not what the Redfish schema says: located by the
    BMC, the URL path and the field."""

    def __init__(self, bmc: str, path: str, problem: str, field: str = "") -> None:
        self.bmc, self.path, self.field, self.problem = bmc, path, field, problem
        where = f"{path}: {field}" if field else path
        super().__init__(printable(f"BMC {bmc}: GET {where}: {problem}"))


@dataclass(frozen=True)
class Endpoint:
    """One BMC: its name (the server's), where its Redfish service answers, and how to log in."""

    node: str
    host: str
    port: int
    scheme: str  # https | http
    username: str
    password: Hidden
    ca_file: str | None = None
    plain_http: bool = False  # the operator's explicit yes to sending the login over http (a lab)

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


class Session:
    """The reads of one BMC within one deadline."""

    def __init__(self, endpoint: Endpoint, limits: Limits = Limits()) -> None:
        if endpoint.scheme not in ("https", "http"):
            raise RedfishError(endpoint.node, "/redfish/v1", f"scheme {endpoint.scheme!r} is neither https nor http")
        if endpoint.scheme == "http" and not endpoint.plain_http:
            raise RedfishError(
                endpoint.node,
                "/redfish/v1",
                "the BMC is reached over plain http, which would carry the login in clear: refused "
                "(use https, or --plain-http for a lab)",
            )
        self.endpoint, self.limits = endpoint, limits
        self.end = time.monotonic() + limits.deadline
        self.requests = 0
        self._tls: ssl.SSLContext | None = None

    def _context(self) -> ssl.SSLContext:
        if self._tls is None:
            try:
                self._tls = ssl.create_default_context(cafile=self.endpoint.ca_file)
            except (OSError, ssl.SSLError) as exc:
                problem = f"the CA bundle {self.endpoint.ca_file}: {exc}"
                raise RedfishError(self.endpoint.node, "/redfish/v1", problem) from None
        return self._tls

    def error(self, path: str, problem: str, field: str = "") -> RedfishError:
        return RedfishError(self.endpoint.node, path, problem, field)

    def get(self, path: str) -> dict[str, Any]:
        """The resource at `path` (a path of this service), as a JSON object."""
        if not _PATH.fullmatch(path) or "/../" in f"{path}/" or "/./" in f"{path}/":
            raise self.error(path[:200], "not a path of this Redfish service (/redfish/v1/...)")
        asked = path
        for _ in range(REDIRECTS + 1):
            status, headers, body = self._request(path)
            if status in (301, 302, 303, 307, 308):
                path = self._redirect(asked, path, headers.get("Location", ""))
                continue
            if status != 200:
                raise self.error(path, f"HTTP {status}{' (the login was refused)' if status in (401, 403) else ''}")
            return self._json(path, body)
        raise self.error(asked, f"more than {REDIRECTS} redirects")

    def _redirect(self, asked: str, path: str, location: str) -> str:
        """The same-origin path a redirect points at; another origin is refused (the login would follow)."""
        target = urllib.parse.urlsplit(urllib.parse.urljoin(self.endpoint.origin + path, location))
        try:
            port = target.port or (443 if target.scheme == "https" else 80)
        except ValueError:
            port = -1
        same = (target.scheme, (target.hostname or "").lower(), port) == (
            self.endpoint.scheme,
            self.endpoint.host.lower(),
            self.endpoint.port,
        )
        if not same:
            where = f"{target.scheme}://{target.hostname or ''}:{port}"[:200]
            raise self.error(asked, f"redirected to another origin ({where}): not followed, the login would go there")
        nxt = target.path + (f"?{target.query}" if target.query else "")
        if not _PATH.fullmatch(nxt):
            raise self.error(asked, f"redirected to {nxt[:200]!r}, not a path of this Redfish service")
        return nxt

    def _request(self, path: str) -> tuple[int, http.client.HTTPMessage, bytes]:
        self.requests += 1
        if self.requests > self.limits.max_requests:
            raise self.error(path, f"more than {self.limits.max_requests} requests in one read")
        e = self.endpoint
        timeout = min(self.limits.request_timeout, self._left(path))
        conn: http.client.HTTPConnection
        if e.scheme == "https":
            conn = http.client.HTTPSConnection(e.host, e.port, timeout=timeout, context=self._context())
        else:
            conn = http.client.HTTPConnection(e.host, e.port, timeout=timeout)
        login = base64.b64encode(f"{e.username}:{e.password.reveal()}".encode()).decode("ascii")
        headers = {"Accept": "application/json", "Authorization": f"Basic {login}", "OData-Version": "4.0"}
        try:
            conn.request("GET", path, headers=headers)
            sock = conn.sock  # kept: http.client lets go of it when the answer ends with the connection
            response = conn.getresponse()
            return response.status, response.msg, self._body(path, response, sock)
        except ssl.SSLCertVerificationError as exc:
            raise self.error(path, f"the BMC's certificate is not trusted: {exc.verify_message}") from None
        except TimeoutError:
            if time.monotonic() >= self.end:
                raise self.error(path, f"the read ran past its deadline ({self.limits.deadline:g} s)") from None
            raise self.error(path, "no answer within the time allowed") from None
        except (OSError, http.client.HTTPException) as exc:
            raise self.error(path, f"{type(exc).__name__}: {exc}"[:300]) from None
        finally:
            conn.close()

    def _left(self, path: str) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise self.error(path, f"the read ran past its deadline ({self.limits.deadline:g} s)")
        return left

    def _body(self, path: str, response: http.client.HTTPResponse, sock: socket.socket | None) -> bytes:
        """The body, read piece by piece so that neither its size nor a slow sender passes the bounds."""
        cap = self.limits.max_bytes
        length = response.getheader("Content-Length")
        if length is not None and length.strip().isdigit() and int(length) > cap:
            raise self.error(path, f"the answer is {int(length)} bytes, more than the {cap} allowed")
        chunks: list[bytes] = []
        size = 0
        while True:
            left = self._left(path)  # checked before every piece: a slow sender cannot stretch the deadline
            if sock is not None:
                sock.settimeout(min(self.limits.request_timeout, left))
            chunk = response.read1(65536)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > cap:
                raise self.error(path, f"the answer is more than the {cap} bytes allowed")
            chunks.append(chunk)

    def _json(self, path: str, body: bytes) -> dict[str, Any]:
        if _depth(body) > self.limits.max_depth:
            raise self.error(path, f"the answer nests deeper than {self.limits.max_depth} levels")
        try:
            value = json.loads(body.decode("utf-8"), parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise self.error(path, f"the answer is not JSON: {exc}"[:300]) from None
        if not isinstance(value, dict):
            raise self.error(path, f"the answer is a JSON {type(value).__name__}, not an object")
        return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _depth(body: bytes) -> int:
    """The deepest nesting of brackets (brackets inside strings only overcount: a bound, not a parse)."""
    depth = deepest = 0
    for c in body.translate(None, bytes(c for c in range(256) if c not in b"[]{}")):
        depth += 1 if c in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


# -- typed access to an answer's fields ----------------------------------------------------------------


class Resource:
    """One answer, with its path, so each field read is type-checked and a wrong one is located."""

    def __init__(self, session: Session, path: str, body: dict[str, Any]) -> None:
        self.session, self.path, self.body = session, path, body

    def value(self, field: str, kinds: tuple[type, ...], *, required: bool = False, at: Any = None) -> Any:
        """`field` (dotted) of `at` (the answer by default): of one of `kinds`, or None when absent (or JSON
        null, which Redfish allows for a property the service cannot tell)."""
        node: Any = self.body if at is None else at
        for part in field.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            if required:
                raise self.session.error(self.path, "missing", field)
            return None
        numeric = float in kinds
        if isinstance(node, bool) or not isinstance(node, kinds if not numeric else (*kinds, int)):
            names = " or ".join("number" if k is float else k.__name__ for k in kinds)
            raise self.session.error(self.path, f"a JSON {type(node).__name__}, not a {names}", field)
        return float(node) if numeric and isinstance(node, int) else node

    def link(self, field: str, at: Any = None, *, required: bool = False) -> str | None:
        """The `@odata.id` of a link property (`{"@odata.id": "/redfish/v1/..."}`)."""
        ref = self.value(field, (dict,), required=required, at=at)
        if ref is None:
            return None
        target = ref.get("@odata.id")
        if not isinstance(target, str) or not _PATH.fullmatch(target):
            shown = target[:120] if isinstance(target, str) else type(target).__name__
            raise self.session.error(
                self.path, f"{shown!r} is not a path of this Redfish service", f"{field}.@odata.id"
            )
        return target

    def health(self, field: str, at: Any = None) -> int | None:
        text = self.value(field, (str,), at=at)
        if text is None:
            return None
        if text not in HEALTH:
            raise self.session.error(self.path, f"{text[:40]!r} is not a Redfish health (OK, Warning, Critical)", field)
        return HEALTH[text]

    def path_of(self, field: str, at: Any = None) -> str | None:
        """A property holding a path of this service as a string (a `DataSourceUri`)."""
        target = self.value(field, (str,), at=at)
        if target is not None and not _PATH.fullmatch(target):
            raise self.session.error(self.path, f"{target[:120]!r} is not a path of this Redfish service", field)
        return target

    def ident(
        self, field: str, at: Any = None, *, pattern: re.Pattern[str] = _ID, required: bool = False
    ) -> str | None:
        text = self.value(field, (str,), at=at, required=required)
        if text is None:
            return None
        if not pattern.fullmatch(text):
            raise self.session.error(self.path, f"{text[:64]!r} is not a name gpufabric can label a series with", field)
        return text

    def members(self, field: str = "Members") -> list[str]:
        items = self.value(field, (list,), required=True)
        cap = self.session.limits.max_members
        if len(items) > cap:
            raise self.session.error(self.path, f"{len(items)} members, more than the {cap} allowed", field)
        return [
            str(self.link(f"{field}[{i}]", at={f"{field}[{i}]": item}, required=True)) for i, item in enumerate(items)
        ]

    def read(self, path: str) -> Resource:
        return Resource(self.session, path, self.session.get(path))


def name_pattern() -> re.Pattern[str]:
    return _NAME
