"""Where the scripts keep what takes minutes to make and any clone may use (scripts/lib.sh `machine_cache`):
Nautobot's virtualenv with its migrated database, ansible-test's pinned virtualenvs. A fresh clone (CI's) finds
them there instead of making them again. `id` is a stub here, so both the root and the user branch run."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASH = shutil.which("bash") or "/bin/bash"


def _run(tmp_path: Path, uid: int, script: str, **env: str) -> str:
    stubs = tmp_path / f"stubs-{uid}"
    stubs.mkdir(exist_ok=True)
    stub = stubs / "id"
    stub.write_text(f'#!/bin/sh\n[ "$1" = -u ] && echo {uid}\n')
    stub.chmod(0o755)
    environ = {"PATH": f"{stubs}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), **env}
    done = subprocess.run(
        [BASH, "-c", script], cwd=ROOT, env=environ, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout.strip()


def _cache(tmp_path: Path, uid: int, **env: str) -> str:
    return _run(tmp_path, uid, ". scripts/lib.sh; machine_cache", **env)


def test_as_root_it_is_beside_the_host_image(tmp_path):
    assert _cache(tmp_path, 0) == "/var/cache/gpufabric"


def test_as_a_user_it_is_in_the_users_cache(tmp_path):
    assert _cache(tmp_path, 1000) == f"{tmp_path}/home/.cache/gpufabric"


def test_as_a_user_it_follows_xdg_cache_home(tmp_path):
    assert _cache(tmp_path, 1000, XDG_CACHE_HOME=str(tmp_path / "xdg")) == f"{tmp_path}/xdg/gpufabric"


@pytest.mark.parametrize("uid", [0, 1000])
def test_gpufabric_cache_names_another_folder(tmp_path, uid):
    assert _cache(tmp_path, uid, GPUFABRIC_CACHE=str(tmp_path / "shared")) == f"{tmp_path}/shared"


def test_the_source_of_truths_server_keeps_nautobot_there_one_folder_a_version(tmp_path):
    version = re.search(r"^NAUTOBOT_VERSION=(\S+)$", (ROOT / "scripts/sot_server.sh").read_text(), re.M)
    assert version is not None
    where = _run(tmp_path, 0, "bash scripts/sot_server.sh where", GPUFABRIC_CACHE=str(tmp_path / "shared"))
    assert where == f"{tmp_path}/shared/nautobot-{version[1]}"
    assert _run(tmp_path, 0, "bash scripts/sot_server.sh where") == f"/var/cache/gpufabric/nautobot-{version[1]}"
