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


class VaultError(Exception):
    """The vault cannot be opened, or does not hold what the intent names."""


def vault_key(name: str) -> str:
    """Where a vault entry sits among the secrets a push holds: apart from environment variables."""
    return f"vault:{name}"


def open_vault(vault_file: Path, password_file: Path | None = None) -> dict[str, str]:
    """The vault's entries, by `vault_key`."""
    from ansible.parsing.vault import AnsibleVaultError, VaultLib, VaultSecret  # ansible-core: only when needed

    password_file = password_file or _env_password_file()
    if password_file is None:
        raise VaultError(
            f"{vault_file} is an Ansible Vault: give its password file with --vault-password-file "
            "or ANSIBLE_VAULT_PASSWORD_FILE"
        )
    try:
        password = password_file.read_bytes().strip()
        encrypted = vault_file.read_bytes()
    except OSError as exc:
        raise VaultError(f"cannot read {exc.filename}: {exc.strerror}") from None
    vault = VaultLib([("default", VaultSecret(password))])
    if not vault.is_encrypted(encrypted):
        raise VaultError(
            f"{vault_file} is not encrypted: run `ansible-vault encrypt {vault_file}` (secrets never in clear)"
        )
    try:
        plain = vault.decrypt(encrypted)
    except AnsibleVaultError:
        raise VaultError(f"{vault_file}: the password from {password_file} does not open it") from None
    data = yaml.safe_load(plain)
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise VaultError(f"{vault_file}: expected a mapping of names to text values once decrypted")
    return {vault_key(k): v for k, v in data.items()}


def _env_password_file() -> Path | None:
    value = os.environ.get("ANSIBLE_VAULT_PASSWORD_FILE")
    return Path(value) if value else None
