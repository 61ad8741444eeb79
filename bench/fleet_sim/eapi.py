"""eAPI over HTTPS for the simulated EOS switches: a CA the run makes (its certificate is what the push
is given with `--ca-file`), a certificate per switch naming its address, and a small HTTP/1.1 server
answering `POST /command-api` (JSON-RPC `runCmds`) with HTTP Basic authentication."""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import json
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from bench.fleet_sim import latency as lat
from bench.fleet_sim.eos import EapiError, EosSwitch


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


class Ca:
    """A certificate authority of this run only: its key never leaves the process."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.now = datetime.datetime.now(datetime.UTC)
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name("fleet simulator CA"))
            .issuer_name(_name("fleet simulator CA"))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self.now - datetime.timedelta(minutes=5))
            .not_valid_after(self.now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.ca_file = folder / "ca.pem"
        self.ca_file.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))

    def server_context(self, name: str, address: str) -> ssl.SSLContext:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(self.now - datetime.timedelta(minutes=5))
            .not_valid_after(self.now + datetime.timedelta(days=2))
            .add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address)), x509.DNSName(name)]),
                critical=False,
            )
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        cert_file, key_file = self.folder / f"{name}.crt", self.folder / f"{name}.key"
        cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert_file, key_file)
        key_file.unlink()  # loaded: the key stays in memory only
        return context


def _reply(status: str, body: bytes, extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
    return head.encode() + body


async def _request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes] | None:
    line = await reader.readline()
    if not line:
        return None
    headers: dict[str, str] = {}
    while True:
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            break
        key, _, value = raw.decode("latin-1").partition(":")
        headers[key.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return line.decode("latin-1").strip(), headers, body


def _authorized(switch: EosSwitch, headers: dict[str, str]) -> bool:
    kind, _, token = headers.get("authorization", "").partition(" ")
    if kind.lower() != "basic":
        return False
    user, _, password = base64.b64decode(token).decode(errors="replace").partition(":")
    return user == switch.username and password == switch.password


def request_kind(body: bytes) -> str:
    """An eAPI request's kind, for counting: `eapi` and its first command other than `enable`."""
    try:
        cmds = json.loads(body).get("params", {}).get("cmds", [])
    except ValueError:
        return "eapi ?"
    words = [(c["cmd"] if isinstance(c, dict) else str(c)) for c in cmds]
    first = next((w for w in words if w != "enable"), "")
    return "eapi " + " ".join(w for w in first.split()[:3] if not w.startswith(("gpufabric-", "napalm_", "flash:")))


async def _answer(switch: EosSwitch, body: bytes) -> bytes:
    call: dict[str, Any] = json.loads(body)
    params = call.get("params", {})
    try:
        result = await switch.run_cmds(list(params.get("cmds", [])), str(params.get("format", "json")))
        return json.dumps({"jsonrpc": "2.0", "id": call.get("id"), "result": result}).encode()
    except EapiError as exc:
        error = {"code": 1002, "message": f"CLI command failed: {exc}", "data": [{"errors": [str(exc)]}]}
        return json.dumps({"jsonrpc": "2.0", "id": call.get("id"), "error": error}).encode()


async def serve(
    switch: EosSwitch, address: str, port: int, context: ssl.SSLContext, count: Callable[[str], None] | None = None
) -> asyncio.Server:
    """The switch's eAPI on address:port; `count` hears each request's kind."""

    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (request := await _request(reader)) is not None:
                line, headers, body = request
                if count is not None:
                    count(request_kind(body))
                await switch.pause(lat.EXEC)
                if not line.startswith("POST /command-api"):
                    writer.write(_reply("404 Not Found", b"{}"))
                elif not _authorized(switch, headers):
                    writer.write(_reply("401 Unauthorized", b"{}", 'WWW-Authenticate: Basic realm="eapi"\r\n'))
                else:
                    writer.write(_reply("200 OK", await _answer(switch, body)))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(session, address, port, ssl=context, backlog=128)
