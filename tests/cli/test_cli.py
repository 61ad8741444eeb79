"""The command line: exit codes, help, the embedded default, generated docs."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import INVENTORY, default_doc, run, run_in_process, set_path


@pytest.mark.parametrize("prog", ["gpufabric", pytest.param("nornir", marks=pytest.mark.slow)])
def test_both_commands_are_the_same_cli(prog):
    done = run(prog, "--help")
    assert done.returncode == 0
    for command in ("check", "plan", "export", "docs", "schema"):
        assert command in done.stdout


def test_plan_table_on_the_default_fabric():
    done = run_in_process("gpufabric", "plan")
    assert done.returncode == 0
    assert "compute" in done.stdout and "rail-optimized" in done.stdout and "16 switches" in done.stdout


def test_embedded_default_when_no_inventory(tmp_path):
    done = run_in_process("gpufabric", "plan", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["source"] == "<embedded default fabric>"
    assert doc["totals"]["switches"] == 16


def test_embedded_default_is_the_inventory_file():
    from importlib import resources

    embedded = resources.files("gpufabric.data").joinpath("fabric.yml").read_text()
    assert embedded == (INVENTORY / "fabric.yml").read_text()


def test_strict_exits_3_on_warnings(tmp_path):
    doc = set_path(default_doc(), ("planes", "compute", "routing", "ecmp"), 1)
    f = tmp_path / "f.yml"
    f.write_text(yaml.safe_dump(doc))
    assert run_in_process("gpufabric", "plan", str(f)).returncode == 0
    strict = run_in_process("gpufabric", "plan", str(f), "--strict")
    assert strict.returncode == 3
    assert "ECMP width 1 is below the 2 uplinks" in strict.stderr


def test_usage_errors_exit_2():
    done = run_in_process("gpufabric", "export", "nope")
    assert done.returncode == 2 and "Invalid value" in done.stderr
    done = run_in_process("gpufabric", "export", "containerlab", "--image", "junos=x")
    assert done.returncode == 2 and "PLATFORM=IMAGE" in done.stderr


def test_missing_file_exit_2():
    done = run_in_process("gpufabric", "plan", "does-not-exist.yml")
    assert done.returncode == 2 and "does-not-exist.yml: (top level): no such file" in done.stderr


def test_docs_are_generated_from_the_schema():
    done = run_in_process("gpufabric", "docs", "-o", "docs/intent.md", "--check")
    assert done.returncode == 0, "docs/intent.md is stale: run `gpufabric docs -o docs/intent.md`"


def test_schema_is_json_schema():
    doc = json.loads(run_in_process("gpufabric", "schema").stdout)
    assert doc["title"] == "Intent" and "planes" in doc["properties"]
