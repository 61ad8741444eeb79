"""The documentation site: every page in the nav, and the generated pages (one per platform, one per
command) equal to what the platform registry and click's own --help say, with a --check that fails
on drift."""

from __future__ import annotations

import dataclasses
import re
import shutil

import pytest
import yaml
from click.testing import CliRunner
from conftest import BIN, ROOT, run, run_in_process

from gpufabric.cli import cli, help_pages
from gpufabric.docsite import platforms
from gpufabric.docsite.pages import NavBlockError, stale_pages, with_nav_block, write_pages
from gpufabric.platforms import all_platforms

DOCS = ROOT / "docs"
CONFIG = ROOT / "mkdocs.yml"


def _nav_files(entries: list) -> list[str]:
    found: list[str] = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        found += _nav_files(value) if isinstance(value, list) else [value]
    return found


def test_every_page_is_in_the_nav_once_and_every_nav_entry_is_a_page():
    nav = _nav_files(yaml.safe_load(CONFIG.read_text())["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages
    assert len(nav) == len(set(nav))


def test_the_strict_build_fails_on_a_page_left_out_of_the_nav_or_a_broken_link():
    validation = yaml.safe_load(CONFIG.read_text())["validation"]
    assert validation["nav"]["omitted_files"] == "warn" and validation["nav"]["not_found"] == "warn"
    assert validation["links"]["not_found"] == "warn" and validation["links"]["anchors"] == "warn"


def _help_blocks(page: str) -> dict[str, str]:
    """Each `## gpufabric ...` section's text block of a generated command page."""
    return dict(re.findall(r"^## (gpufabric[^\n]*)\n\n```text\n(.*?)\n```$", page, flags=re.M | re.S))


def test_the_command_pages_say_exactly_what_help_says():
    generated = help_pages.generate(cli)
    runner = CliRunner()
    sections = 0
    for name, page in generated.pages.items():
        for path, block in _help_blocks(page).items():
            args = path.split()[1:]
            done = runner.invoke(cli, [*args, "--help"], prog_name="gpufabric", terminal_width=help_pages.WIDTH)
            assert done.exit_code == 0, (path, done.output)
            assert done.output.rstrip() == block, f"{name}: {path}"
            sections += 1
    # Every command and subcommand has its section: the top-level ones and the lab's hosts, at least.
    assert {f"{c}.md" for c in ("check", "push", "validate", "lab", "ib", "docs")} <= set(generated.pages)
    lab = _help_blocks(generated.pages["lab.md"])
    assert {"gpufabric lab up", "gpufabric lab hosts up", "gpufabric lab hosts down"} <= set(lab)
    assert sections > len(generated.pages)


def test_the_platform_pages_follow_each_spec():
    generated = platforms.generate()
    for spec in all_platforms():
        page = generated.pages[f"{spec.name}.md"]
        assert page.startswith(f"# {spec.title}\n")
        facts = spec.facts
        assert f"(default `{facts.default_release}`)" in page and f"{facts.max_mtu} bytes" in page
        assert f"| push: NAPALM driver | `{facts.napalm_driver}` |" in page
        assert f"  {spec.name}: {{release: '{facts.default_release}'}}" in page
        assert f"| [{spec.title}]({spec.name}.md) (`{spec.name}`) |" in generated.pages["index.md"]
    eos = generated.pages["eos.md"]
    assert "split 4 ways: `Ethernet1/1`, `Ethernet1/3`, `Ethernet1/5`, `Ethernet1/7`" in eos
    assert "numbered /31s only" in eos and "Arista's AVD" in eos


def test_a_new_platform_gets_its_page_and_nav_entry_with_no_change_to_the_generator(monkeypatch):
    first = all_platforms()[0]
    newcomer = type(first)(
        dataclasses.replace(first.facts, name="testos", title="Test OS", releases=("1.0",), default_release="1.0")
    )
    monkeypatch.setattr(platforms, "all_platforms", lambda: [*all_platforms(), newcomer])
    generated = platforms.generate()
    assert "# Test OS\n" in generated.pages["testos.md"]
    assert "| [Test OS](testos.md) (`testos`) | 1.0 (1.0) |" in generated.pages["index.md"]
    config = with_nav_block(CONFIG.read_text(), generated, "platforms", CONFIG)
    assert '      - "Test OS": platforms/testos.md\n' in config
    assert [e for e in _nav_files(yaml.safe_load(config)["nav"]) if e.startswith("platforms/")][-1] == (
        "platforms/testos.md"
    )


def test_check_names_stale_and_leftover_pages_and_leaves_pages_written_by_hand(tmp_path):
    generated = platforms.generate()
    folder = tmp_path / "platforms"
    write_pages(folder, generated)
    assert stale_pages(folder, generated) == []
    (folder / "eos.md").write_text("edited by hand\n")
    (folder / "gone.md").write_text(f"# Gone\n\n{platforms.MARKER}; do not edit by hand.\n")
    (folder / "notes.md").write_text("# Notes written by a person\n")
    assert sorted(stale_pages(folder, generated)) == ["eos.md", "gone.md"]
    write_pages(folder, generated)
    assert stale_pages(folder, generated) == []
    assert not (folder / "gone.md").exists() and (folder / "notes.md").exists()
    with pytest.raises(NavBlockError, match="# begin: gpufabric docs platforms"):
        with_nav_block("nav:\n  - Home: index.md\n", generated, "platforms", tmp_path / "mkdocs.yml")


def test_the_cli_checks_the_pages_in_the_repository_and_fails_on_drift(tmp_path):
    for kind in ("platforms", "commands"):
        done = run_in_process("gpufabric", "docs", kind, "--check")
        assert done.returncode == 0, done.stderr
    folder, config = tmp_path / "platforms", tmp_path / "mkdocs.yml"
    shutil.copytree(DOCS / "platforms", folder)
    config.write_text(CONFIG.read_text().replace('"Arista EOS": platforms/eos.md', '"EOS": platforms/eos.md'))
    (folder / "frr.md").unlink()
    done = run_in_process("gpufabric", "docs", "platforms", "-o", str(folder), "--nav", str(config), "--check")
    assert done.returncode == 4
    assert f"{folder / 'frr.md'}" in done.stderr and str(config) in done.stderr
    assert not (folder / "frr.md").exists()  # --check writes nothing
    done = run_in_process("gpufabric", "docs", "platforms", "-o", str(folder), "--nav", str(config))
    assert done.returncode == 0
    assert (folder / "frr.md").read_text() == (DOCS / "platforms" / "frr.md").read_text()
    assert config.read_text() == CONFIG.read_text()
    done = run_in_process("gpufabric", "docs", "-o", str(tmp_path / "x.md"), "platforms")
    assert done.returncode == 2 and "after the subcommand" in done.stderr


def _build(root, site):
    return run(BIN / "mkdocs", "build", "--strict", "--site-dir", str(site), cwd=root, NO_MKDOCS_2_WARNING="1")


@pytest.mark.skipif(not (BIN / "mkdocs").exists(), reason="mkdocs is not installed (the docs extra)")
@pytest.mark.slow
def test_the_site_builds_strictly_and_fails_on_a_page_outside_the_nav_or_a_broken_link(tmp_path):
    done = _build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "platforms" / "eos.html").exists()
    copy = tmp_path / "copy"
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(CONFIG, copy / "mkdocs.yml")
    (copy / "docs" / "stray.md").write_text("# A page no one linked\n")
    done = _build(copy, tmp_path / "site2")
    assert done.returncode != 0 and "stray.md" in done.stderr and '"nav"' in done.stderr
    (copy / "docs" / "stray.md").unlink()
    (copy / "docs" / "lab.md").write_text((DOCS / "lab.md").read_text() + "\n[gone](no-such-page.md)\n")
    done = _build(copy, tmp_path / "site3")
    assert done.returncode != 0 and "no-such-page.md" in done.stderr
