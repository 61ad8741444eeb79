"""gpufabric installed from its wheel, not from this checkout, renders every example byte for byte as the checkout does.

The templates and the default fabric are package data: a wheel that missed one would render nothing (or
fail) the moment it left the repository. The test builds the wheel, installs it (with its dependencies,
from the package index pip is configured with) into a fresh virtualenv outside the checkout, and runs the
installed `gpufabric` from an empty folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "inventory" / "examples").glob("*.yml"))


def _run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in args], check=False, cwd=cwd, capture_output=True, text=True, env=os.environ.copy()
    )
    assert done.returncode == 0, f"{args}: {done.stderr[-2000:]}"
    return done


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The `gpufabric` command of a virtualenv holding only the wheel and its dependencies."""
    tmp = tmp_path_factory.mktemp("installed")
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", tmp / "dist", ROOT, cwd=tmp)
    (wheel,) = (tmp / "dist").glob("gpufabric-*.whl")
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".j2")}
    in_checkout = {f"gpufabric/{p.relative_to(ROOT)}" for p in (ROOT / "templates").rglob("*.j2")}
    assert shipped == in_checkout and shipped
    venv.create(tmp / "venv", with_pip=True)
    _run(tmp / "venv" / "bin" / "python", "-m", "pip", "install", "-q", wheel, cwd=tmp)
    return tmp / "venv" / "bin" / "gpufabric"


def test_the_listed_packages_are_every_package_of_the_checkout():
    """pyproject.toml lists its packages (the templates tree is mapped into the package, which discovery
    does not follow): a package added to the tree and not to the list would be missing from the wheel."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    in_tree = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("gpufabric", "nornir_tasks", "napalm_frr", "napalm_cumulus")
        for init in (ROOT / top).rglob("__init__.py")
    }
    templates = {f"gpufabric.templates.{d.name}" for d in (ROOT / "templates").iterdir() if d.is_dir()}
    assert listed == in_tree | templates | {"gpufabric.templates"}


@pytest.mark.slow
@pytest.mark.parametrize("example", [None, *EXAMPLES], ids=lambda e: "default" if e is None else e.stem)
def test_the_installed_wheel_renders_as_the_checkout_does(installed, example, tmp_path):
    work = tmp_path / "elsewhere"  # no inventory/ here: the default fabric is the packaged one
    work.mkdir()
    source = [] if example is None else [example]
    editable = Path(sys.executable).parent / "gpufabric"
    for name, command in (("installed", installed), ("editable", editable)):
        _run(command, "render", *source, "-o", tmp_path / name / "configs", "-j", "1", cwd=work)
        _run(command, "export", "plan", *source, "-o", tmp_path / name / "plan.json", cwd=work)
    installed_files = _files(tmp_path / "installed")
    assert installed_files == _files(tmp_path / "editable")
    assert any(name.startswith("configs/") for name in installed_files)
