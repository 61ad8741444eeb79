"""The README's "At scale" figures are the benchmarks' own: every number it quotes is one docs/benchmarks.md
prints, and the rollout it quotes is one row of a whole-fabric table there (push seconds, waves, bound and
ratio from the same run), so a new run recorded in one place and not the other fails here."""

from __future__ import annotations

import re

from conftest import ROOT

README = ROOT / "README.md"
BENCHMARKS = ROOT / "docs" / "benchmarks.md"
# A number as a person writes it: 1,309 / 30.6 / 12.5 (a % or a unit after it is not part of it).
NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.,])\d+(?:\.\d+)?")
# The README's rollout sentence: "in 662.3 s (11.0 min) and 23 waves, 1.29 times the 515.2 s".
ROLLOUT = re.compile(r"in ([\d.]+) s \([\d.]+ min\) and (\d+) waves, ([\d.]+) times the ([\d.]+) s")


def section(text: str, heading: str) -> str:
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def numbers(text: str) -> set[str]:
    """Every number of `text`, thousands separators dropped, link targets left out (an anchor is no figure)."""
    prose = re.sub(r"\]\([^)]*\)", "]", text)
    return {n.replace(",", "") for n in NUMBER.findall(prose)}


def table_rows(text: str) -> list[list[str]]:
    """The whole-fabric rows of benchmarks.md's rollout tables (scale 1, then the switches, as printed)."""
    return [line.split() for line in text.splitlines() if re.match(r"^\s+1\s+1309\s", line)]


def test_every_number_of_the_at_scale_section_is_in_the_benchmarks_page():
    quoted = numbers(section(README.read_text(), "At scale"))
    assert {"662.3", "23", "1.29", "515.2"} <= quoted  # the section still quotes a rollout
    assert sorted(quoted - numbers(BENCHMARKS.read_text())) == []


def test_the_rollout_quoted_is_one_run_of_a_whole_fabric_table():
    (found,) = ROLLOUT.findall(" ".join(section(README.read_text(), "At scale").split()))
    push_s, waves, ratio, bound_s = found
    # columns: scale switches dry-run-s push-s waves bound-s ratio ...
    rows = {(r[3], r[4], r[6], r[5]) for r in table_rows(BENCHMARKS.read_text()) if len(r) > 6}
    assert (push_s, waves, ratio, bound_s) in rows, sorted(rows)


def test_the_number_reader_sees_what_a_person_reads():
    assert numbers("1,309 switches in 30.6 s, 12.5% and 1/8 [x](y.md#a-12)") == {"1309", "30.6", "12.5", "1", "8"}
