"""Refuse to publish a release whose tag does not name the version the tree says it is.

    python scripts/release_check.py v0.2.0

The version is written once, as gpufabric.__version__ (read here from the file, not imported); the tag
must be `v` and that version, and the collection (collection/galaxy.yml) and CHANGELOG.md's newest
release must name it too. Exit 0 when they agree; 2, with each disagreement on stderr, when not.
.github/workflows/release.yml runs it before anything is built.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
RELEASE_HEADING = re.compile(r"^## (\d+\.\d+\.\d+)\s*$", re.M)


def package_version(root: Path = ROOT) -> str:
    """gpufabric.__version__ as written in gpufabric/__init__.py (the literal setuptools reads too)."""
    tree = ast.parse((root / "gpufabric" / "__init__.py").read_text())
    for node in tree.body:
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Constant):
            continue
        if any(getattr(t, "id", None) == "__version__" for t in node.targets) and isinstance(node.value.value, str):
            return node.value.value
    raise SystemExit('gpufabric/__init__.py: no `__version__ = "X.Y.Z"`')


def newest_release(changelog: Path) -> str | None:
    """The first `## X.Y.Z` heading (the one above it, "Unreleased", is not a release)."""
    found = RELEASE_HEADING.search(changelog.read_text())
    return found.group(1) if found else None


def disagreements(tag: str, root: Path = ROOT) -> list[str]:
    version = package_version(root)
    found = {
        f"the tag {tag!r}": tag[1:] if tag.startswith("v") else None,
        "collection/galaxy.yml's version": str(
            yaml.safe_load((root / "collection" / "galaxy.yml").read_text())["version"]
        ),
        "CHANGELOG.md's newest release": newest_release(root / "CHANGELOG.md"),
    }
    return [
        f"{what} says {said!r}, gpufabric.__version__ {version!r}" for what, said in found.items() if said != version
    ]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: release_check.py vX.Y.Z", file=sys.stderr)
        return 2
    problems = disagreements(argv[0])
    for problem in problems:
        print(f"release_check: {problem}", file=sys.stderr)
    return 2 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
