"""Secrets in rendered configs: hashed or referenced, never in clear; hashes are real SHA-crypt."""

from __future__ import annotations

import shutil
import subprocess
import warnings

import pytest
from conftest import ALL_INTENTS, INVENTORY, SNMP_CANARY, SWITCH_PASSWORD_CANARY, run_in_process, sized
from hypothesis import example, given, settings
from hypothesis import strategies as st

from gpufabric.config.secrets import SecretUnavailableError, resolve_tokens
from gpufabric.config.shacrypt import ALPHABET, salt_for, sha_crypt

EXAMPLES = ALL_INTENTS  # the huge designs aside (conftest.HUGE_DESIGNS)


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


@given(password=st.text(min_size=1, max_size=40).filter(lambda s: "\x00" not in s), rounds=st.integers(1000, 20000))
@settings(max_examples=10, deadline=None)
@example(password="pw", rounds=5000)
def test_sha_crypt_with_rounds_equals_the_c_library(password, rounds):
    """glibc's crypt(3) (through Python's deprecated `crypt` module, while it exists) reads rounds=."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        crypt = pytest.importorskip("crypt")
    ours = sha_crypt(password, "abcdefgh", "sha512", rounds)
    # 5000 is the default: written without rounds=, as crypt(3) writes a setting that names none.
    setting = "$6$abcdefgh" if rounds == 5000 else f"$6$rounds={rounds}$abcdefgh"
    assert ours == crypt.crypt(password, setting)
    assert ours.startswith(f"$6$rounds={rounds}$") or rounds == 5000


def test_salt_is_stable_and_differs_by_fabric_and_user():
    assert salt_for("lab", "admin") == salt_for("lab", "admin")
    assert len({salt_for("lab", "admin"), salt_for("lab2", "admin"), salt_for("lab", "ops")}) == 3


def test_a_keyed_salt_is_stable_but_not_computable_from_the_names():
    keyed = salt_for("lab", "admin", key="k1")
    assert keyed == salt_for("lab", "admin", key="k1")
    assert keyed not in {salt_for("lab", "admin"), salt_for("lab", "admin", key="k2"), salt_for("lab", "ops", key="k1")}


def test_without_a_salt_key_the_plan_warns(tmp_path):
    text = (INVENTORY / "fabric.yml").read_text()
    assert "salt_key:" in text
    bare = tmp_path / "fabric.yml"
    bare.write_text("\n".join(line for line in text.splitlines() if "salt_key:" not in line))
    done = run_in_process("gpufabric", "plan", str(bare), "--strict")
    assert done.returncode == 3 and "no salt_key" in done.stderr
    assert run_in_process("gpufabric", "plan", "--strict").returncode == 0


@pytest.mark.parametrize("path", sized(EXAMPLES), ids=lambda p: p.stem)
def test_no_rendered_file_holds_a_planted_secret(path, cli_rendering):
    """`nornir render` with the planted secrets (the run's one rendering of the example: conftest)."""
    done = cli_rendering(path)
    assert done.returncode == 0, done.stderr
    files = list(done.folder.iterdir())
    assert files
    for f in files:
        text = f.read_text()
        assert SWITCH_PASSWORD_CANARY not in text and SNMP_CANARY not in text, f.name
    assert SWITCH_PASSWORD_CANARY not in done.stdout + done.stderr


@pytest.mark.slow
def test_the_rendered_hash_is_the_password_hash(tmp_path):
    def rendered_hash(folder, salt_key):
        run_in_process(
            "nornir", "render", "-o", str(folder), GPUFABRIC_SWITCH_PASSWORD=SWITCH_PASSWORD_CANARY,
            GPUFABRIC_SALT_KEY=salt_key, check=True,
        )  # fmt: skip
        text = (folder / "cmp-spine1.system.yaml").read_text()
        return next(x for x in text.splitlines() if "hashed_password" in x).split("'")[1]

    hashed = rendered_hash(tmp_path / "a", "key-one")
    _, kind, rounds, salt, _ = hashed.split("$")
    assert (kind, rounds) == ("6", "rounds=100000")  # FRR hosts: Linux crypt(3), rounds raised
    assert salt == salt_for("lab", "admin", key="key-one")
    assert hashed == sha_crypt(SWITCH_PASSWORD_CANARY, salt, "sha512", 100_000)
    assert hashed != sha_crypt("another password", salt, "sha512", 100_000)
    assert rendered_hash(tmp_path / "b", "key-one") == hashed  # stable: a second push changes nothing
    assert rendered_hash(tmp_path / "c", "key-two").split("$")[3] != salt  # the key decides the salt


def test_tokens_resolve_only_in_memory():
    text = "snmp-server community @secret:env:COMM@ ro\nusername a secret sha512 @hash:sha512:5000:abcdefgh:vault:pw@\n"
    out = resolve_tokens(text, {"COMM": "s3cret", "vault:pw": "hunter2"})
    assert "community s3cret ro" in out
    assert f"secret sha512 {sha_crypt('hunter2', 'abcdefgh', 'sha512')}" in out
    with pytest.raises(SecretUnavailableError, match="COMM"):
        resolve_tokens(text, {"vault:pw": "x"})
    # A vault entry is never taken from an environment variable that happens to share its name.
    with pytest.raises(SecretUnavailableError, match="vault entry pw"):
        resolve_tokens(text, {"COMM": "s3cret", "pw": "from-the-environment"})
