"""One version, written once (gpufabric.__version__): what a build from a clone with no tags reports, what
`gpufabric --version` prints, the Ansible collection's version and the gpufabric it requires, and
CHANGELOG.md's newest release all name it; a release tag that names another is refused."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import yaml
from conftest import ROOT, run_in_process
from packaging.requirements import Requirement
from packaging.version import Version

import gpufabric

RELEASE_CHECK = ROOT / "scripts" / "release_check.py"


def _newest_release(changelog: str) -> str:
    return re.findall(r"^## (\d+\.\d+\.\d+)\s*$", changelog, re.M)[0]


def test_the_version_is_a_release_not_a_placeholder():
    version = Version(gpufabric.__version__)
    assert str(version) == gpufabric.__version__ and not version.is_devrelease and version.local is None
    assert version >= Version("0.1.0")  # never the 0.0.x a tagless clone gave


def test_the_package_collection_and_changelogs_name_one_release():
    galaxy = yaml.safe_load((ROOT / "collection" / "galaxy.yml").read_text())
    assert str(galaxy["version"]) == gpufabric.__version__
    assert _newest_release((ROOT / "CHANGELOG.md").read_text()) == gpufabric.__version__
    assert _newest_release((ROOT / "collection" / "CHANGELOG.md").read_text()) == gpufabric.__version__


def test_the_collection_requires_the_gpufabric_it_is_released_with():
    """ansible-builder reads collection/requirements.txt (tests/ansible/test_ansible_range.py shows it):
    this release of gpufabric and its bug fixes, not the next minor release."""
    lines = [
        ln for ln in (ROOT / "collection" / "requirements.txt").read_text().splitlines() if ln.split("#")[0].strip()
    ]
    (line,) = [ln for ln in lines if ln.startswith("gpufabric")]
    spec = Requirement(line).specifier
    version = Version(gpufabric.__version__)
    assert version in spec
    assert Version(f"{version.major}.{version.minor}.{version.micro + 1}") in spec
    assert Version(f"{version.major}.{version.minor + 1}.0") not in spec
    ee = yaml.safe_load((ROOT / "collection" / "execution-environment.yml").read_text())
    (collection,) = ee["dependencies"]["galaxy"]["collections"]
    assert (collection["name"], str(collection["version"])) == ("gpufabric.cluster", gpufabric.__version__)


def test_the_build_reads_the_version_from_the_package_and_not_from_git():
    """A clone carries no tags: setuptools-scm made every build from one 0.0.1.devN (tests/cli/
    test_installed_wheel.py builds a tagless clone)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "gpufabric.__version__"}
    assert not [r for r in project["build-system"]["requires"] if r.startswith("setuptools-scm")]
    assert "setuptools_scm" not in project["tool"]


def test_version_prints_the_release():
    done = run_in_process("gpufabric", "--version")
    assert done.returncode == 0 and done.stdout == f"gpufabric, version {gpufabric.__version__}\n"


def _release_check(tag: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, RELEASE_CHECK, tag], capture_output=True, text=True, check=False)


def test_a_release_tag_must_name_the_version():
    assert _release_check(f"v{gpufabric.__version__}").returncode == 0
    for tag in ("v9.9.9", gpufabric.__version__, f"v{gpufabric.__version__}rc1"):
        done = _release_check(tag)
        assert done.returncode == 2, tag
        assert (
            f"the tag {tag!r} says" in done.stderr and f"gpufabric.__version__ '{gpufabric.__version__}'" in done.stderr
        )


def test_a_release_whose_collection_or_changelog_lags_is_refused(tmp_path):
    """The check reads a tree: one with the collection, or the changelog, still at the previous release."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import release_check
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    for folder in ("gpufabric", "collection"):
        (tmp_path / folder).mkdir()
    (tmp_path / "gpufabric" / "__init__.py").write_text('__version__ = "0.2.0"\n')
    (tmp_path / "collection" / "galaxy.yml").write_text("version: 0.1.0\n")
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n\n## 0.1.0\n")
    assert release_check.disagreements("v0.2.0", tmp_path) == [
        "collection/galaxy.yml's version says '0.1.0', gpufabric.__version__ '0.2.0'",
        "CHANGELOG.md's newest release says '0.1.0', gpufabric.__version__ '0.2.0'",
    ]
    (tmp_path / "collection" / "galaxy.yml").write_text("version: 0.2.0\n")
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n\n## 0.2.0\n\n## 0.1.0\n")
    assert release_check.disagreements("v0.2.0", tmp_path) == []
