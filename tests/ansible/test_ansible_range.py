"""One range of ansible-core: gpufabric's `ansible` extra (and the test extra), the collection's
meta/runtime.yml, its execution environment and its sanity ignores (one tests/sanity/ignore-2.N.txt per
release, as ansible-test wants) admit the same releases, and those include the newest ansible-core for
every Python the package supports. ansible-builder (Ansible's own tool) reads the collection's Python
requirements from the built collection."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from importlib.metadata import version as installed_version
from pathlib import Path

import pytest
import yaml
from conftest import BIN, ROOT
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import gpufabric

COLLECTION = ROOT / "collection"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
MINORS = range(10, 40)  # the ansible-core 2.N releases the ranges are compared over

# The newest ansible-core for each Python the package declares (its classifiers), from
# `pip index versions ansible-core --python-version 3.N` (November 2026): 2.20 and later need 3.12.
NEWEST_FOR_PYTHON = {"3.11": "2.19", "3.12": "2.21", "3.13": "2.21"}


def _minors(spec: SpecifierSet) -> set[str]:
    """The 2.N releases a range admits whole: its first and its late patch releases alike."""
    admitted = {f"2.{n}" for n in MINORS if Version(f"2.{n}.0") in spec}
    assert admitted == {f"2.{n}" for n in MINORS if Version(f"2.{n}.99") in spec}, f"{spec} cuts a release in two"
    return admitted


def _core(requirements: list[str]) -> SpecifierSet:
    (core,) = [Requirement(r) for r in requirements if Requirement(r).name == "ansible-core"]
    return core.specifier


def _ranges() -> dict[str, set[str]]:
    extras = PROJECT["project"]["optional-dependencies"]
    runtime = yaml.safe_load((COLLECTION / "meta" / "runtime.yml").read_text())
    ee = yaml.safe_load((COLLECTION / "execution-environment.yml").read_text())
    ignores = {p.stem.removeprefix("ignore-") for p in (COLLECTION / "tests" / "sanity").glob("ignore-*.txt")}
    return {
        "the `ansible` extra": _minors(_core(extras["ansible"])),
        "the `test` extra": _minors(_core(extras["test"])),
        "meta/runtime.yml requires_ansible": _minors(SpecifierSet(runtime["requires_ansible"])),
        "execution-environment.yml ansible_core": _minors(_core([ee["dependencies"]["ansible_core"]["package_pip"]])),
        "tests/sanity/ignore-*.txt": ignores,
    }


def test_the_extra_the_collection_and_its_sanity_ignores_admit_the_same_releases():
    ranges = _ranges()
    first = ranges["the `ansible` extra"]
    assert first, "the extra admits no ansible-core release"
    assert {what: r for what, r in ranges.items() if r != first} == {}, f"the extra admits {sorted(first)}"


def test_the_sanity_ignores_say_the_same_for_every_release():
    texts = {p.name: p.read_text() for p in (COLLECTION / "tests" / "sanity").glob("ignore-*.txt")}
    assert len(set(texts.values())) == 1, sorted(texts)


def test_the_range_holds_the_newest_ansible_core_of_every_supported_python():
    classifiers = PROJECT["project"]["classifiers"]
    pythons = {c.rsplit(" :: ", 1)[1] for c in classifiers if c.startswith("Programming Language :: Python :: 3.")}
    assert pythons == set(NEWEST_FOR_PYTHON)
    assert Version("3.11") in SpecifierSet(PROJECT["project"]["requires-python"])
    admitted = _ranges()["the `ansible` extra"]
    assert set(NEWEST_FOR_PYTHON.values()) <= admitted
    assert "2.16" in admitted  # the oldest the roles declare (min_ansible_version)
    assert ".".join(installed_version("ansible-core").split(".")[:2]) in admitted  # what the tests run


def test_the_roles_declare_the_range_s_oldest_release():
    oldest = min(_ranges()["the `ansible` extra"], key=Version)
    for meta in sorted((ROOT / "roles").glob("*/meta/main.yml")):
        assert str(yaml.safe_load(meta.read_text())["galaxy_info"]["min_ansible_version"]) == oldest, meta


@pytest.mark.skipif(shutil.which("ansible-builder", path=str(BIN)) is None, reason="ansible-builder (the test extra)")
def test_ansible_builder_reads_the_gpufabric_the_built_collection_needs(tmp_path: Path):
    from scripts.build_collection import assemble

    assemble(tmp_path)
    done = subprocess.run(
        [str(BIN / "ansible-builder"), "introspect", "--sanitize", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    python = yaml.safe_load(done.stdout.split("\n", 1)[1])["python"]
    (line,) = python
    requirement, origin = line.split("#")
    assert origin.strip() == "from collection gpufabric.cluster"
    assert (
        Requirement(requirement).name == "gpufabric"
        and Version(gpufabric.__version__) in Requirement(requirement).specifier
    )


@pytest.mark.skipif(shutil.which("ansible-builder", path=str(BIN)) is None, reason="ansible-builder (the test extra)")
def test_the_execution_environment_is_one_ansible_builder_takes(tmp_path: Path):
    """`ansible-builder create` validates the definition (format 3) and writes the build context."""
    context = tmp_path / "context"
    done = subprocess.run(
        [str(BIN / "ansible-builder"), "create", "-f", "execution-environment.yml", "--context", str(context)],
        capture_output=True, text=True, check=False, cwd=COLLECTION,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    files = {p.name: p for p in context.rglob("*") if p.is_file()}
    assert "gpufabric>=" in files["requirements.txt"].read_text()
    assert yaml.safe_load(files["requirements.yml"].read_text())["collections"][0]["name"] == "gpufabric.cluster"
    containerfile = next(p for n, p in files.items() if n in ("Containerfile", "Dockerfile")).read_text()
    core = next(r for r in PROJECT["project"]["optional-dependencies"]["ansible"] if r.startswith("ansible-core"))
    assert f'ANSIBLE_INSTALL_REFS="{core} ansible-runner"' in containerfile
