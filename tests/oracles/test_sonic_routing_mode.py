"""The bgp container's start, as SONiC's own script does it, on the files gpufabric renders for a SONiC switch.

SONiC's bgp container runs `dockers/docker-fpm-frr/docker_init.sh` (sonic-buildimage) at every start: by CONFIG_DB's
`DEVICE_METADATA|localhost docker_routing_config_mode` it keeps or deletes `/etc/frr/frr.conf`, writes
`/etc/frr/vtysh.conf` and may append zebra's FPM lines. The script's own text is run here: its
`write_default_zebra_config` function and its branch over the mode, cut from the file and pointed at a temporary
folder instead of `/etc/frr` (the rest of the script starts daemons and touches the host). The tree is the one
tests/sonic_ts_scripts.py finds (`GPUFABRIC_SONIC_BUILDIMAGE`); without docker_init.sh there the tests are
skipped with the reason. Shown:

- In the mode the rendered CONFIG_DB names, the script keeps gpufabric's frr.conf byte for byte (it already
  holds the FPM lines, so nothing is appended) and turns the integrated configuration on.
- FRR's own `frr-reload.py --reload` (the installed FRR's), with that folder as its configuration folder and the
  file as the running configuration, then reloads gpufabric's frr.conf deleting and adding nothing; a frr.conf
  without the FPM lines would have them deleted from zebra.
- In `split` mode the script deletes frr.conf and turns the integrated configuration off, and frr-reload refuses.
- The container's supervisord template (`frr/supervisord/supervisord.conf.common.j2`) starts `vtysh -b`, which
  loads frr.conf, for the rendered mode.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from tests.conftest import INVENTORY
from tests.sonic_ts_scripts import BUILDIMAGE

EXAMPLE = INVENTORY / "examples" / "sonic.yml"
DOCKER_INIT = "dockers/docker-fpm-frr/docker_init.sh"
SUPERVISORD = "dockers/docker-fpm-frr/frr/supervisord/supervisord.conf.common.j2"
FRR_RELOAD = Path("/usr/lib/frr/frr-reload.py")
LEAF = "cmp-leaf1a"
FPM_LINES = ("no fpm use-next-hop-groups", "fpm address 127.0.0.1")


def _tree_file(path: str) -> Path:
    found = BUILDIMAGE / path
    if not found.is_file():
        pytest.skip(f"{path} is not in {BUILDIMAGE}: GPUFABRIC_SONIC_BUILDIMAGE names a sonic-buildimage tree")
    return found


def _frr_tools() -> None:
    if shutil.which("vtysh") is None or not FRR_RELOAD.is_file():
        if os.environ.get("CI"):
            pytest.fail("CI installs frr; vtysh and frr-reload.py should be there")
        pytest.skip("FRR (vtysh, frr-reload.py) is not installed")


@pytest.fixture(scope="module")
def rendered() -> dict[str, tuple[dict[str, str], str]]:
    """(DEVICE_METADATA|localhost, frr.conf) of every SONiC switch of the example."""
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


def _init_part(text: str) -> str:
    """docker_init.sh's FPM function and its branch over CONFIG_TYPE, `/etc/frr` replaced by "$FRR_DIR"."""
    function = re.search(r"^write_default_zebra_config\(\)\n\{\n.*?^\}\n", text, re.S | re.M)
    branch = re.search(r'^if \[ -z "\$CONFIG_TYPE" \].*?^fi\n', text, re.S | re.M)
    assert function and branch, "docker_init.sh no longer has the function and branch this test runs"
    return (function[0] + branch[0]).replace("/etc/frr", '"$FRR_DIR"')


def _start(folder: Path, mode: str, frr_conf: str) -> dict[str, str]:
    """Run the start script's part in `folder` holding frr.conf; the files left there afterwards."""
    etc = folder / "etc-frr"
    etc.mkdir(parents=True)
    (etc / "frr.conf").write_text(frr_conf)
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    # The modes that generate FRR's files from CONFIG_DB call sonic-cfggen; the modes shown here must not.
    (bin_dir / "sonic-cfggen").write_text("#!/bin/sh\necho 'sonic-cfggen called' >&2\nexit 97\n")
    (bin_dir / "sonic-cfggen").chmod(0o755)
    script = folder / "init-part.sh"
    script.write_text(_init_part(_tree_file(DOCKER_INIT).read_text()))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CONFIG_TYPE": mode, "FRR_DIR": str(etc)}
    done = subprocess.run(["bash", "-e", str(script)], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return {p.name: p.read_text() for p in etc.iterdir()}


# vtysh for frr-reload.py: marking a file (`-m -f`) is the real vtysh's; `show running-config` answers with the
# running file; `configure` plus commands (deletions) and `-f` (additions) are recorded; `write` succeeds.
_VTYSH = r"""
import os, subprocess, sys
from pathlib import Path
args = sys.argv[1:]
while args[:1] in (["--config_dir"], ["--vty_socket"]):
    args = args[2:]
if args[:2] == ["-m", "-f"]:
    sys.exit(subprocess.run(["vtysh", "-m", "-f", args[2]]).returncode)
if args[:1] == ["-f"]:
    with open(os.environ["RELOAD_ADDED"], "a") as fh:
        fh.write(Path(args[1]).read_text())
    sys.exit(0)
commands = args[1::2]
if commands and commands[0].startswith("show running-config"):
    sys.stdout.write(Path(os.environ["RELOAD_RUNNING"]).read_text())
elif commands[:1] == ["configure"] and len(commands) > 1:
    with open(os.environ["RELOAD_DELETED"], "a") as fh:
        fh.write(" / ".join(commands[1:]) + "\n")
elif commands not in (["configure"], ["write"]):
    sys.exit(f"vtysh: not in this stand-in: {args}")
"""


def _reload(folder: Path, etc: dict[str, str], candidate: str) -> tuple[int, str, str, str]:
    """FRR's frr-reload.py --reload of `candidate`, the folder left by the start script as its configuration
    folder and its frr.conf as the running configuration: (exit code, output, deleted, added)."""
    confdir, bin_dir, rundir = folder / "confdir", folder / "reload-bin", folder / "run"
    for d in (confdir, bin_dir, rundir):
        d.mkdir(parents=True)
    for name, text in etc.items():
        (confdir / name).write_text(text)
    (bin_dir / "vtysh").write_text(f"#!{sys.executable}\n{_VTYSH}")
    (bin_dir / "vtysh").chmod(0o755)
    new = folder / "candidate.frr.conf"
    new.write_text(candidate)
    running, deleted, added = folder / "running.conf", folder / "deleted", folder / "added"
    running.write_text(etc.get("frr.conf", ""))
    deleted.write_text("")
    added.write_text("")
    env = {**os.environ, "RELOAD_RUNNING": str(running), "RELOAD_DELETED": str(deleted), "RELOAD_ADDED": str(added)}
    argv = [sys.executable, str(FRR_RELOAD), "--reload", "--stdout", "--confdir", str(confdir)]
    argv += ["--bindir", str(bin_dir), "--rundir", str(rundir), str(new)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    return done.returncode, done.stdout + done.stderr, deleted.read_text(), added.read_text()


def test_the_start_script_keeps_the_rendered_frr_conf(
    rendered: dict[str, tuple[dict[str, str], str]], tmp_path: Path
) -> None:
    for name, (meta, frr_conf) in rendered.items():
        left = _start(tmp_path / name, meta["docker_routing_config_mode"], frr_conf)
        assert left.get("frr.conf") == frr_conf, f"{name}: the start script changed or deleted frr.conf"
        assert left["vtysh.conf"].strip() == "service integrated-vtysh-config", name
        assert set(left) == {"frr.conf", "vtysh.conf"}, name


def test_frr_reload_after_the_start_changes_nothing(
    rendered: dict[str, tuple[dict[str, str], str]], tmp_path: Path
) -> None:
    _frr_tools()
    meta, frr_conf = rendered[LEAF]
    etc = _start(tmp_path / "start", meta["docker_routing_config_mode"], frr_conf)
    code, out, deleted, added = _reload(tmp_path / "reload", etc, frr_conf)
    assert code == 0, out
    assert (deleted, added) == ("", "")


def test_without_the_fpm_lines_a_reload_deletes_what_the_start_added(
    rendered: dict[str, tuple[dict[str, str], str]], tmp_path: Path
) -> None:
    _frr_tools()
    meta, frr_conf = rendered[LEAF]
    bare = "".join(line for line in frr_conf.splitlines(keepends=True) if line.rstrip() not in FPM_LINES)
    assert bare != frr_conf
    etc = _start(tmp_path / "start", meta["docker_routing_config_mode"], bare)
    assert etc["frr.conf"].splitlines()[-2:] == list(FPM_LINES)  # appended at the start
    code, out, deleted, added = _reload(tmp_path / "reload", etc, bare)
    assert code == 0, out
    assert sorted(deleted.splitlines()) == ["fpm use-next-hop-groups", "no fpm address 127.0.0.1"]
    assert added == ""


def test_in_split_mode_frr_conf_goes_and_frr_reload_refuses(
    rendered: dict[str, tuple[dict[str, str], str]], tmp_path: Path
) -> None:
    _frr_tools()
    _meta, frr_conf = rendered[LEAF]
    etc = _start(tmp_path / "start", "split", frr_conf)
    assert "frr.conf" not in etc
    assert etc["vtysh.conf"].strip() == "no service integrated-vtysh-config"
    code, out, _deleted, _added = _reload(tmp_path / "reload", etc, frr_conf)
    assert code == 1
    assert "'service integrated-vtysh-config' is not configured" in out


def test_the_container_loads_frr_conf_at_start(rendered: dict[str, tuple[dict[str, str], str]]) -> None:
    template = _tree_file(SUPERVISORD).read_text()
    env = jinja2.Environment(trim_blocks=True)  # as sonic-cfggen renders templates
    for name, (meta, _frr_conf) in rendered.items():
        text = env.from_string(template).render(DEVICE_METADATA={"localhost": meta})
        program = re.search(r"^\[program:vtysh_b\]\ncommand=(.*)$", text, re.M)
        assert program and program[1] == "/usr/bin/vtysh -b", f"{name}: no vtysh -b in the bgp container"
