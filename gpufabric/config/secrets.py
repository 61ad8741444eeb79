"""Secrets in rendered configs: hashed at render time, or left as a reference token.

A rendered file never holds a secret in plaintext. Passwords become salted SHA-crypt
hashes. Secrets that a platform can only store in clear (an SNMPv2c community) are
rendered as a token, `@secret:env:NAME@`, that `push` replaces in memory just before
loading the candidate; `verify` checks every token is well formed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from gpufabric.config.shacrypt import salt_for, sha_crypt
from gpufabric.intent.model import Intent
from gpufabric.intent.types import SecretRef

TOKEN = re.compile(r"@secret:(env|vault):([A-Za-z_][A-Za-z0-9_]*)@")
# A password kept in a vault is hashed by `push`, which can open the vault: (algorithm, salt, kind, name).
HASH_TOKEN = re.compile(r"@hash:(sha512|sha256):([./0-9A-Za-z]{1,16}):(env|vault):([A-Za-z_][A-Za-z0-9_]*)@")


class SecretUnavailableError(Exception):
    """A referenced secret is needed at render time but cannot be read."""

    def __init__(self, ref: SecretRef, field: str) -> None:
        self.ref, self.field = ref, field
        if ref.env is not None:
            msg = (
                f"{field} names the environment variable {ref.env}, which is not set: "
                f"export {ref.env}=... before rendering (it is hashed, never written in clear)"
            )
        else:
            msg = (
                f"{field} names the vault entry {ref.vault}, which the vault does not hold (or no vault was "
                "given: --vault-file and --vault-password-file, when pushing)"
            )
        super().__init__(msg)


def token(ref: SecretRef) -> str:
    return f"@secret:env:{ref.env}@" if ref.env is not None else f"@secret:vault:{ref.vault}@"


class UndeclaredSecretError(SecretUnavailableError):
    """A configuration holds a token for a secret the intent does not reference."""

    def __init__(self, ref: SecretRef) -> None:
        Exception.__init__(
            self,
            f"a configuration to load holds a token for {ref.env or ref.vault}, which the intent names as no "
            "credential or community: refusing to resolve it (was the rendered file edited?)",
        )
        self.ref, self.field = ref, "a rendered config"


def declared(intent: Intent) -> frozenset[tuple[str, str]]:
    """The (kind, name) of every secret the intent references: the only ones a token may resolve to."""
    refs = [
        intent.credentials.switches.password,
        intent.credentials.switches.ssh_key,
        intent.credentials.hosts.password,
        intent.credentials.hosts.ssh_key,
        intent.management.snmp.community if intent.management.snmp else None,
    ]
    return frozenset(("env", r.env) if r.env else ("vault", str(r.vault)) for r in refs if r is not None)


def resolve_tokens(
    text: str, secrets: Mapping[str, str] | None = None, allowed: frozenset[tuple[str, str]] | None = None
) -> str:
    """Replace every token with its secret (or its hash), for loading onto a device; never write the result.

    `secrets` maps reference names to values: the environment, or what push read from a vault.
    `allowed` (the intent's `declared` references) keeps a token that reached a file some other way
    from copying an unrelated variable (a cloud key, say) onto a switch.
    """
    known = os.environ if secrets is None else secrets

    def lookup(kind: str, name: str) -> str:
        if allowed is not None and (kind, name) not in allowed:
            raise UndeclaredSecretError(SecretRef(**{kind: name}))
        key = name if kind == "env" else f"vault:{name}"  # gpufabric.config.vault.vault_key
        if key not in known:
            raise SecretUnavailableError(SecretRef(**{kind: name}), "a rendered config")
        return known[key]

    text = HASH_TOKEN.sub(lambda m: sha_crypt(lookup(m.group(3), m.group(4)), m.group(2), m.group(1)), text)
    return TOKEN.sub(lambda m: lookup(m.group(1), m.group(2)), text)


class PasswordHasher:
    """Hashes each referenced password once per fabric and user.

    SHA-crypt is slow on purpose (~15 ms here), so one hash serves every switch of a
    fabric, as operators do by hand; the salt still differs between fabrics and users.
    """

    def __init__(self, fabric: str, environ: Mapping[str, str] | None = None) -> None:
        self.fabric = fabric
        self.env = os.environ if environ is None else environ
        self._cache: dict[tuple[str, str, str], str] = {}

    def require(self, ref: SecretRef | None, field: str) -> None:
        """Fail before any work starts when a secret that rendering needs is missing."""
        if ref is not None and ref.env is not None and ref.env not in self.env:
            raise SecretUnavailableError(ref, field)

    def hash(self, ref: SecretRef, user: str, algorithm: str, field: str) -> str:
        if ref.vault is not None:
            return f"@hash:{algorithm}:{salt_for(self.fabric, user)}:vault:{ref.vault}@"
        if ref.env is None or ref.env not in self.env:
            raise SecretUnavailableError(ref, field)
        key = (ref.env, user, algorithm)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = sha_crypt(self.env[ref.env], salt_for(self.fabric, user), algorithm)
        return hit


def secret_values(intent: Intent, secrets: Mapping[str, str]) -> tuple[str, ...]:
    """The values of the secrets the intent names that `secrets` holds: what output must never show.
    Longest first, so a secret containing another is hidden whole."""
    keys = [name if kind == "env" else f"vault:{name}" for kind, name in declared(intent)]
    values = {secrets[key] for key in keys if secrets.get(key)}
    return tuple(sorted(values, key=len, reverse=True))
