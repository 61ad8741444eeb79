"""The front page's and the tutorial's drawings (`gpufabric docs figures`, docs/img/): drawn from today's
intents (an edited intent fails `--check` until they are drawn again), shown where the pages say, and the
intent excerpt beside the front page's drawing is the default fabric's own text."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from conftest import INVENTORY, ROOT, run_in_process

IMG = ROOT / "docs" / "img"
RAW = "https://raw.githubusercontent.com/gpufabric/gpufabric/main/"


def test_the_figures_are_drawn_from_today_s_intents() -> None:
    done = run_in_process("gpufabric", "docs", "figures", "--check", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for name in ("default-fabric.svg", "tutorial-fabric.svg"):
        assert "<svg" in (IMG / name).read_text()


def _copy(tmp_path: Path) -> None:
    shutil.copytree(IMG, tmp_path / "docs" / "img")
    shutil.copy(ROOT / "docs" / "tutorial.md", tmp_path / "docs" / "tutorial.md")
    (tmp_path / "inventory").mkdir()
    shutil.copy(INVENTORY / "fabric.yml", tmp_path / "inventory" / "fabric.yml")


def test_an_edited_intent_makes_the_check_fail(tmp_path: Path) -> None:
    _copy(tmp_path)
    assert run_in_process("gpufabric", "docs", "figures", "--check", cwd=tmp_path).returncode == 0
    tutorial = tmp_path / "docs" / "tutorial.md"
    tutorial.write_text(tutorial.read_text().replace("count: 8", "count: 12", 1))
    done = run_in_process("gpufabric", "docs", "figures", "--check", cwd=tmp_path)
    assert done.returncode == 4 and "tutorial-fabric.svg" in done.stderr and "default-fabric.svg" not in done.stderr
    fabric = tmp_path / "inventory" / "fabric.yml"
    fabric.write_text(fabric.read_text().replace("count: 4", "count: 6", 1))
    done = run_in_process("gpufabric", "docs", "figures", "--check", cwd=tmp_path)
    assert done.returncode == 4 and "default-fabric.svg" in done.stderr


def test_a_missing_figure_fails_the_check(tmp_path: Path) -> None:
    _copy(tmp_path)
    (tmp_path / "docs" / "img" / "default-fabric.svg").unlink()
    done = run_in_process("gpufabric", "docs", "figures", "--check", cwd=tmp_path)
    assert done.returncode == 4 and "default-fabric.svg" in done.stderr


def test_the_pages_show_the_figures() -> None:
    readme = (ROOT / "README.md").read_text()
    assert f"]({RAW}docs/img/default-fabric.svg)" in readme
    assert [
        u for u in re.findall(r"\]\((" + re.escape(RAW) + r"[^)]+)\)", readme) if not (ROOT / u[len(RAW) :]).is_file()
    ] == []
    assert "](img/default-fabric.svg)" in (ROOT / "docs" / "index.md").read_text()
    assert "](img/tutorial-fabric.svg)" in (ROOT / "docs" / "tutorial.md").read_text()


def test_the_front_pages_intent_excerpt_is_the_default_fabric_s_text() -> None:
    fabric = (INVENTORY / "fabric.yml").read_text()
    for page in (ROOT / "README.md", ROOT / "docs" / "index.md"):
        (excerpt,) = re.findall(r"```yaml\n(.*?)```", page.read_text(), re.S)
        assert len(excerpt.splitlines()) > 5 and excerpt in fabric, page
