"""`gpufabric docs examples`: one page per example intent with the file in full and each plane's drawing; the
site's pages are current, and an edited intent makes `--check` fail until the pages are made again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import INVENTORY, ROOT, run_in_process

NAV = "nav:\n  - Examples:\n      # begin: gpufabric docs examples\n      # end: gpufabric docs examples\n"


def test_the_site_s_example_pages_are_current() -> None:
    done = run_in_process("gpufabric", "docs", "examples", "--check", cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_every_example_has_its_page_with_the_intent_in_full() -> None:
    for path in [INVENTORY / "fabric.yml", *sorted((INVENTORY / "examples").glob("*.yml"))]:
        stem = "default" if path.name == "fabric.yml" else path.stem
        page = (ROOT / "docs" / "examples" / f"{stem}.md").read_text()
        assert path.read_text().rstrip("\n") in page
        for image in [line.split("](")[1].rstrip(")") for line in page.splitlines() if line.startswith("![")]:
            assert (ROOT / "docs" / "examples" / image).read_text().lstrip().startswith(("<?xml", "<svg"))


def test_an_edited_intent_makes_the_check_fail_until_regenerated(tmp_path: Path) -> None:
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot draws the pages' images")
    inventory = tmp_path / "inventory"
    (inventory / "examples").mkdir(parents=True)
    shutil.copy(INVENTORY / "fabric.yml", inventory / "fabric.yml")
    shutil.copy(INVENTORY / "examples" / "sonic.yml", inventory / "examples" / "sonic.yml")
    (tmp_path / "mkdocs.yml").write_text(NAV)
    args = ("gpufabric", "docs", "examples", "--inventory", "inventory", "-o", "docs/examples", "--nav", "mkdocs.yml")
    assert run_in_process(*args, cwd=tmp_path).returncode == 0
    assert run_in_process(*args, "--check", cwd=tmp_path).returncode == 0
    nav = (tmp_path / "mkdocs.yml").read_text()
    assert '- "inventory/examples/sonic.yml": examples/sonic.md' in nav
    intent = inventory / "examples" / "sonic.yml"
    intent.write_text(intent.read_text() + "\n# an operator's note\n")
    stale = run_in_process(*args, "--check", cwd=tmp_path)
    assert stale.returncode == 4 and "sonic.md" in stale.stderr
    assert run_in_process(*args, cwd=tmp_path).returncode == 0
    assert "# an operator's note" in (tmp_path / "docs" / "examples" / "sonic.md").read_text()
