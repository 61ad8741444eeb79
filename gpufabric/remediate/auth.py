"""Who may ask the receiver to drain nodes: a bearer token and TLS, as Alertmanager's webhook sends them.

Alertmanager's `webhook_config` takes an `http_config` (its documentation, "Configuration",
`<http_config>`): `authorization: {type: Bearer, credentials_file: FILE}` sends `Authorization: Bearer
<the file's content, whitespace trimmed>` with every notification, and `tls_config: {ca_file: FILE}`
checks the receiver's certificate. So the receiver takes:

- the token from a file (`--token-file`), never from the command line (where `ps` shows it) and never
  logged; the file may not be readable by others, nor writable by anyone but its owner; the token is a
  bearer token as RFC 6750 writes one (`b64token`), at least 16 characters;
- a certificate and its key (`--tls-cert`, `--tls-key`), TLS 1.2 or later.

Without a token the receiver listens on a loopback address only: any other address would let anyone
who reaches it drain nodes.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import re
import ssl
import stat
from pathlib import Path

from gpufabric.errors import GpufabricError
from gpufabric.inputs import read_text

TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]{16,4096}=*")  # RFC 6750 section 2.1's b64token, of some length
MAX_TOKEN_FILE = 8192


class AuthError(GpufabricError):
    """A token file, a certificate or an address the receiver will not serve with (the message says why)."""


def read_token(path: Path) -> bytes:
    """The bearer token held in `path` (surrounding whitespace trimmed, as Alertmanager trims it). The
    token itself never appears in an error."""
    text = read_text(path, what="the webhook's bearer token", max_bytes=MAX_TOKEN_FILE)
    mode = os.stat(path).st_mode  # what was read: a link (a Kubernetes secret's) is followed, as read_text does
    if mode & 0o027:
        raise AuthError(
            f"--token-file {path}: readable or writable by others (mode {stat.S_IMODE(mode):04o}): "
            f"chmod 600 {path} (640 to share it with Alertmanager's group)"
        )
    token = text.strip()
    if not TOKEN.fullmatch(token):
        raise AuthError(
            f"--token-file {path}: does not hold one bearer token of 16 to 4096 characters (letters, digits, "
            f"'-._~+/', then '=' padding, on one line): write one with `openssl rand -hex 32 > {path}`"
        )
    return token.encode("ascii")


def token_matches(header: str | None, token: bytes) -> bool:
    """Whether an Authorization header carries `token` as a Bearer credential; compared in constant time."""
    scheme, _, credential = (header or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(credential.strip().encode("utf-8", "replace"), token)


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A server's TLS context from a PEM certificate (chain) and its key: TLS 1.2 or later."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    for name, path in (("--tls-cert", cert), ("--tls-key", key)):
        try:
            info = os.stat(path)
        except OSError as exc:
            raise AuthError(f"{name} {path}: {exc.strerror}") from None
        if not stat.S_ISREG(info.st_mode):
            raise AuthError(f"{name} {path}: not a regular file")
    if os.stat(key).st_mode & 0o007:
        raise AuthError(f"--tls-key {key}: readable by others: chmod 600 {key}")
    try:
        context.load_cert_chain(cert, key)
    except (ssl.SSLError, OSError) as exc:
        raise AuthError(
            f"--tls-cert {cert} / --tls-key {key}: not a PEM certificate and its key ({exc.__class__.__name__}: "
            f"{getattr(exc, 'reason', None) or exc})"
        ) from None
    return context


def check_listen(host: str, token: bytes | None) -> None:
    """Refuse an address other than loopback when no token guards it."""
    if token is None and not ipaddress.ip_address(host).is_loopback:
        shown = f"[{host}]" if ":" in host else host
        raise AuthError(
            f"--listen {shown}: not a loopback address, and no --token-file: anyone who reaches it could drain "
            "nodes. Give --token-file (Alertmanager sends it with `gpufabric telemetry alertmanager "
            "--webhook-token-file`), best with --tls-cert and --tls-key, or listen on 127.0.0.1"
        )
