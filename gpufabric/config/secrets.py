"""Secrets in rendered configs: hashed at render time, or left as a reference token.

A rendered file never holds a secret in plaintext. Passwords become salted SHA-crypt
hashes. Secrets that a platform can only store in clear (an SNMPv2c community) are
rendered as a token, `@secret:env:NAME@`, that `push` replaces in memory just before
loading the candidate; `verify` checks every token is well formed.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping

from gpufabric.config.shacrypt import ROUNDS, salt_for, sha_crypt
from gpufabric.errors import GpufabricError
from gpufabric.intent.model import Intent
from gpufabric.intent.types import SecretRef

TOKEN = re.compile(r"@secret:(env|vault):([A-Za-z_][A-Za-z0-9_]*)@")
# A password kept in a vault is hashed by `push`, which can open the vault: (algorithm, rounds, salt, kind, name).
HASH_TOKEN = re.compile(
    r"@hash:(sha512|sha256):([0-9]{4,9}):([./0-9A-Za-z]{1,16}):(env|vault):([A-Za-z_][A-Za-z0-9_]*)@"
)


class SecretUnavailableError(GpufabricError):
    """A referenced secret is needed at render time but cannot be read."""

    def __init__(self, ref: SecretRef, field: str) -> None:
        self.ref, self.field = ref, field
        if ref.env is not None:
            msg = (
                f"{field} names the environment variable {ref.env}, which is not set: "
                f"export {ref.env}=... before rendering (it is never written in clear)"
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

    def hashed(m: re.Match[str]) -> str:
        return _crypt(lookup(m.group(4), m.group(5)), m.group(3), m.group(1), int(m.group(2)))

    text = HASH_TOKEN.sub(hashed, text)
    return TOKEN.sub(lambda m: lookup(m.group(1), m.group(2)), text)


@functools.lru_cache(maxsize=32)
def _crypt(password: str, salt: str, algorithm: str, rounds: int) -> str:
    """One slow hash per fabric, user and platform flavour, however many switches a push loads it on."""
    return sha_crypt(password, salt, algorithm, rounds)


class PasswordHasher:
    """Hashes each referenced password once per fabric and user.

    SHA-crypt is slow on purpose, so one hash serves every switch of a fabric, as operators do by
    hand. The salt is an HMAC of fabric and user under `credentials.salt_key`, a secret the user
    holds: stable across renders, yet nobody without the key can compute a dictionary ahead.
    """

    def __init__(
        self, fabric: str, environ: Mapping[str, str] | None = None, salt_key: SecretRef | None = None
    ) -> None:
        self.fabric = fabric
        self.env = os.environ if environ is None else environ
        self.salt_key = salt_key

    @classmethod
    def for_intent(cls, intent: Intent, environ: Mapping[str, str] | None = None) -> PasswordHasher:
        return cls(intent.fabric.name, environ, intent.credentials.salt_key)

    def require(self, ref: SecretRef | None, field: str) -> None:
        """Fail before any work starts when a secret that rendering needs is missing."""
        for needed, where in ((ref, field), (self.salt_key if ref is not None else None, "credentials.salt_key")):
            if needed is not None and needed.env is not None and needed.env not in self.env:
                raise SecretUnavailableError(needed, where)

    def salt(self, user: str) -> str:
        if self.salt_key is None:
            return salt_for(self.fabric, user)
        key = self.salt_key.env if self.salt_key.env is not None else f"vault:{self.salt_key.vault}"
        if key not in self.env:
            raise SecretUnavailableError(self.salt_key, "credentials.salt_key")
        return salt_for(self.fabric, user, key=self.env[key])

    def hash(self, ref: SecretRef, user: str, algorithm: str, field: str, rounds: int = ROUNDS) -> str:
        salt = self.salt(user)
        if ref.vault is not None:
            return f"@hash:{algorithm}:{rounds}:{salt}:vault:{ref.vault}@"
        if ref.env is None or ref.env not in self.env:
            raise SecretUnavailableError(ref, field)
        return _crypt(self.env[ref.env], salt, algorithm, rounds)


class ReferenceHasher(PasswordHasher):
    """Names the reference instead of hashing: for exports, diffs and plan-only work, which need no
    secret and must show none."""

    def hash(self, ref: SecretRef, user: str, algorithm: str, field: str, rounds: int = ROUNDS) -> str:
        return f"env:{ref.env}" if ref.env is not None else f"vault:{ref.vault}"


def secret_values(intent: Intent, secrets: Mapping[str, str]) -> tuple[str, ...]:
    """The values of the secrets the intent names that `secrets` holds: what output must never show.
    Longest first, so a secret containing another is hidden whole."""
    refs = set(declared(intent))
    for ref in (intent.credentials.salt_key, intent.credentials.bmc.password if intent.credentials.bmc else None):
        if ref is not None:
            refs.add(("env", ref.env) if ref.env else ("vault", str(ref.vault)))
    keys = [name if kind == "env" else f"vault:{name}" for kind, name in refs]
    values = {secrets[key] for key in keys if secrets.get(key)}
    return tuple(sorted(values, key=len, reverse=True))
