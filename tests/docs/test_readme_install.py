"""The README as a newcomer meets it: on the package index's page (its long description), where every link
must be absolute, and in a new shell in a fresh clone, where the install block runs as written; and the
install page's wheel, built and installed elsewhere, reports the same release. gpufabric is not published:
no page tells anyone to `pip install gpufabric` as if it were."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT

import gpufabric

README = ROOT / "README.md"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
BLOB = PROJECT["urls"]["Source"] + "/blob/main/"
PAGES = [README, ROOT / "docs" / "install.md", ROOT / "docs" / "tutorial.md", ROOT / "collection" / "README.md"]


def _links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", text)


def _blocks(text: str) -> list[str]:
    return re.findall(r"```[a-z]*\n(.*?)```", text, re.S)


def test_the_readme_is_the_long_description_and_its_links_are_absolute():
    assert PROJECT["readme"] == "README.md"
    links = _links(README.read_text())
    assert links and [link for link in links if not link.startswith("https://")] == []


def test_the_readme_s_links_into_the_repository_name_files_that_exist():
    inside = [link.removeprefix(BLOB).split("#")[0] for link in _links(README.read_text()) if link.startswith(BLOB)]
    assert len(inside) > 30
    assert [path for path in inside if not (ROOT / path).exists()] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_runs_pip_install_gpufabric_from_the_index(page: Path):
    lines = [line.split("#")[0] for block in _blocks(page.read_text()) for line in block.splitlines()]
    assert [line for line in lines if re.search(r"pip install\s+['\"]?gpufabric\b", line)] == []


def _new_shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A new bash with nothing exported but PATH, HOME and LANG (pip's own configuration is the machine's)."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root"), "LANG": "C.UTF-8"}
    return subprocess.run(
        ["bash", "-ec", command], cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
        check=False, timeout=900,
    )  # fmt: skip


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A clone of this checkout's committed tree, as `git clone` gives it: no tags."""
    where = tmp_path_factory.mktemp("readme") / "gpufabric"
    subprocess.run(["git", "clone", "-q", "--no-tags", str(ROOT), str(where)], check=True)
    return where


@pytest.mark.slow
def test_the_readme_install_block_runs_as_written_in_a_fresh_clone(clone: Path):
    (block,) = [b for b in _blocks(README.read_text()) if "pip install ." in b]
    done = _new_shell(block, clone)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == f"gpufabric, version {gpufabric.__version__}"
    assert f"# gpufabric, version {gpufabric.__version__}" in block  # what the README says it prints


@pytest.mark.slow
def test_the_install_page_s_wheel_installs_and_reports_the_release(clone: Path, tmp_path: Path):
    page = (ROOT / "docs" / "install.md").read_text()
    build, install = (b for b in _blocks(page) if "-m build" in b or "dist/gpufabric-*.whl" in b)
    home = f"export HOME={tmp_path}\n"  # the page's ~/ virtualenvs, in a home of the test's own
    done = _new_shell(home + build, clone)
    assert done.returncode == 0, done.stderr[-2000:]
    version = gpufabric.__version__
    assert sorted(p.name for p in (clone / "dist").iterdir()) == [
        f"gpufabric-{version}-py3-none-any.whl", f"gpufabric-{version}.tar.gz",
    ]  # fmt: skip
    first = install.splitlines()[0]  # the wheel alone; the next line adds an extra from the index
    done = _new_shell(f"{home}{first}\n~/gpufabric/bin/gpufabric --version", clone)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == f"gpufabric, version {version}"
