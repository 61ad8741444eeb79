"""`gpufabric diff REV:PATH ...` reads the intent from git's object store, never from a file of that
name in the working tree (a change could add one and make its own removal of a spine read "no
change"), bounded by the blob's size before a byte of it is read, and decoded as an intent file is.

Each test makes a git repository in its temporary folder and runs the command there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import INVENTORY, cli_env

from gpufabric.inputs import InputError, MiB, git_blob
from gpufabric.yaml_lines import MAX_BYTES

FABRIC = (INVENTORY / "fabric.yml").read_text()
ONE_SPINE_LESS = FABRIC.replace(
    "spine: {platform: frr, model: lab-400g-32, ports: 32, port_speed: 400G, count: 2}",
    "spine: {platform: frr, model: lab-400g-32, ports: 32, port_speed: 400G, count: 1}",
)


def git(repo: Path, *args: str) -> str:
    env = cli_env(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid", GIT_COMMITTER_NAME="t",
                  GIT_COMMITTER_EMAIL="t@example.invalid", GIT_CONFIG_GLOBAL="/dev/null")  # fmt: skip
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True).stdout


def commit(repo: Path, files: dict[str, str | bytes]) -> None:
    for name, content in files.items():
        path = repo / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    git(repo, "add", "--", *files)
    git(repo, "commit", "-q", "-m", "change")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    commit(tmp_path, {"fabric.yml": FABRIC})
    return tmp_path


def diff(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpufabric", "diff", *args],
        cwd=repo,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_file_named_like_the_old_side_does_not_stand_in_for_gits_blob(repo):
    assert ONE_SPINE_LESS != FABRIC
    # The change removes a spine, and adds a file named as the CI gate names the old side, holding the new.
    commit(repo, {"fabric.yml": ONE_SPINE_LESS, "HEAD~1:fabric.yml": ONE_SPINE_LESS})
    done = diff(repo, "HEAD~1:fabric.yml", "fabric.yml")
    assert done.returncode == 5, done.stdout + done.stderr
    assert "switches removed: 1 (cmp-spine2)" in done.stdout and "no change" not in done.stdout


@pytest.mark.slow
def test_a_file_whose_name_has_a_colon_is_named_as_a_path(repo):
    (repo / "HEAD:fabric.yml").write_text(ONE_SPINE_LESS)
    done = diff(repo, "./HEAD:fabric.yml", "fabric.yml")
    assert done.returncode == 5 and "switches added: 1 (cmp-spine2)" in done.stdout  # the file, read as a file
    # Named as REV:PATH it is git's; when git has no such revision the error says how to name the file.
    (repo / "v2:fabric.yml").write_text(ONE_SPINE_LESS)
    done = diff(repo, "v2:fabric.yml", "fabric.yml")
    assert done.returncode == 2 and "error: v2:fabric.yml" in done.stderr
    assert "to compare the file named v2:fabric.yml instead, write ./v2:fabric.yml" in " ".join(done.stderr.split())


@pytest.mark.parametrize(
    ("encoded", "hint"),
    [
        (FABRIC.replace("# ", "# caf\u00e9 ", 1).encode("latin-1"), "save it as UTF-8"),
        pytest.param(FABRIC.encode("utf-16"), "save it as UTF-8 (it looks like UTF-16)", marks=pytest.mark.slow),
    ],
    ids=["latin-1", "utf-16"],
)
def test_a_blob_that_is_not_utf8_is_a_located_error(repo, encoded, hint):
    commit(repo, {"old.yml": encoded})
    done = diff(repo, "HEAD:old.yml", "fabric.yml")
    assert done.returncode == 2, done.stderr
    assert "error: HEAD:old.yml:1:" in done.stderr and "an intent file is not UTF-8 text" in done.stderr
    assert hint in done.stderr and "internal error" not in done.stderr


@pytest.mark.slow
def test_a_blob_over_the_bound_is_refused_from_its_size(repo):
    commit(repo, {"big.yml": b"#" * (MAX_BYTES + 1)})
    done = diff(repo, "HEAD:big.yml", "fabric.yml")
    assert done.returncode == 2
    assert f"is {MAX_BYTES + 1:,} bytes in git, more than an intent file can be (4 MiB)" in done.stderr


def test_a_blob_over_the_bound_is_never_read(repo, monkeypatch):
    """Its size is asked; its content never is (a 1 GiB blob would be read whole before any bound)."""
    commit(repo, {"big.yml": b"#" * (4 * MiB + 1)})
    ran: list[list[str]] = []
    real_run = subprocess.run

    def recording_run(args, *rest, **kwargs):
        ran.append([str(a) for a in args])
        return real_run(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "run", recording_run)
    monkeypatch.chdir(repo)
    from gpufabric.config.compare import load_side

    with pytest.raises(InputError, match="bytes in git, more than an intent file can be"):
        load_side("HEAD:big.yml")
    assert ran, "git was not asked at all"
    assert all(cmd[:2] == ["git", "cat-file"] and cmd[2] in {"-t", "-s"} for cmd in ran), ran
    ran.clear()
    with pytest.raises(InputError, match="more than an intent file can be"):
        git_blob("HEAD", "big.yml", what="an intent file", max_bytes=4 * MiB, cwd=repo)
    assert not any("blob" in cmd for cmd in ran), ran
