"""Secrets named `{vault: NAME}`: entries of an Ansible Vault file, opened with ansible-core's own code.

The vault is a YAML mapping of names to values, encrypted with `ansible-vault encrypt` (the file the
Ansible users this tool serves already keep beside their inventory). Its password comes from a file:
`--vault-password-file`, else ANSIBLE_VAULT_PASSWORD_FILE, as ansible-playbook takes it. Values are
held in memory only, for the one push or validate that needs them.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from gpufabric.errors import GpufabricError
from gpufabric.inputs import MiB, read_bytes

# A password file holds one line; a vault, a mapping of secrets (a few KiB, encrypted). Beyond these
# bounds the file is not what it is named as, and is not read on.
MAX_PASSWORD_FILE = 64 * 1024
MAX_VAULT = 16 * MiB


class VaultError(GpufabricError):
    """The vault cannot be opened, or does not hold what the intent names."""


def vault_key(name: str) -> str:
    """Where a vault entry sits among the secrets a push holds: apart from environment variables."""
    return f"vault:{name}"


def open_vault(vault_file: Path, password_file: Path | None = None) -> dict[str, str]:
    """The vault's entries, by `vault_key`."""
    try:  # ansible-core: only when needed, and only with the `ansible` extra
        from ansible.parsing.vault import AnsibleVaultError, VaultLib, VaultSecret
    except ImportError:
        raise VaultError(
            f"{vault_file}: reading an Ansible Vault needs ansible-core, which this installation lacks: "
            "install gpufabric's `ansible` extra: pip install 'gpufabric[ansible]' "
            "(from a clone: pip install '.[ansible]')"
        ) from None

    password_file = password_file or _env_password_file()
    if password_file is None:
        raise VaultError(
            f"{vault_file} is an Ansible Vault: give its password file with --vault-password-file "
            "or ANSIBLE_VAULT_PASSWORD_FILE"
        )
    # Read the one way outside input is read: a FIFO or a device named here is refused, not waited on.
    password = read_bytes(password_file, what="a vault password file", max_bytes=MAX_PASSWORD_FILE).strip()
    encrypted = read_bytes(vault_file, what="an Ansible Vault file", max_bytes=MAX_VAULT)
    vault = VaultLib([("default", VaultSecret(password))])
    if not vault.is_encrypted(encrypted):
        raise VaultError(
            f"{vault_file} is not encrypted: run `ansible-vault encrypt {vault_file}` (secrets never in clear)"
        )
    try:
        plain = vault.decrypt(encrypted)
    except AnsibleVaultError:
        raise VaultError(f"{vault_file}: the password from {password_file} does not open it") from None
    try:
        data = yaml.safe_load(plain)
    except yaml.YAMLError as exc:
        # Only where: the parser's message quotes the line, and the line holds a secret.
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise VaultError(
            f"{vault_file}: once decrypted, it is not YAML{where}; fix it with `ansible-vault edit`"
        ) from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise VaultError(f"{vault_file}: expected a mapping of names to text values once decrypted")
    return {vault_key(k): v for k, v in data.items()}


def _env_password_file() -> Path | None:
    value = os.environ.get("ANSIBLE_VAULT_PASSWORD_FILE")
    return Path(value) if value else None
