"""The first run of scripts/demo.sh says what takes its minutes (apt, the virtualenv, the host image),
one line per step, instead of staying silent; a later run, with everything in place, says nothing.

apt-get, id and python3 are test doubles here (shell stubs on PATH that record their arguments):
the real ones would install packages and build a virtualenv for minutes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

from gpufabric.demo import flow
from gpufabric.demo.runner import Runner
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

STUBS = {
    # root, as the quick start runs
    "id": "#!/bin/sh\necho 0\n",
    # apt-get: records each call
    "apt-get": '#!/bin/sh\necho "apt-get $*" >>"$CALLS"\n',
    # python3 -m venv DIR makes DIR/bin/python, itself a stub that records what pip and compileall were asked
    "python3": (
        "#!/bin/sh\n"
        'if [ "$1 $2" = "-m venv" ] && [ "$3" != "--help" ]; then\n'
        '  mkdir -p "$3/bin"; printf \'#!/bin/sh\\necho "venv-python $*" >>"$CALLS"\\n\' >"$3/bin/python"\n'
        '  chmod +x "$3/bin/python"\n'
        "fi\n"
    ),
}


@pytest.fixture
def stubbed(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in STUBS.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    work = tmp_path / "clone"
    work.mkdir()
    shutil.copy(ROOT / "pyproject.toml", work)
    shutil.copy(ROOT / "scripts" / "lib.sh", work)
    # Only the stubs and the shell's basic tools (no real apt-get, no command named like a package).
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("sha256sum", "cut", "cat", "mkdir", "chmod"):
        found = shutil.which(tool)
        if found:
            (tools / tool).symlink_to(found)
    env = {"PATH": f"{bin_dir}:{tools}", "CALLS": str(tmp_path / "calls"), "HOME": str(tmp_path)}
    return work, env


def _run(work: Path, env: dict[str, str], script: str) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash") or "/bin/bash"
    return subprocess.run(
        [bash, "-c", f". ./lib.sh\n{script}"], cwd=work, env=env, capture_output=True, text=True, check=True
    )


def test_the_first_run_says_each_long_step_and_the_next_run_says_nothing(stubbed):
    work, env = stubbed
    script = "want_apt frr-missing-cmd frr frr-pythontools\ninstall_wanted\nensure_venv .venv test\n"
    first = _run(work, env, script)
    said = first.stderr.splitlines()
    assert said == [
        "reading apt's package lists (apt-get update) ...",
        "installing Debian packages: frr frr-pythontools (a minute or two the first time) ...",
        "making the virtualenv .venv: pip installs gpufabric[test] (a few minutes the first time) ...",
        "compiling .venv's Python modules (on every core, once) ...",
        "the virtualenv .venv is ready",
    ]
    calls = Path(env["CALLS"]).read_text()
    assert "apt-get install -y -qq --no-install-recommends frr frr-pythontools" in calls
    assert "venv-python -m pip install -q --disable-pip-version-check --no-compile -e .[test]" in calls
    # Everything in place: the stubbed command exists now, the virtualenv is stamped.
    (Path(env["PATH"].split(":")[0]) / "frr-missing-cmd").write_text("#!/bin/sh\n")
    (Path(env["PATH"].split(":")[0]) / "frr-missing-cmd").chmod(0o755)
    again = _run(work, env, script)
    assert again.stderr == ""


def test_a_changed_pyproject_says_the_virtualenv_is_updated(stubbed):
    work, env = stubbed
    _run(work, env, "ensure_venv .venv test")
    with (work / "pyproject.toml").open("a") as f:
        f.write("\n# changed\n")
    said = _run(work, env, "ensure_venv .venv test").stderr.splitlines()
    assert (
        said[0] == "updating the virtualenv .venv: gpufabric[test] (pyproject.toml, the extras or the tree changed) ..."
    )


def test_a_virtualenv_installed_from_another_clone_is_installed_again(stubbed):
    """The install is editable: a virtualenv whose gpufabric points at another clone runs that clone's code, or
    none once that clone is removed, whatever its stamp says of pyproject.toml."""
    work, env = stubbed
    _run(work, env, "ensure_venv .venv test")
    other = work.parent / "other-clone"
    other.mkdir()
    for name in ("pyproject.toml", "lib.sh"):
        shutil.copy(work / name, other)
    (other / ".venv").symlink_to(work / ".venv")
    said = _run(other, env, "ensure_venv .venv test").stderr.splitlines()
    assert (
        said[0] == "updating the virtualenv .venv: gpufabric[test] (pyproject.toml, the extras or the tree changed) ..."
    )
    assert _run(other, env, "ensure_venv .venv test").stderr == ""


def test_the_demo_says_the_host_image_is_built_before_lab_up(monkeypatch, tmp_path):
    """lab up's own output goes to its log file: the demo says, before the step, why it takes a minute."""
    said: list[str] = []

    class StopHereError(Exception):
        pass

    def run(name: str, args: list[str], *, check: bool = True) -> None:
        said.append(f"run {name}")
        raise StopHereError

    runner = Runner(ROOT, tmp_path, said.append)
    monkeypatch.setattr(runner, "run", run)
    monkeypatch.setattr(flow.fleet, "image_built", lambda: False)
    loaded = load_intent(None)
    with pytest.raises(StopHereError):
        flow.bring_up(runner, build_plan(loaded), Path(loaded.file), tmp_path, flow.Report("lab"))
    assert said[0].startswith("lab up builds the host image first (debootstrap: about a minute, once; into ")
    assert said[1] == "run lab up"
    said.clear()
    monkeypatch.setattr(flow.fleet, "image_built", lambda: True)
    with pytest.raises(StopHereError):
        flow.bring_up(runner, build_plan(loaded), Path(loaded.file), tmp_path, flow.Report("lab"))
    assert said == ["run lab up"]
