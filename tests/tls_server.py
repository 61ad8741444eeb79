"""A real HTTPS server on a loopback address, for the TLS trust tests: Python's ssl and http.server in a
thread, with a certificate made here (a CA and a switch certificate it signs, or a self-signed one).
It records the headers of every request it receives, and answers eAPI / NX-API JSON-RPC as a switch would
answer `show version` / `show hostname` (a test double of the API, behind a real TLS stack)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import random
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass
class Pki:
    ca_file: Path
    cert_file: Path
    key_file: Path
    der: bytes


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_pki(folder: Path, address: str, tag: str = "a") -> Pki:
    """A CA, and a certificate for `address` signed by it (written as PEM files in folder)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name(f"test CA {tag}"))
        .issuer_name(_name(f"test CA {tag}"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(f"switch {tag}"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    files = Pki(folder / f"ca-{tag}.pem", folder / f"cert-{tag}.pem", folder / f"key-{tag}.pem",
                cert.public_bytes(serialization.Encoding.DER))  # fmt: skip
    files.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    files.cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files.key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return files


def _answer(command: str) -> dict:
    if command == "show version":
        return {"version": "4.33.1F", "nxos_ver_str": "10.4(2)", "uptime": 100.0}
    if command == "show hostname":
        return {"hostname": "sw1"}
    return {}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.server.seen.append(dict(self.headers.items()))  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        if isinstance(body, list):  # NX-API JSON-RPC: one object per command
            reply = [{"jsonrpc": "2.0", "result": {"body": _answer(b["params"]["cmd"])}, "id": b["id"]} for b in body]
        else:  # eAPI: one object, a list of commands
            cmds = [c if isinstance(c, str) else c.get("cmd", "") for c in body["params"]["cmds"]]
            reply = {"jsonrpc": "2.0", "result": [_answer(c) for c in cmds if c != "enable"], "id": body.get("id")}
            if "enable" in cmds:
                reply["result"].insert(0, {})
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@dataclass
class TlsServer:
    pki: Pki
    address: str = field(default_factory=lambda: f"127.0.0.{random.randint(2, 250)}")
    seen: list[dict[str, str]] = field(default_factory=list)

    def __enter__(self) -> TlsServer:
        self.httpd = ThreadingHTTPServer((self.address, 0), _Handler)
        self.httpd.seen = self.seen  # type: ignore[attr-defined]
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.pki.cert_file, self.pki.key_file)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)
