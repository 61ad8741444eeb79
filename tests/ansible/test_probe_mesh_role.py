"""The probe_mesh role without a booted host: its unit, rendered from the role's own defaults, passes systemd's own
parser (`systemd-analyze verify`) with no unknown or invalid setting and runs `probe serve` with the plan's node;
the role's checks refuse a node or a path that would break the unit's command line; a play with it parses."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
import yaml
from conftest import run

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "probe_mesh"
BIN = Path(sys.executable).parent


def _unit(**settings: str) -> str:
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    values = {**defaults, "ansible_managed": "managed by Ansible", "inventory_hostname": "gpu01", **settings}
    # The defaults refer to each other as Ansible would resolve them: here only the node does.
    values["probe_mesh_node"] = jinja2.Template(str(values["probe_mesh_node"])).render(values)
    template = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return template.from_string((ROLE / "templates" / "probe-mesh.service.j2").read_text()).render(values)


def test_the_unit_passes_systemd_s_own_parser(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (Debian: systemd)")
    # ExecStart must name an executable file for verify: this interpreter stands in for the gpufabric command.
    text = _unit(probe_mesh_gpufabric=sys.executable)
    path = tmp_path / "gpufabric-probe-mesh.service"
    path.write_text(text)
    done = subprocess.run([analyze, "verify", str(path)], capture_output=True, text=True, timeout=60, check=False)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "Unknown" not in said and "Invalid" not in said and "Failed" not in said, said
    exec_start = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert exec_start == (
        f"ExecStart={sys.executable} probe serve --plan /etc/gpufabric/probes.json.gz --node gpu01 "
        "--listen 0.0.0.0:9111"
    )
    for hardening in ("DynamicUser=yes", "CapabilityBoundingSet=", "NoNewPrivileges=yes", "ProtectSystem=strict"):
        assert hardening in text.splitlines()
    # A unit with a setting systemd does not know is reported by the same parser: the check can fail.
    path.write_text(text.replace("NoNewPrivileges=yes", "NoNewPrivilege=yes"))
    done = subprocess.run([analyze, "verify", str(path)], capture_output=True, text=True, timeout=60, check=False)
    assert "Unknown key" in done.stdout + done.stderr


def test_the_role_refuses_what_would_break_the_unit_s_command_line():
    tasks = yaml.safe_load((ROLE / "tasks" / "main.yml").read_text())
    patterns = tasks[0]["ansible.builtin.assert"]["that"]
    import re

    node = re.search(r"match\('(.+?)'\)", patterns[0])
    assert node is not None
    for bad in ("gpu01 --listen 0.0.0.0:1", "gpu01;reboot", "", "-gpu01"):
        assert not re.match(node[1].replace("\\\\", "\\"), bad), bad
    assert re.match(node[1].replace("\\\\", "\\"), "gpu0001")


def test_a_play_with_the_role_parses(tmp_path):
    play = tmp_path / "probe-mesh.yml"
    play.write_text(
        yaml.safe_dump(
            [{"name": "Probe mesh", "hosts": "localhost", "gather_facts": False, "roles": [{"role": "probe_mesh"}]}]
        )
    )
    done = run(
        str(BIN / "ansible-playbook"), str(play), "--syntax-check", cwd=tmp_path,
        ANSIBLE_ROLES_PATH=str(ROOT / "roles"), ANSIBLE_NOCOLOR="1",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
