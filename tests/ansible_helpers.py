"""Run a throwaway playbook on local hosts, for tests of a role's templates and checks."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from conftest import run

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[1]
# The project's strategy (ansible.cfg selects it for site.yml), for a play run from a folder of its own, where
# ansible.cfg is not read: each host's modules run in one persistent interpreter (Mitogen), where Ansible's
# `linear` starts a Python per task and loop item (0.4-0.6 s of CPU each). Rendering host_network's files for
# the hosts of tests/ansible/test_host_planes.py took 156 s of CPU with `linear` and 29 s with this, every
# file byte the same.
PERSISTENT = {"ANSIBLE_STRATEGY_PLUGINS": str(ROOT / "plugins" / "strategy"), "ANSIBLE_STRATEGY": "gpufabric_mitogen"}


def run_play(folder: Path, hosts: dict[str, dict[str, Any]], play: list[dict[str, Any]]) -> None:
    """`play` on `hosts` (name -> host vars) with the virtualenv's ansible-playbook, from `folder` (which
    gets the inventory, the playbook and Ansible's home); fails the test with the output's end unless it
    succeeds."""
    (folder / "inventory.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (folder / "play.yml").write_text(yaml.safe_dump(play))
    done = run(
        str(BIN / "ansible-playbook"), "-i", str(folder / "inventory.yml"), str(folder / "play.yml"),
        cwd=folder, ANSIBLE_NOCOLOR="1", ANSIBLE_HOME=str(folder / "ansible"), **PERSISTENT,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
