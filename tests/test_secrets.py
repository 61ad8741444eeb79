"""Secrets in rendered configs: hashed or referenced, never in clear; hashes are real SHA-crypt."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import INVENTORY, SNMP_CANARY, SWITCH_PASSWORD_CANARY, run
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufabric.config.secrets import SecretUnavailableError, resolve_tokens
from gpufabric.config.shacrypt import ALPHABET, salt_for, sha_crypt

EXAMPLES = [INVENTORY / "fabric.yml", *sorted((INVENTORY / "examples").glob("*.yml"))]


@pytest.mark.parametrize("algorithm", ["sha512", "sha256"])
@given(
    password=st.text(min_size=1, max_size=80).filter(lambda s: not {"\x00", "\n", "\r"} & set(s)),
    salt=st.text(ALPHABET, min_size=1, max_size=16),
)
@settings(max_examples=25, deadline=None)
def test_sha_crypt_equals_openssl(algorithm, password, salt):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    flag = "-6" if algorithm == "sha512" else "-5"
    ref = subprocess.run(
        ["openssl", "passwd", flag, "-salt", salt, "-stdin"], input=password.encode(), capture_output=True, check=True
    )
    assert sha_crypt(password, salt, algorithm) == ref.stdout.decode().strip()


def test_salt_is_stable_and_differs_by_fabric_and_user():
    assert salt_for("lab", "admin") == salt_for("lab", "admin")
    assert len({salt_for("lab", "admin"), salt_for("lab2", "admin"), salt_for("lab", "ops")}) == 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_no_rendered_file_holds_a_planted_secret(path, tmp_path):
    done = run(
        "nornir",
        "render",
        str(path),
        "-o",
        str(tmp_path),
        GPUFABRIC_SWITCH_PASSWORD=SWITCH_PASSWORD_CANARY,
        GPUFABRIC_SNMP_COMMUNITY=SNMP_CANARY,
    )
    assert done.returncode == 0, done.stderr
    files = list(tmp_path.iterdir())
    assert files
    for f in files:
        text = f.read_text()
        assert SWITCH_PASSWORD_CANARY not in text and SNMP_CANARY not in text, f.name
    assert SWITCH_PASSWORD_CANARY not in done.stdout + done.stderr


def test_the_rendered_hash_is_the_password_hash(tmp_path):
    run("nornir", "render", "-o", str(tmp_path), GPUFABRIC_SWITCH_PASSWORD=SWITCH_PASSWORD_CANARY, check=True)
    line = next(x for x in (tmp_path / "cmp-spine1.system.yaml").read_text().splitlines() if "hashed_password" in x)
    hashed = line.split("'")[1]
    salt = hashed.split("$")[2]
    assert hashed == sha_crypt(SWITCH_PASSWORD_CANARY, salt, "sha512")
    assert hashed != sha_crypt("another password", salt, "sha512")


def test_tokens_resolve_only_in_memory():
    text = "snmp-server community @secret:env:COMM@ ro\nusername a secret sha512 @hash:sha512:abcdefgh:vault:pw@\n"
    out = resolve_tokens(text, {"COMM": "s3cret", "vault:pw": "hunter2"})
    assert "community s3cret ro" in out
    assert f"secret sha512 {sha_crypt('hunter2', 'abcdefgh', 'sha512')}" in out
    with pytest.raises(SecretUnavailableError, match="COMM"):
        resolve_tokens(text, {"vault:pw": "x"})
    # A vault entry is never taken from an environment variable that happens to share its name.
    with pytest.raises(SecretUnavailableError, match="vault entry pw"):
        resolve_tokens(text, {"COMM": "s3cret", "pw": "from-the-environment"})
