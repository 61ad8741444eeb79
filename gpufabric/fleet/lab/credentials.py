"""The lab's login: one admin user per lab, a random password and an SSH key, kept in the state dir (0600);
and the other secrets a lab switch's configuration needs (the salt key, an SNMP community).

A lab switch is a namespace on this machine, so its login cannot be a vendor's default and must
not be a secret from the intent: `lab up` makes one, and `push`/`validate` read it from here
when they target the lab. The same goes for every other secret the intent references for the
switches' configuration: `lab up` makes a random one, so the lab works with nothing exported.
Nothing prints them.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gpufabric.config.shacrypt import salt_for, sha_crypt
from gpufabric.config.vault import vault_key
from gpufabric.files import PRIVATE, write_atomic
from gpufabric.fleet.lab.state import read_record
from gpufabric.intent.model import Intent
from gpufabric.intent.types import SecretRef
from gpufabric.outputs import json_dumps

SECRETS_FILE = "secrets.json"
MAX_SECRETS = 64 * 1024  # a login, or a few random values


@dataclass(frozen=True)
class LabLogin:
    username: str
    password: str
    key_file: Path  # private key; the public key is key_file.pub

    def __repr__(self) -> str:  # a login must never end up in a log line
        return f"LabLogin(username={self.username!r}, password=<hidden>, key_file={str(self.key_file)!r})"

    @property
    def password_hash(self) -> str:
        return sha_crypt(self.password, salt_for(self.username, secrets.token_hex(8)))


def _path(state_dir: Path) -> Path:
    return state_dir / "login.json"


def ensure_login(state_dir: Path, username: str) -> LabLogin:
    """The lab's login, made on first use; the same one on every later `up`."""
    existing = load_login(state_dir)
    if existing is not None and existing.username == username:
        return existing
    keys = state_dir / "keys"
    keys.mkdir(parents=True, exist_ok=True)
    key = keys / "id_ed25519"
    if not key.exists():
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpufabric-lab", "-f", str(key)], check=True
        )
    login = LabLogin(username, secrets.token_urlsafe(18), key)
    path = _path(state_dir)
    write_atomic(path, json_dumps({"username": username, "password": login.password, "key_file": str(key)}), PRIVATE)
    os.chmod(path, 0o600)
    return login


def load_login(state_dir: Path) -> LabLogin | None:
    return read_record(
        _path(state_dir),
        "the lab's login record (login.json)",
        lambda data: LabLogin(str(data["username"]), str(data["password"]), Path(str(data["key_file"]))),
        MAX_SECRETS,
    )


def _key(ref: SecretRef) -> str:
    """The name a secret has among those push and render read (an environment variable, or a vault entry)."""
    return ref.env if ref.env is not None else vault_key(str(ref.vault))


def configuration_secrets(intent: Intent) -> list[str]:
    """The secrets a lab switch's rendered configuration needs besides the login's password: the
    hash salts' key and the SNMP community, by the names the intent gives them."""
    refs = [intent.credentials.salt_key, intent.management.snmp.community if intent.management.snmp else None]
    return [_key(ref) for ref in refs if ref is not None]


def ensure_secrets(state_dir: Path, intent: Intent) -> None:
    """A random value for each configuration secret the intent names, made on first use and kept
    (0600) so that later pushes render the same hashes; a value already kept is never replaced."""
    kept = load_secrets(state_dir)
    wanted = {name: kept.get(name) or secrets.token_hex(24) for name in configuration_secrets(intent)}
    if wanted.items() <= kept.items():
        return
    path = state_dir / SECRETS_FILE
    write_atomic(path, json_dumps({**kept, **wanted}), PRIVATE)  # the lab's login: owner-only, renamed into place
    os.chmod(path, 0o600)


def load_secrets(state_dir: Path) -> dict[str, str]:
    found = read_record(
        state_dir / SECRETS_FILE,
        "the lab's secrets record (secrets.json)",
        lambda data: {str(k): str(v) for k, v in data.items()},
        MAX_SECRETS,
    )
    return found or {}
