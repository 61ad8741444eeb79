"""The floors of pyproject.toml's import-linter contracts hold, and the linter would see a breach."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
PACKAGES = ("gpufabric", "nornir_tasks", "napalm_frr", "napalm_cumulus", *(f"napalm_gpufabric_{o}" for o in
            ("cumulus", "eos", "frr", "nxos", "sonic")))  # fmt: skip


def _lint(where: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(where))
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=where, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _contracts() -> list[dict]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_every_contract_is_kept():
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_the_floors_put_the_registry_at_the_bottom_and_the_cli_and_oses_on_top():
    (floors,) = [c for c in _contracts() if c["type"] == "layers"]
    layers = [set(layer.replace(":", "|").replace(" ", "").split("|")) for layer in floors["layers"]]
    at = {module: depth for depth, layer in enumerate(layers) for module in layer}
    assert at["gpufabric.cli"] == at["gpufabric.nos"]  # side by side at the top
    assert at["gpufabric.cli"] < at["gpufabric.push"] == at["gpufabric.validate"] < at["gpufabric.fleet"]
    assert at["gpufabric.fleet"] < at["gpufabric.drivers"] < at["gpufabric.config"] < at["gpufabric.platforms"]
    assert max(at[m] for m in at if not m.startswith("gpufabric.platforms")) > at["gpufabric.platforms"]
    assert all(at[m] > at["gpufabric.platforms"] for m in ("gpufabric.errors", "gpufabric.files", "gpufabric.inputs"))


def test_no_contract_hides_an_import():
    assert all("ignore_imports" not in contract for contract in _contracts())


def test_an_import_up_the_floors_breaks_the_contract(tmp_path):
    """Mutation check: the plan importing the command line is reported, naming both."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    model = tmp_path / "gpufabric" / "plan" / "model.py"
    model.write_text(model.read_text() + "\nimport gpufabric.cli.plan_cmd  # an import up the floors\n")
    done = _lint(tmp_path)
    assert done.returncode == 1
    assert "gpufabric.plan is not allowed to import gpufabric.cli" in done.stdout
