"""Assemble the Ansible collection gpufabric.cluster from the repository, then build or install it.

    python scripts/build_collection.py                # build/collection/ansible_collections/gpufabric/cluster
    python scripts/build_collection.py --tarball      # ... and build/gpufabric-cluster-<version>.tar.gz
    python scripts/build_collection.py --install DIR  # ... and the tarball installed into DIR (a collections path)

The repository keeps its Ansible content where `ansible-playbook site.yml` finds it from a clone:
roles/, plugins/ (inventory, strategy), playbooks/ (site.yml, validate.yml). The collection is that
content with collection/ laid over it (galaxy.yml, meta/runtime.yml, its README, the sanity ignores),
and two moves a collection requires:

- A role in a collection loads no plugins of its own, so each role's `library/` module goes to
  plugins/modules/ and its `filter_plugins/` to plugins/filter/ (the role's tasks call the module by
  its short name; the collection's copy names it fully, as below).
- Jinja finds a collection's filters only by their fully qualified name, so every use of the moved
  filters in the roles and playbooks (`| gpufabric_differences`) is qualified
  (`| gpufabric.cluster.gpufabric_differences`), and so is every task that calls a moved module
  (`gpufabric_roce_qos:` -> `gpufabric.cluster.gpufabric_roce_qos:`). Nothing else is rewritten.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
OVERLAY = ROOT / "collection"
# Folders of the repository copied into the collection as they are (a role's plugins are moved, below).
CONTENT = ("roles", "plugins", "playbooks")
ROLE_PLUGINS = {"library": "modules", "filter_plugins": "filter"}
TEMPLATED = (".yml", ".yaml", ".j2")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc")


class BuildError(Exception):
    """The collection cannot be assembled or built as asked."""


def galaxy() -> dict[str, str]:
    data = yaml.safe_load((OVERLAY / "galaxy.yml").read_text())
    return {k: str(data[k]) for k in ("namespace", "name", "version")}


def filter_names(plugin: Path) -> list[str]:
    """The filters a filter plugin file defines (its FilterModule's keys)."""
    spec = importlib.util.spec_from_file_location(f"_collection_filter_{plugin.stem}", plugin)
    if spec is None or spec.loader is None:
        raise BuildError(f"{plugin}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return sorted(module.FilterModule().filters())


def _move_role_plugins(dest: Path) -> list[Path]:
    """Each role's library/ and filter_plugins/ into the collection's plugins/; the moved files."""
    moved: list[Path] = []
    for role in sorted((dest / "roles").iterdir()):
        for inside, kind in ROLE_PLUGINS.items():
            folder = role / inside
            if not folder.is_dir():
                continue
            target = dest / "plugins" / kind
            target.mkdir(parents=True, exist_ok=True)
            for source in sorted(folder.glob("*.py")):
                if (target / source.name).exists():
                    raise BuildError(f"two plugins named plugins/{kind}/{source.name} (roles/{role.name}/{inside})")
                moved.append(Path(shutil.move(source, target / source.name)))
            shutil.rmtree(folder)
    return moved


def _qualify_filters(dest: Path, fqcn: str, names: list[str]) -> int:
    """`| name` -> `| <fqcn>.name` in the roles' and playbooks' YAML and templates; how many were qualified."""
    if not names:
        return 0
    use = re.compile(r"(\|\s*)(" + "|".join(map(re.escape, names)) + r")\b(?![.\w])")
    count = 0
    for folder in ("roles", "playbooks"):
        for path in sorted((dest / folder).rglob("*")):
            if path.suffix not in TEMPLATED or not path.is_file():
                continue
            text = path.read_text()
            new, n = use.subn(rf"\g<1>{fqcn}.\g<2>", text)
            if n:
                path.write_text(new)
                count += n
    return count


def _qualify_modules(dest: Path, fqcn: str, names: list[str]) -> int:
    """A task's `name:` key -> `<fqcn>.name:` for the moved modules, in the roles' and playbooks' YAML; how many.
    A collection's role run from a collection playbook (`gpufabric.cluster.site`) was not found to resolve a
    short module name in its own collection (the RoCE role's read-back failed with "not found in configured
    module paths"), so the tasks name them fully, as the filters are."""
    if not names:
        return 0
    key = re.compile(r"^(\s*(?:- )?)(" + "|".join(map(re.escape, names)) + r"):", re.MULTILINE)
    count = 0
    for folder in ("roles", "playbooks"):
        for path in sorted((dest / folder).rglob("*.yml")):
            text = path.read_text()
            new, n = key.subn(rf"\g<1>{fqcn}.\g<2>:", text)
            if n:
                path.write_text(new)
                count += n
    return count


def assemble(out: Path) -> Path:
    """The collection's tree under out/ansible_collections/<namespace>/<name>, made afresh; its path."""
    meta = galaxy()
    dest = out / "ansible_collections" / meta["namespace"] / meta["name"]
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for folder in CONTENT:
        shutil.copytree(ROOT / folder, dest / folder, ignore=SKIP)
    moved = _move_role_plugins(dest)
    shutil.copytree(OVERLAY, dest, ignore=SKIP, dirs_exist_ok=True)
    if (ROOT / "LICENSE").is_file():
        shutil.copy2(ROOT / "LICENSE", dest / "LICENSE")
    names = [n for p in moved if p.parent.name == "filter" for n in filter_names(p)]
    _qualify_filters(dest, f"{meta['namespace']}.{meta['name']}", names)
    modules = [p.stem for p in moved if p.parent.name == "modules"]
    _qualify_modules(dest, f"{meta['namespace']}.{meta['name']}", modules)
    return dest


def _galaxy_cli(*args: str) -> None:
    tool = Path(sys.executable).parent / "ansible-galaxy"
    # Its progress goes to stderr: stdout holds only the paths this script prints.
    command = [str(tool if tool.exists() else "ansible-galaxy"), "collection", *args]
    done = subprocess.run(command, stdout=sys.stderr, check=False)
    if done.returncode != 0:
        raise BuildError(f"ansible-galaxy collection {args[0]} failed (exit {done.returncode})")


def tarball(dest: Path, out: Path) -> Path:
    """`ansible-galaxy collection build` of the assembled tree into out/; the tarball's path."""
    meta = galaxy()
    _galaxy_cli("build", str(dest), "--output-path", str(out), "--force")
    return out / f"{meta['namespace']}-{meta['name']}-{meta['version']}.tar.gz"


def install(artifact: Path, collections_path: Path) -> Path:
    """`ansible-galaxy collection install` of the tarball into a collections path (with its dependencies:
    where a dependency is installed already, as the `ansible` package carries kubernetes.core, no server is asked)."""
    _galaxy_cli("install", str(artifact), "--collections-path", str(collections_path), "--force")
    meta = galaxy()
    return collections_path / "ansible_collections" / meta["namespace"] / meta["name"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "collection", help="where the tree is assembled")
    parser.add_argument("--tarball", action="store_true", help="also build the collection's tarball into --out")
    parser.add_argument("--install", type=Path, metavar="DIR", help="also install the tarball into DIR")
    args = parser.parse_args(argv)
    try:
        dest = assemble(args.out.resolve())
        print(dest)
        if args.tarball or args.install:
            artifact = tarball(dest, args.out.resolve())
            print(artifact)
            if args.install:
                print(install(artifact, args.install.resolve()))
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
