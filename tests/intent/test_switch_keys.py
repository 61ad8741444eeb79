"""Switch logins with an SSH key: read from the reference the intent names, held in memory, never shown."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import default_doc, plan_doc, set_path
from napalm.base.exceptions import ConnectionException

from gpufabric.drivers.transport import load_private_key
from gpufabric.fleet import access as access_mod
from gpufabric.fleet.inventory import inventory_from_plan
from gpufabric.hidden import Hidden


def _key_text(tmp_path, kind: str = "ed25519") -> str:
    key = tmp_path / f"id_{kind}"
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(key)], check=True)
    return key.read_text()


# An RSA key takes seconds to make on a loaded machine: the fast tier keeps the other two.
@pytest.mark.parametrize(
    ("kind", "cls"),
    [("ed25519", "Ed25519Key"), ("ecdsa", "ECDSAKey"), pytest.param("rsa", "RSAKey", marks=pytest.mark.slow)],
)
def test_a_private_key_is_read_from_its_text(tmp_path, kind, cls):
    assert type(load_private_key(_key_text(tmp_path, kind))).__name__ == cls


def test_a_bad_key_is_refused_without_showing_it():
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\ncanary-not-a-key-Qx3\n-----END OPENSSH PRIVATE KEY-----\n"
    with pytest.raises(ConnectionException, match="not an unencrypted") as caught:
        load_private_key(text)
    assert "canary" not in str(caught.value)


def test_a_key_only_login_reaches_the_driver_hidden(tmp_path, monkeypatch):
    doc = set_path(default_doc(), ("credentials", "switches", "ssh_key"), {"env": "GF_TEST_SWITCH_KEY"})
    doc["credentials"]["switches"].pop("password")
    plan = plan_doc(doc)
    text = _key_text(tmp_path)
    monkeypatch.setenv("GF_TEST_SWITCH_KEY", text)
    access = access_mod.env_access(plan.intent, known_hosts=tmp_path / "known_hosts")
    assert access.password == ""
    key = access.optional_args["private_key"]
    assert isinstance(key, Hidden) and key.reveal() == text
    inventory = inventory_from_plan(plan)
    access_mod.apply(inventory, access)
    host = next(iter(inventory.hosts.values()))
    assert host.connection_options["napalm"].extras["optional_args"]["private_key"].reveal() == text
    dumped = json.dumps(inventory.dict(), default=str) + repr(access) + str(key)
    body = text.splitlines()[1]
    assert body not in dumped and "********" in dumped


def test_a_missing_key_variable_is_named(monkeypatch):
    doc = set_path(default_doc(), ("credentials", "switches", "ssh_key"), {"env": "GF_TEST_NO_SUCH_KEY"})
    monkeypatch.delenv("GF_TEST_NO_SUCH_KEY", raising=False)
    with pytest.raises(Exception, match="GF_TEST_NO_SUCH_KEY"):
        access_mod.env_access(plan_doc(doc).intent)
