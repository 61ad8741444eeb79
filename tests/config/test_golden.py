"""Rendered configs equal the committed golden files; a change shows as a readable diff."""

from __future__ import annotations

import difflib

import pytest
from conftest import sized
from golden import DIGEST_SOURCES, DIGESTS, GOLDEN, SOURCES, digest_lines, render, render_exports, render_source

MAX_DIFF_LINES = 80


@pytest.mark.parametrize("name", sized(sorted(SOURCES)))
def test_rendered_configs_equal_golden_files(name):
    folder = GOLDEN / name
    expected = {str(p.relative_to(folder)): p.read_text() for p in folder.rglob("*") if p.is_file()}
    actual = render(name)
    added, removed = sorted(actual.keys() - expected.keys()), sorted(expected.keys() - actual.keys())
    changed = sorted(f for f in actual.keys() & expected.keys() if actual[f] != expected[f])
    if not (added or removed or changed):
        return
    report = [f"rendered configs of {name} differ from tests/golden/{name}:"]
    report += [f"  new file: {f}" for f in added] + [f"  file gone: {f}" for f in removed]
    diff: list[str] = []
    for f in changed:
        diff += difflib.unified_diff(
            expected[f].splitlines(), actual[f].splitlines(), f"golden/{name}/{f}", f"rendered/{f}", lineterm=""
        )
    report += diff[:MAX_DIFF_LINES]
    if len(diff) > MAX_DIFF_LINES:
        report.append(f"... {len(diff) - MAX_DIFF_LINES} more diff lines in {len(changed)} files")
    report.append("if the change is intended: python tests/golden.py, review `git diff tests/golden`, commit")
    pytest.fail("\n".join(report), pytrace=False)


@pytest.mark.parametrize("name", sized(sorted(DIGEST_SOURCES)))
def test_every_example_renders_its_golden_digests(name):
    expected = (DIGESTS / f"{name}.sha256").read_text().splitlines()
    source = DIGEST_SOURCES[name]
    actual = digest_lines(render_source(source) | render_exports(source)).splitlines()
    if actual == expected:
        return
    before = {line.split("  ", 1)[1]: line for line in expected}
    after = {line.split("  ", 1)[1]: line for line in actual}
    report = [f"rendered files of {name} differ from tests/golden/digests/{name}.sha256:"]
    report += [f"  new file: {f}" for f in sorted(after.keys() - before.keys())]
    report += [f"  file gone: {f}" for f in sorted(before.keys() - after.keys())]
    report += [f"  changed: {f}" for f in sorted(after.keys() & before.keys()) if after[f] != before[f]][:40]
    report.append("if the change is intended: python tests/golden.py, review `git diff tests/golden`, commit")
    pytest.fail("\n".join(report), pytrace=False)
