"""Who an HTTPS management API (EOS eAPI, NX-API) is, checked before the login travels.

Two ways to trust a switch's certificate, as SSH has its known_hosts:
- a CA bundle (`--ca-file`): the handshake itself verifies the chain and the switch's name or address;
- fingerprints recorded per switch (`--tls-known-hosts`): the SHA-256 of the certificate the switch
  presented, one `HOST FINGERPRINT` line each. A switch seen for the first time is recorded only
  with `--accept-new`; a changed certificate is refused, naming the switch and both fingerprints.

Either way the check happens on the connection the request then uses, right after the TLS handshake
and before any HTTP byte is written: the Authorization header (the fabric's password) never reaches a
peer that has not proven who it is. Plain HTTP has no such proof and is refused by the drivers.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.client
import io
import os
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from napalm.base.exceptions import ConnectionException

from gpufabric.drivers.answers import (
    DEFAULT_BOUNDS,
    AnswerDeadlineError,
    AnswerTooLargeError,
    ReadBounds,
    SwitchAnswerError,
    size_text,
)
from gpufabric.errors import GpufabricError
from gpufabric.files import AppendError, append_line
from gpufabric.inputs import InputError, MiB, read_text

_WRITE = threading.Lock()
MAX_PINS = 32 * MiB  # a line of about 110 bytes per switch: a quarter of a million switches


class TlsTrustError(ConnectionException, GpufabricError):
    """The peer did not prove it is the switch: nothing (no login) was sent to it."""


@dataclass(frozen=True)
class TlsTrust:
    ca_file: str | None = None  # verify the chain and name against this CA bundle
    known_hosts: str | None = None  # else: SHA-256 fingerprints recorded per switch
    accept_new: bool = False  # record the fingerprint of a switch seen for the first time

    @classmethod
    def from_args(cls, optional_args: dict[str, Any]) -> TlsTrust:
        return cls(
            ca_file=optional_args.get("tls_ca_file") or None,
            known_hosts=optional_args.get("tls_known_hosts") or None,
            accept_new=bool(optional_args.get("accept_new", False)),
        )


def fingerprint(der: bytes) -> str:
    """SHA-256 of a DER certificate, spelled as `openssl x509 -noout -fingerprint -sha256` prints it."""
    digest = hashlib.sha256(der).hexdigest().upper()
    return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))


def host_key(host: str, port: int) -> str:
    return host if port == 443 else f"[{host}]:{port}"


def read_pins(path: str) -> dict[str, str]:
    """HOST -> FINGERPRINT from a TLS known-hosts file (missing file: none recorded). Read the one way
    outside input is read (gpufabric.inputs): a FIFO, a device or a file beyond MAX_PINS there is
    refused, and then no login is sent."""
    pins: dict[str, str] = {}
    if not os.path.lexists(path):
        return pins
    try:
        text = read_text(path, what="a TLS known-hosts file (HOST FINGERPRINT lines)", max_bytes=MAX_PINS)
    except InputError as exc:
        problem = exc.problems[0]
        raise TlsTrustError(f"{path}: {problem.message}; refusing to send the login ({problem.hint})") from None
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) >= 2:
            pins[fields[0]] = fields[1].upper()
    return pins


def record_pin(path: str, host: str, print_: str) -> None:
    """Append HOST FINGERPRINT (the file is created 0600: it decides whom the password goes to). An
    append-only file: opened without following a link and without waiting on a FIFO, and refused
    unless it is a plain file, so a link planted in its place is never written through."""
    with _WRITE:
        try:
            append_line(Path(path), f"{host} {print_}\n")
        except AppendError as exc:
            raise TlsTrustError(f"cannot record {host}'s certificate in {path}: {exc}") from None


def check_certificate(trust: TlsTrust, host: str, port: int, der: bytes) -> None:
    """Raise TlsTrustError unless the certificate `der` is the one recorded for host:port (or record it,
    first time, with accept_new)."""
    seen = fingerprint(der)
    where = trust.known_hosts or "a TLS known-hosts file"
    key = host_key(host, port)
    known = read_pins(trust.known_hosts).get(key) if trust.known_hosts else None
    if known is None:
        if trust.accept_new and trust.known_hosts:
            record_pin(trust.known_hosts, key, seen)
            return
        raise TlsTrustError(
            f"{host}: its TLS certificate is not trusted: no --ca-file, and no fingerprint recorded for it in "
            f"{where}; refusing to send the login. It presented SHA-256 {seen}: compare it with the switch's "
            "own certificate, then run once with --accept-new to record it (or pass --ca-file)"
        )
    if known != seen:
        raise TlsTrustError(
            f"{host}: its TLS certificate changed: {where} records SHA-256 {known}, it presented SHA-256 {seen}; "
            "refusing to send the login (someone may be answering in its place). If the switch's certificate was "
            "replaced, verify the new one and replace its line"
        )


class VerifiedHTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection that proves the peer (CA or recorded fingerprint) as it connects, before any
    request line or header is written on it."""

    def __init__(
        self,
        host: str,
        port: int,
        trust: TlsTrust,
        timeout: float,
        path: str = "/",
        *,
        bounds: ReadBounds = DEFAULT_BOUNDS,
    ) -> None:
        self.trust = trust
        self.path = path  # pyeapi reads it
        self.bounds = bounds
        super().__init__(host, port, timeout=timeout, context=_context(trust))
        # Each response is read against a whole-answer deadline from the moment it is awaited (a byte a
        # minute kept a socket timeout from ever firing), and its body against the byte bound (read_answer).
        seconds = max(timeout, bounds.command_seconds)
        self.response_class = functools.partial(_DeadlineResponse, host=host, seconds=seconds)  # type: ignore[assignment]

    def connect(self) -> None:
        try:
            super().connect()  # TCP, then the TLS handshake (which checks the chain and name with a CA)
        except ssl.SSLCertVerificationError as exc:
            raise TlsTrustError(
                f"{self.host}: its TLS certificate does not verify against {self.trust.ca_file} "
                f"({exc.verify_message}); refusing to send the login"
            ) from None
        if self.trust.ca_file:
            return
        der = self.sock.getpeercert(binary_form=True) if isinstance(self.sock, ssl.SSLSocket) else None
        try:
            if not der:
                raise TlsTrustError(f"{self.host}: presented no TLS certificate; refusing to send the login")
            check_certificate(self.trust, self.host, self.port, der)
        except TlsTrustError:
            self.close()
            raise


def _context(trust: TlsTrust) -> ssl.SSLContext:
    if trust.ca_file:
        if not os.path.isfile(trust.ca_file):
            raise TlsTrustError(f"--ca-file {trust.ca_file}: no such file")
        context = ssl.create_default_context(cafile=trust.ca_file)  # chain and host name checked in the handshake
    else:
        # The chain is not judged here (a switch's certificate is usually self-signed): its fingerprint is,
        # right after the handshake and before anything is written (VerifiedHTTPSConnection.connect).
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


@dataclass
class Reply:
    """What NAPALM's NX-API client reads of a response (requests' names)."""

    status_code: int
    text: str


def post(conn: VerifiedHTTPSConnection, path: str, body: str, headers: dict[str, str], login: tuple[str, str]) -> Reply:
    """One POST on a verified connection, with HTTP Basic authorization (sent only once it is verified).
    The answer is read within the connection's bounds (read_answer)."""
    token = base64.b64encode(f"{login[0]}:{login[1]}".encode()).decode()
    try:
        conn.request("POST", path, body=body.encode(), headers={**headers, "Authorization": f"Basic {token}"})
        response = conn.getresponse()
        return Reply(response.status, read_answer(response, conn.host, conn.bounds).decode(errors="replace"))
    finally:
        conn.close()


ANSWER = "(the HTTPS answer)"  # what an error names until the caller names the commands (renamed)
_CHUNK = 64 * 1024


def read_answer(response: http.client.HTTPResponse, host: str, bounds: ReadBounds) -> bytes:
    """The body of `response`, at most bounds.command_bytes: refused as soon as it announces more, or sends
    more. Read a chunk at a time: http.client's own read() of a whole body allocates the length the
    peer announced before a byte of it has come."""
    length = response.getheader("Content-Length") or ""
    if length.strip().isdigit() and int(length) > bounds.command_bytes:
        raise AnswerTooLargeError(
            host, ANSWER, f"announced {size_text(int(length))}, more than {size_text(bounds.command_bytes)}"
        )
    chunks: list[bytes] = []
    size = 0
    while chunk := response.read(_CHUNK):
        size += len(chunk)
        if size > bounds.command_bytes:
            raise AnswerTooLargeError(host, ANSWER, f"answered more than {size_text(bounds.command_bytes)}")
        chunks.append(chunk)
    return b"".join(chunks)


def renamed(exc: SwitchAnswerError, command: str) -> SwitchAnswerError:
    """The same failure, naming the commands the request carried."""
    return type(exc)(exc.host, command, exc.problem)


class _DeadlineResponse(http.client.HTTPResponse):
    """An HTTP response whose every read from the socket gets only the time left until its deadline."""

    def __init__(self, sock: socket.socket, *args: Any, host: str, seconds: float, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        raw = self.fp.detach()  # the socket's reader, unread: the deadline goes between it and the parser
        self.fp = io.BufferedReader(_DeadlineReader(raw, sock, host, seconds))


class _DeadlineReader(io.RawIOBase):
    def __init__(self, raw: Any, sock: socket.socket, host: str, seconds: float) -> None:
        super().__init__()
        self.raw, self.sock, self.host, self.seconds = raw, sock, host, seconds
        self.idle = sock.gettimeout()
        self.deadline = time.monotonic() + seconds

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._late()
        self.sock.settimeout(left if self.idle is None else min(left, self.idle))
        try:
            return int(self.raw.readinto(buffer) or 0)
        except TimeoutError:
            if time.monotonic() >= self.deadline:
                raise self._late() from None
            raise

    def _late(self) -> AnswerDeadlineError:
        return AnswerDeadlineError(self.host, ANSWER, f"no complete answer within the deadline of {self.seconds:g} s")

    def close(self) -> None:
        self.raw.close()
        super().close()
