"""`{vault: NAME}` secrets come from an Ansible Vault file, opened with ansible-core's own code."""

from __future__ import annotations

import pytest
from ansible.parsing.vault import VaultLib, VaultSecret
from conftest import default_doc, plan_doc, set_path

from gpufabric.config.secrets import resolve_tokens, secret_values
from gpufabric.config.vault import VaultError, open_vault
from gpufabric.fleet.access import env_access

CANARY = "vault-canary-Zq81"


def _vault(tmp_path, data: str, password: bytes = b"correct horse"):
    secret = tmp_path / "vault-pass"
    secret.write_bytes(password + b"\n")
    vault = tmp_path / "vault.yml"
    vault.write_bytes(VaultLib([("default", VaultSecret(password))]).encrypt(data))
    return vault, secret


def test_a_vault_entry_resolves_a_vault_token(tmp_path):
    vault, secret = _vault(tmp_path, f"switch_password: {CANARY}\nsnmp: community-1\n")
    values = open_vault(vault, secret)
    assert values == {"vault:switch_password": CANARY, "vault:snmp": "community-1"}
    allowed = frozenset({("vault", "switch_password")})
    assert resolve_tokens("pw @secret:vault:switch_password@", values, allowed) == f"pw {CANARY}"
    assert CANARY not in vault.read_text()  # encrypted at rest


def test_the_vault_password_comes_from_the_ansible_variable(tmp_path, monkeypatch):
    vault, secret = _vault(tmp_path, "a: b\n")
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", str(secret))
    assert open_vault(vault) == {"vault:a": "b"}


@pytest.mark.parametrize(
    ("case", "says"),
    [("wrong password", "does not open it"), ("plain file", "is not encrypted"), ("no password", "password file")],
)
def test_a_vault_that_cannot_be_opened_says_why(tmp_path, monkeypatch, case, says):
    monkeypatch.delenv("ANSIBLE_VAULT_PASSWORD_FILE", raising=False)
    vault, secret = _vault(tmp_path, f"a: {CANARY}\n")
    if case == "wrong password":
        secret.write_text("wrong\n")
    elif case == "plain file":
        vault.write_text(f"a: {CANARY}\n")
    with pytest.raises(VaultError, match=says) as caught:
        open_vault(vault, None if case == "no password" else secret)
    assert CANARY not in str(caught.value)


def test_a_push_logs_in_with_the_vault_password_and_masks_it(tmp_path, monkeypatch):
    doc = set_path(default_doc(), ("credentials", "switches", "password"), {"vault": "switch_password"})
    intent = plan_doc(doc).intent
    vault, secret = _vault(tmp_path, f"switch_password: {CANARY}\n")
    access = env_access(intent, vault=open_vault(vault, secret))
    assert access.password == CANARY
    assert CANARY in secret_values(intent, access.secrets)
    assert CANARY not in repr(access)
