"""Every command pays only for what it uses: `check` and `plan` never load the automation stack."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT

PROBE = """
import json, sys
from gpufabric.cli import main
sys.argv = ["gpufabric", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if "." not in m)), file=sys.stderr)
"""
AUTOMATION = {"napalm", "nornir", "nornir_napalm", "paramiko", "ciscoconfparse2", "jinja2", "ncclient", "netmiko"}


def _loaded(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=ROOT, check=False)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("command", [("check",), ("plan",), ("plan", "--json"), ("acceptance", "plan", "--json")])
def test_check_and_plan_never_load_the_automation_stack(command):
    assert _loaded(*command) & AUTOMATION == set()


@pytest.mark.parametrize("command", [("lab", "up", "--help"), ("lab", "down", "--help"), ("lab", "status", "--help")])
def test_the_lab_never_loads_the_automation_stack(command):
    """The lab's commands build namespaces and start daemons; they run dozens of times in a test run, and NAPALM
    with its every vendor driver is a third of a second each."""
    assert _loaded(*command) & AUTOMATION == set()


def test_version_loads_neither_the_schema_nor_a_command():
    loaded = _loaded("--version")
    assert "pydantic" not in loaded and "yaml" not in loaded
    assert loaded & AUTOMATION == set()


def test_a_command_that_pushes_does_load_it():
    """The probe can see a heavy import: `push --help` imports the push command, which needs Nornir."""
    assert "nornir" in _loaded("push", "--help")
