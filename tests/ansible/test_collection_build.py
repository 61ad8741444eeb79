"""The Ansible collection gpufabric.cluster, built by scripts/build_collection.py and installed with
ansible-galaxy, used from a project folder outside the clone by fully qualified names only.

What this shows without hosts: the tarball holds the roles, playbooks and plugins and nothing of the
Python package; kubernetes.core is its declared dependency; the roles' own plugins moved to plugins/ and
every use of the filters is qualified; the inventory plugin lists exactly the plan under
`plugin: gpufabric.cluster.gpufabric`; `ansible-playbook gpufabric.cluster.site` resolves every role from
the collection and targets the planned hosts. tests/molecule/test_molecule.py (scenario `collection`)
runs it on booted hosts; scripts/collection_sanity.sh runs ansible-test sanity on it.
"""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import pytest
import yaml
from conftest import INVENTORY, ROOT, run

import gpufabric

pytestmark = pytest.mark.slow  # ansible-galaxy build and install, then a few ansible runs: seconds

ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks").is_dir())
APART_FROM_SITE = {"probe_mesh"}
FILTERS = ("gpufabric_differences", "gpufabric_ib_ports", "gpufabric_ib_pkey_indexes")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, Path]:
    """The collection assembled, built and installed into a collections path of the test's own, and a
    project folder elsewhere with an inventory file naming the plugin by its qualified name."""
    base = tmp_path_factory.mktemp("collection")
    done = run(
        "python", str(ROOT / "scripts" / "build_collection.py"), "--out", str(base / "build"),
        "--install", str(base / "collections"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    tree, tarball, where = (Path(line) for line in done.stdout.splitlines()[-3:])
    project = base / "project"
    (project / "inventory").mkdir(parents=True)
    (project / "inventory" / "fabric.yml").write_text((INVENTORY / "fabric.yml").read_text())
    (project / "inventory" / "gpufabric.yml").write_text("plugin: gpufabric.cluster.gpufabric\nintent: fabric.yml\n")
    # Only the installed collection (and the `ansible` package's, for kubernetes.core): not the clone's ansible.cfg.
    (project / "ansible.cfg").write_text(f"[defaults]\ncollections_path = {base / 'collections'}\n")
    return {"tree": tree, "tarball": tarball, "installed": where, "project": project}


def _ansible(installed: dict[str, Path], *args: str):
    project = installed["project"]
    return run(*args, cwd=project, ANSIBLE_CONFIG=str(project / "ansible.cfg"), ANSIBLE_NOCOLOR="1")


def test_the_tarball_holds_the_ansible_content_and_nothing_else(installed):
    assert installed["tarball"].name == f"gpufabric-cluster-{gpufabric.__version__}.tar.gz"
    with tarfile.open(installed["tarball"]) as tar:
        names = set(tar.getnames())
        manifest = json.load(tar.extractfile("MANIFEST.json"))["collection_info"]
    assert (manifest["namespace"], manifest["name"]) == ("gpufabric", "cluster")
    assert manifest["dependencies"] == {"kubernetes.core": ">=3.0.0,<7.0.0"}
    assert manifest["license"] == ["Apache-2.0"]
    for path in (
        "meta/runtime.yml", "README.md", "CHANGELOG.md", "tests/sanity/ignore-2.19.txt", "requirements.txt",
        "execution-environment.yml",
        "playbooks/site.yml", "playbooks/validate.yml", "plugins/inventory/gpufabric.py",
        "plugins/strategy/gpufabric_mitogen.py", "plugins/modules/gpufabric_host_baseline.py",
        "plugins/filter/read_back.py", "plugins/filter/ib_ports.py",
        *(f"roles/{role}/tasks/main.yml" for role in ROLES),
    ):  # fmt: skip
        assert path in names, path
    # A role in a collection loads no plugins of its own: none is left behind in a role.
    assert not [n for n in names if re.search(r"^roles/[^/]+/(library|filter_plugins)(/|$)", n)]
    # Only Ansible content: nothing of the Python package, the tests or the docs, no bytecode.
    assert {n.split("/")[0] for n in names} == {
        "MANIFEST.json", "FILES.json", "meta", "README.md", "CHANGELOG.md", "tests", "playbooks",
        "plugins", "roles", "requirements.txt", "execution-environment.yml",
    } | ({"LICENSE"} if (ROOT / "LICENSE").is_file() else set())  # fmt: skip
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    requires = yaml.safe_load((installed["installed"] / "meta" / "runtime.yml").read_text())["requires_ansible"]
    assert requires.startswith(">=2.16")  # the whole range: tests/ansible/test_ansible_range.py


def test_every_use_of_the_filters_is_qualified(installed):
    """Jinja finds a collection's filters only by their qualified names: the repository's short uses are all
    rewritten, and the rewritten tree holds as many uses as the repository."""
    short = re.compile(r"\|\s*(" + "|".join(FILTERS) + r")\b")
    qualified = re.compile(r"\|\s*gpufabric\.cluster\.(" + "|".join(FILTERS) + r")\b")

    def uses(root: Path, pattern: re.Pattern[str]) -> int:
        files = [p for d in ("roles", "playbooks") for p in (root / d).rglob("*") if p.suffix in (".yml", ".j2")]
        return sum(len(pattern.findall(p.read_text())) for p in files)

    in_repo = uses(ROOT, short)
    assert in_repo >= 4  # host_network's read-back, validate.yml, ib_host's two
    assert uses(installed["installed"], short) == 0
    assert uses(installed["installed"], qualified) == in_repo


def test_the_inventory_plugin_lists_the_plan_under_its_qualified_name(installed, default_plan):
    done = _ansible(installed, "ansible-inventory", "-i", "inventory/gpufabric.yml", "--graph")
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    listed = {ln.split("--")[-1] for ln in done.stdout.splitlines() if "--" in ln and "@" not in ln}
    assert listed == {d.name for d in default_plan.devices()} | {s.name for s in default_plan.servers}
    host = json.loads(
        _ansible(installed, "ansible-inventory", "-i", "inventory/gpufabric.yml", "--host", "gpu01").stdout
    )
    assert host["gpufabric_nics"][0]["mtu"] == 9000


def test_an_inventory_naming_another_plugin_is_refused(installed):
    (installed["project"] / "inventory" / "other.gpufabric.yml").write_text("plugin: gpufabric.cluster.nope\n")
    try:
        done = _ansible(installed, "ansible-inventory", "-i", "inventory/other.gpufabric.yml", "--graph")
    finally:
        (installed["project"] / "inventory" / "other.gpufabric.yml").unlink()
    assert "gpu01" not in done.stdout
    assert "gpufabric.cluster.nope" in done.stderr


def test_site_runs_from_the_collection_with_every_role_qualified(installed):
    done = _ansible(
        installed, "ansible-playbook", "-i", "inventory/gpufabric.yml", "gpufabric.cluster.site", "--list-tasks"
    )
    assert done.returncode == 0, done.stderr
    assert "/ansible_collections/gpufabric/cluster/playbooks/site.yml" in done.stdout
    roles = set(re.findall(r"^\s+([\w.]+) : ", done.stdout, re.M))
    # Every role of the bring-up and the read-back, found in the collection (host_baseline only reads back);
    # the probe mesh's role is the operator's choice, in a play of their own (its README), not site.yml's.
    assert roles == {f"gpufabric.cluster.{role}" for role in ROLES if role not in APART_FROM_SITE}
    hosts = _ansible(
        installed, "ansible-playbook", "-i", "inventory/gpufabric.yml", "gpufabric.cluster.site", "--list-hosts"
    )
    plays = hosts.stdout.split("play #")[1:]
    assert [sorted(ln.strip() for ln in p.splitlines()[3:] if ln.strip()) for p in plays] == [
        ["gpu01", "gpu02", "gpu03", "gpu04", "stor01", "stor02"],
        ["gpu01", "gpu02", "gpu03", "gpu04"],
        ["gpu01", "gpu02", "gpu03", "gpu04", "stor01", "stor02"],
    ]
