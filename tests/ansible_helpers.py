"""Run a throwaway playbook on local hosts, for tests of a role's templates and checks."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from conftest import run

BIN = Path(sys.executable).parent


def run_play(folder: Path, hosts: dict[str, dict[str, Any]], play: list[dict[str, Any]]) -> None:
    """`play` on `hosts` (name -> host vars) with the virtualenv's ansible-playbook, from `folder` (which
    gets the inventory, the playbook and Ansible's home); fails the test with the output's end unless it
    succeeds."""
    (folder / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (folder / "play.yml").write_text(yaml.safe_dump(play))
    done = run(
        str(BIN / "ansible-playbook"), "-i", str(folder / "inventory.yml"), str(folder / "play.yml"),
        cwd=folder, ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=str(folder / "ansible"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
