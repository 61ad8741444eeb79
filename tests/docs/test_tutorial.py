"""The tutorial as a newcomer follows it: its intent (the page's one YAML block) is written to an empty folder
and every command the page shows runs there; the figures the page states are the ones the commands print."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from conftest import ROOT, run_in_process

PAGE = ROOT / "docs" / "tutorial.md"


def _intent() -> str:
    (block,) = re.findall(r"```yaml\n(.*?)```", PAGE.read_text(), re.S)
    return block


def test_the_tutorial_s_intent_plans_renders_verifies_and_exports_as_the_page_says(tmp_path: Path) -> None:
    (tmp_path / "fabric.yml").write_text(_intent())
    secrets = {"GPUFABRIC_SWITCH_PASSWORD": "choose-one", "GPUFABRIC_SALT_KEY": "00112233445566778899aabbccddeeff"}
    plan = run_in_process("gpufabric", "plan", "fabric.yml", "--json", cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr
    planes = json.loads(plan.stdout)["planes"]
    assert planes["compute"]["switches"] == {"leaf": 8, "spine": 2}
    assert planes["oob"]["switches"] == {"mgmt": 1}
    rendered = run_in_process("gpufabric", "render", "fabric.yml", "-o", "build", cwd=tmp_path, **secrets)
    assert rendered.returncode == 0, rendered.stderr
    assert len(list((tmp_path / "build").glob("*.yaml"))) == 11
    verified = run_in_process("gpufabric", "verify", "fabric.yml", "--configs", "build", cwd=tmp_path, **secrets)
    assert verified.returncode == 0 and "0 findings" in verified.stderr + verified.stdout, verified.stderr
    cables = list(
        csv.DictReader(io.StringIO(run_in_process("gpufabric", "export", "cabling", "fabric.yml", cwd=tmp_path).stdout))
    )
    by_plane = {p: sum(1 for c in cables if c["plane"] == p) for p in ("compute", "oob")}
    assert by_plane == {"compute": 16 + 32, "oob": 18}
    bom = list(
        csv.DictReader(io.StringIO(run_in_process("gpufabric", "export", "bom", "fabric.yml", cwd=tmp_path).stdout))
    )
    counts = {(r["plane"], r["item"]): int(r["quantity"]) for r in bom}
    assert counts[("compute", "400G module (server NIC)")] == 32
    assert counts[("compute", "800G module")] == 32
    assert counts[("compute", "800G module (breakout 2x400G)")] == 16
    slurm = run_in_process("gpufabric", "export", "slurm", "fabric.yml", cwd=tmp_path).stdout
    assert "Nodes=gpu[01-04]" in slurm and "Nodes=gpu[05-08]" in slurm


def test_the_mistake_the_page_describes_is_refused_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "fabric.yml").write_text(_intent().replace(", downlink_speed: 400G", ""))
    done = run_in_process("gpufabric", "plan", "fabric.yml", cwd=tmp_path)
    assert done.returncode == 2
    assert "downlink_speed to 400G" in done.stderr and "nothing was planned" in done.stderr
