"""gpufabric installed from its wheel, not from this checkout: it renders every example byte for byte as the
checkout does, carries its license, project URLs and the version the tree names (gpufabric.__version__, from
a clone with no tags too), pins no unrelated library,
and its `ansible` extra is what `--vault-file` needs.

The templates and the default fabric are package data: a wheel that missed one would render nothing (or
fail) the moment it left the repository. The tests build the wheel, install it (with its dependencies,
from the package index pip is configured with) into a fresh virtualenv outside the checkout, and run the
installed `gpufabric` from an empty folder.
"""

from __future__ import annotations

import email
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
import yaml
from conftest import HUGE_DESIGNS

import gpufabric

ROOT = Path(__file__).resolve().parents[2]
# The huge designs aside (conftest.HUGE_DESIGNS): one wheel run over every example, not minutes over one.
EXAMPLES = [p for p in sorted((ROOT / "inventory" / "examples").glob("*.yml")) if p.stem not in HUGE_DESIGNS]


TOPS = ("gpufabric", "nornir_tasks", "napalm_frr", "napalm_cumulus", *(f"napalm_gpufabric_{o}" for o in
        ("cumulus", "eos", "frr", "nxos", "sonic")))  # fmt: skip


def _run(*args: str | Path, cwd: Path, code: int = 0, **env: str) -> subprocess.CompletedProcess[str]:
    # Never the checkout on PYTHONPATH: a build leaves gpufabric.egg-info in it, which pip in the fresh
    # virtualenv would take for gpufabric installed already (and install only its dependencies).
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [str(a) for a in args], check=False, cwd=cwd, capture_output=True, text=True, env={**clean, **env}
    )
    assert done.returncode == code, f"{args}: {done.stderr[-2000:]}"
    return done


# What a build writes into its source folder (setuptools' build/ and egg-info), and what is not the source.
NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", ".cache", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
)


def _copy_of_checkout(into: Path) -> Path:
    """The checkout as it stands (uncommitted changes included), copied: pip's builds write build/ and
    gpufabric.egg-info into the folder they build, and the tests leave the checkout as they found it."""
    shutil.copytree(ROOT, into, ignore=NOT_SOURCE)
    return into


def _wheel(source: Path, into: Path) -> Path:
    """The wheel pip builds from `source` (setuptools fetched into its build environment)."""
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", into, source, cwd=into.parent)
    (wheel,) = into.glob("gpufabric-*.whl")
    return wheel


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(z.read(name))


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The `gpufabric` command of a virtualenv holding only the wheel and its dependencies."""
    tmp = tmp_path_factory.mktemp("installed")
    wheel = _wheel(_copy_of_checkout(tmp / "source"), tmp / "dist")
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".j2")}
    in_checkout = {f"gpufabric/{p.relative_to(ROOT)}" for p in (ROOT / "templates").rglob("*.j2")}
    assert shipped == in_checkout and shipped
    venv.create(tmp / "venv", with_pip=True)
    # --no-compile: pip would compile every module of every dependency; the commands compile what they import.
    _run(tmp / "venv" / "bin" / "python", "-m", "pip", "install", "-q", "--no-compile", wheel, cwd=tmp)
    return tmp / "venv" / "bin" / "gpufabric"


def test_the_listed_packages_are_every_package_of_the_checkout():
    """pyproject.toml lists its packages (the templates tree is mapped into the package, which discovery
    does not follow): a package added to the tree and not to the list would be missing from the wheel."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    in_tree = {
        ".".join(init.parent.relative_to(ROOT).parts) for top in TOPS for init in (ROOT / top).rglob("__init__.py")
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
        this = {"PYTHONPATH": str(ROOT)} if name == "editable" else {}  # this checkout's code, whatever the venv's
        _run(command, "render", *source, "-o", tmp_path / name / "configs", "-j", "1", cwd=work, **this)
        _run(command, "export", "plan", *source, "-o", tmp_path / name / "plan.json", cwd=work, **this)
    installed_files = _files(tmp_path / "installed")
    assert installed_files == _files(tmp_path / "editable")
    assert any(name.startswith("configs/") for name in installed_files)


@pytest.mark.slow
def test_the_wheel_carries_the_license_urls_and_no_exact_pin(installed):
    (wheel,) = (installed.parents[2] / "dist").glob("gpufabric-*.whl")
    with zipfile.ZipFile(wheel) as z:
        (license_file,) = [n for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        assert z.read(license_file) == (ROOT / "LICENSE").read_bytes()
    meta = _metadata(wheel)
    assert meta["License-Expression"] == "Apache-2.0"
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert set(urls) >= {"Homepage", "Documentation", "Source", "Issues", "Changelog"}
    assert all(u.startswith("https://") for u in urls.values())
    assert "Topic :: System :: Networking" in meta.get_all("Classifier")
    runtime = [r for r in meta.get_all("Requires-Dist") if "extra ==" not in r]
    assert runtime and not [r for r in runtime if re.search(r"==|===|~=", r)], runtime
    assert not [r for r in runtime if r.lower().startswith(("ciscoconfparse", "hier-config", "hypothesis"))]
    ansible = [r for r in meta.get_all("Requires-Dist") if 'extra == "ansible"' in r]
    assert any(r.startswith("ansible-core") for r in ansible), ansible
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?(\.dev\d+)?(\+[\w.]+)?", meta["Version"]), meta["Version"]


@pytest.mark.slow
def test_a_clone_without_tags_and_an_unpacked_archive_build_the_release_the_tree_names(tmp_path):
    """A clone carries no tags: the version comes from the tree (gpufabric.__version__), never 0.0.x."""
    clone = tmp_path / "clone"
    _run("git", "clone", "-q", "--no-tags", ROOT, clone, cwd=tmp_path)
    assert _run("git", "tag", cwd=clone).stdout == ""
    assert _metadata(_wheel(clone, tmp_path / "untagged"))["Version"] == gpufabric.__version__
    archive = tmp_path / "tree.tar"
    _run("git", "archive", "-o", archive, "HEAD", cwd=clone)
    unpacked = tmp_path / "unpacked"
    with tarfile.open(archive) as tar:
        # The `data` filter (no links out, no devices) where this Python has it (3.11.4+ with the backport; 3.12).
        if hasattr(tarfile, "data_filter"):
            tar.extractall(unpacked, filter="data")
        else:
            tar.extractall(unpacked)  # our own archive, just made
    assert _metadata(_wheel(unpacked, tmp_path / "nogit"))["Version"] == gpufabric.__version__


@pytest.mark.slow
def test_the_runtime_leaves_room_for_hier_config_3(installed, tmp_path):
    """No exact pin of an unrelated library: a team's newer hier-config resolves beside gpufabric."""
    (wheel,) = (installed.parents[2] / "dist").glob("gpufabric-*.whl")
    # The installed virtualenv's pip, resolving as into an empty one (--ignore-installed); a dry run changes nothing.
    done = _run(installed.parent / "python", "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q",
                "--report", "-", wheel, "hier-config>=3", cwd=tmp_path)  # fmt: skip
    chosen = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.loads(done.stdout)["install"]}
    assert chosen["hier-config"].split(".")[0] == "3" and "gpufabric" in chosen, chosen
    assert "ciscoconfparse2" not in chosen


@pytest.mark.slow
def test_the_ansible_extra_is_what_the_vault_needs(installed, tmp_path):
    """Without the extra, `--vault-file` says which extra to install (exit 2, not an internal error); with
    `pip install 'gpufabric[ansible]'` the same command opens the vault."""
    (wheel,) = (installed.parents[2] / "dist").glob("gpufabric-*.whl")
    bin_dir = installed.parent
    doc = yaml.safe_load((ROOT / "inventory" / "fabric.yml").read_text())
    doc["credentials"]["switches"]["password"] = {"vault": "switch_password"}
    intent = tmp_path / "fabric.yml"
    intent.write_text(yaml.safe_dump(doc))
    secret, vault = tmp_path / "pass", tmp_path / "vault.yml"
    secret.write_text("correct horse\n")
    vault.write_text("switch_password: vault-canary-Zq81\n")
    export = [installed, "export", "ztp", intent, "--vault-file", vault, "--vault-password-file", secret]
    env = {"GPUFABRIC_SALT_KEY": "salt-for-the-wheel-test"}
    plain = _run(*export, "-o", tmp_path / "plain", cwd=tmp_path, code=2, **env)
    assert "pip install 'gpufabric[ansible]'" in plain.stderr and "internal error" not in plain.stderr
    _run(bin_dir / "python", "-m", "pip", "install", "-q", "--no-compile", f"{wheel}[ansible]", cwd=tmp_path)
    _run(bin_dir / "ansible-vault", "encrypt", "--vault-password-file", secret, vault, cwd=tmp_path)
    assert "vault-canary" not in vault.read_text()
    done = _run(*export, "-o", tmp_path / "ztp", cwd=tmp_path, **env)
    assert "wrote" in done.stderr
    shutil.rmtree(tmp_path / "ztp")  # it holds the switch password: gone with the test


@pytest.mark.slow
def test_the_installed_wheel_registers_its_napalm_names_and_nornir_plugins(installed, tmp_path):
    probe = (
        "import napalm\n"
        "from nornir.core.plugins.connections import ConnectionPluginRegister\n"
        "from nornir.core.plugins.inventory import InventoryPluginRegister\n"
        "ConnectionPluginRegister.auto_register()\n"
        "InventoryPluginRegister.auto_register()\n"
        "print(ConnectionPluginRegister.available['gpufabric_napalm'].__name__)\n"
        "print(InventoryPluginRegister.available['GpufabricInventory'].__name__)\n"
        "for os_ in ('eos', 'nxos', 'sonic', 'frr', 'cumulus'):\n"
        "    print(napalm.get_network_driver('gpufabric_' + os_).__module__)\n"
    )
    done = _run(installed.parent / "python", "-c", probe, cwd=tmp_path)
    assert done.stdout.split() == [
        "RevealingNapalm", "GpufabricInventory",
        *(f"gpufabric.nos.{o}.driver" for o in ("eos", "nxos", "sonic", "frr", "cumulus")),
    ]  # fmt: skip


@pytest.mark.slow
def test_an_editable_install_reports_the_release_the_tree_names(tmp_path):
    """`pip install -e .` (what scripts/test.sh and CI's fresh clone do): metadata and `--version` agree."""
    venv.create(tmp_path / "venv", with_pip=True)
    python = tmp_path / "venv" / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", "--no-deps", "-e", _copy_of_checkout(tmp_path / "source"), cwd=tmp_path)
    probe = "import gpufabric, importlib.metadata as m; print(gpufabric.__version__, m.version('gpufabric'))"
    done = _run(python, "-c", probe, cwd=tmp_path)
    assert done.stdout.split() == [gpufabric.__version__, gpufabric.__version__]
