"""The routing configuration mode a SONiC switch is rendered with, and the frr.conf lines that mode needs: one
integrated frr.conf (`split-unified`), holding the FPM lines the bgp container's start adds in that mode, taken by
FRR's own parser. tests/oracles/test_sonic_routing_mode.py runs SONiC's start script itself on these files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from tests.conftest import INVENTORY

EXAMPLE = INVENTORY / "examples" / "sonic.yml"


@pytest.fixture(scope="module")
def rendered() -> dict[str, tuple[dict[str, str], str]]:
    plan = build_plan(load_intent(EXAMPLE))
    index = LinkIndex(plan)
    out = {}
    for d in plan.devices():
        if d.platform == "sonic":
            files = render_device(plan, d, index).files
            meta = json.loads(files[f"{d.name}.config_db.json"])["DEVICE_METADATA"]["localhost"]
            out[d.name] = (meta, files[f"{d.name}.frr.conf"])
    assert len(out) == 10
    return out


def test_one_integrated_frr_conf_with_the_fpm_lines(rendered: dict[str, tuple[dict[str, str], str]]) -> None:
    for name, (meta, frr_conf) in rendered.items():
        assert meta["docker_routing_config_mode"] == "split-unified", name
        lines = frr_conf.splitlines()
        assert "service integrated-vtysh-config" in lines, name
        assert "no service integrated-vtysh-config" not in lines, name
        at = lines.index("no fpm use-next-hop-groups")
        assert lines[at + 1] == "fpm address 127.0.0.1", name
        assert at < next(i for i, line in enumerate(lines) if line.startswith("router bgp ")), name


def test_frr_parser_takes_the_frr_conf(rendered: dict[str, tuple[dict[str, str], str]], tmp_path: Path) -> None:
    if shutil.which("vtysh") is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs frr; vtysh should be on PATH")
        pytest.skip("vtysh (frr) is not installed")
    for name, (_meta, frr_conf) in rendered.items():
        conf = tmp_path / f"{name}.frr.conf"
        conf.write_text(frr_conf)
        done = subprocess.run(["vtysh", "-C", "-f", str(conf)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{name}: {done.stdout}{done.stderr}"
