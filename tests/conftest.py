from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufabric.intent import load_intent_text
from gpufabric.plan import Plan, build_plan

ROOT = Path(__file__).resolve().parent.parent
INVENTORY = ROOT / "inventory"
EXAMPLES = sorted((INVENTORY / "examples").glob("*.yml"))
ALL_INTENTS = [INVENTORY / "fabric.yml", *EXAMPLES]
BIN = Path(sys.executable).parent
# containerlab's schema sits in ../shared beside a clone (CI has it); tests that need it say so when it is absent.
CLAB_SCHEMA = ROOT.parent / "shared" / "schemas" / "containerlab-topology.schema.json"
# The Network Operator's, nv-ipam's and SR-IOV's CRDs, also in ../shared (GPUFABRIC_SHARED names another folder).
K8S_CRDS = Path(os.environ.get("GPUFABRIC_SHARED", ROOT.parent / "shared")) / "schemas" / "k8s-network"
# SONiC's YANG models for CONFIG_DB (sonic-yang-models), in the same folder.
SONIC_YANG = Path(os.environ.get("GPUFABRIC_SHARED", ROOT.parent / "shared")) / "schemas" / "sonic-yang"


def default_doc() -> dict[str, Any]:
    return yaml.safe_load((INVENTORY / "fabric.yml").read_text())


def plan_doc(doc: dict[str, Any], name: str = "<test>") -> Plan:
    return build_plan(load_intent_text(yaml.safe_dump(doc, sort_keys=False), name))


def plan_text(text: str, name: str = "<test>") -> Plan:
    return build_plan(load_intent_text(text, name))


def set_path(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    """A copy of doc with `path` set to `value` (or removed when value is DELETE)."""
    out = copy.deepcopy(doc)
    node = out
    for part in path[:-1]:
        node = node[part]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


DELETE = object()

# Tiers: `lab` tests bring up namespaces, containers or the demo and need root; `slow` ones take
# seconds each (the 32k fabric, fuzzing). `scripts/test.sh --fast` runs neither; CI runs all.
LAB_MODULES = {
    "test_lab_fleet",
    "test_lab_growth",
    "test_lab_wiring",
    "test_lab_readme_sequence",
    "test_demo_e2e",
    "test_molecule",
}
SLOW_MODULES = {"test_fuzz_intents", "test_fuzz_designs"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module is not None else ""
        if module in LAB_MODULES:
            item.add_marker(pytest.mark.lab)
            item.add_marker(pytest.mark.root)
        if module == "test_molecule":
            item.add_marker(pytest.mark.molecule)
        if module in SLOW_MODULES or "32k" in item.nodeid or "28k" in item.nodeid:  # the largest designs
            item.add_marker(pytest.mark.slow)


# Every test renders with these planted secrets; the secret tests grep every output for them.
SWITCH_PASSWORD_CANARY = "canary-Switch-Pw-7e41"
SNMP_CANARY = "canary-Snmp-Community-0b9c"
SALT_KEY_CANARY = "canary-Salt-Key-5d02"
os.environ.setdefault("GPUFABRIC_SALT_KEY", SALT_KEY_CANARY)
os.environ.setdefault("GPUFABRIC_SWITCH_PASSWORD", SWITCH_PASSWORD_CANARY)
os.environ.setdefault("GPUFABRIC_SNMP_COMMUNITY", SNMP_CANARY)
# The tests' own vtysh commands (FRR's parser, the lab's running configs) keep no history in ~/.history_frr.
os.environ["VTYSH_HISTFILE"] = "/dev/null"


@pytest.fixture(autouse=True, scope="session")
def audit_log_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Pushes the tests run (in process or as commands) keep their audit trail in a temporary folder,
    never in the account's own (~/.local/state/gpufabric, or /var/log/gpufabric for root)."""
    before = os.environ.get("GPUFABRIC_AUDIT_LOG")
    os.environ["GPUFABRIC_AUDIT_LOG"] = str(tmp_path_factory.mktemp("audit") / "audit.jsonl")
    yield
    if before is None:
        os.environ.pop("GPUFABRIC_AUDIT_LOG", None)
    else:
        os.environ["GPUFABRIC_AUDIT_LOG"] = before


def cli_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("GPUFABRIC_DEBUG", None)
    env.update(extra)
    return env


def run(
    *args: str, cwd: Path = ROOT, check: bool = False, text: bool = True, **env: str
) -> subprocess.CompletedProcess:
    """Run one of the project's commands as a user would, with this venv's tools first on PATH."""
    return subprocess.run(list(args), capture_output=True, text=text, cwd=cwd, env=cli_env(**env), check=check)


@pytest.fixture(scope="session")
def default_plan() -> Plan:
    return plan_doc(default_doc(), "inventory/fabric.yml")
