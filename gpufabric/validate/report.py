"""Validation results as a table, JSON or JUnit XML (one testsuite per check, one testcase per item)."""

from __future__ import annotations

import json
import math
from collections import Counter
from xml.etree import ElementTree as ET

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpufabric.intent.errors import printable
from gpufabric.outputs import NOTE_SUFFIX, json_number, xml_text
from gpufabric.verify.running.results import CheckResult


def as_json(results: list[CheckResult], seconds: float) -> str:
    """The report as `json.dumps(..., indent=2)` writes it, character for character, written here a result
    at a time: with an indent the json module encodes in pure Python, and a whole fabric is 1.5 million
    results (the ECMP width of every remote loopback on every switch)."""
    failed = sum(not r.ok for r in results)
    head = [
        "{",
        f'  "ok": {_JSON_BOOL[not failed]},',
        f'  "checked": {len(results)},',
        f'  "failed": {failed},',
        *_seconds(seconds),
    ]
    if not results:
        return "\n".join([*head, '  "results": []', "}"])
    items = ",\n".join(map(_json_result, results))
    return "\n".join([*head, '  "results": [', items, "  ]", "}"])


def _seconds(seconds: float) -> list[str]:
    """Strict JSON has no NaN or Infinity (a clock read from elsewhere, the demo's report, may hold one):
    null then, and a field saying what it was, as outputs.json_dumps writes it."""
    if math.isfinite(seconds):
        return [f'  "seconds": {json_number(round(seconds, 2))},']
    return ['  "seconds": null,', f'  "seconds{NOTE_SUFFIX}": {_string(repr(seconds))},']


_JSON_BOOL = {True: "true", False: "false"}
_string = json.encoder.encode_basestring_ascii  # json.dumps's own escaping of a str (ensure_ascii)


def _json_result(r: CheckResult) -> str:
    return (
        f"    {{\n"
        f'      "check": {_string(r.check)},\n'
        f'      "device": {_string(r.device)},\n'
        f'      "item": {_string(r.item)},\n'
        f'      "expected": {_string(r.expected)},\n'
        f'      "observed": {_string(r.observed)},\n'
        f'      "ok": {_JSON_BOOL[r.ok]},\n'
        f'      "verdict": {_string(r.verdict)}\n'
        f"    }}"
    )


def as_junit(results: list[CheckResult], seconds: float) -> str:
    """JUnit XML. Device names, items and observed values come from the switches: every text passes through
    outputs.xml_text (ElementTree escapes markup but would write ESC or NUL as they are, which no XML reader
    accepts)."""
    suites = ET.Element(
        "testsuites",
        name="gpufabric validate",
        tests=str(len(results)),
        failures=str(sum(not r.ok for r in results)),
        time=f"{seconds:.2f}" if math.isfinite(seconds) else "0",
    )
    by_check: dict[str, list[CheckResult]] = {}
    for r in results:
        by_check.setdefault(r.check, []).append(r)
    for check, items in by_check.items():
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=xml_text(check),
            tests=str(len(items)),
            failures=str(sum(not r.ok for r in items)),
        )
        for r in items:
            case = ET.SubElement(suite, "testcase", classname=xml_text(f"{check}.{r.device}"), name=xml_text(r.item))
            if not r.ok:
                expected, observed = xml_text(r.expected), xml_text(r.observed)
                failure = ET.SubElement(case, "failure", message=f"expected {expected}, observed {observed}")
                failure.text = f"{xml_text(r.device)} {xml_text(r.item)}: expected {expected}\nobserved {observed}"
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def print_table(console: Console, results: list[CheckResult], show_all: bool) -> None:
    rows = results if show_all else [r for r in results if not r.ok]
    if rows:
        table = Table(title="validate: " + ("every result" if show_all else "failures"))
        for column in ("check", "device", "item", "expected", "observed", "verdict"):
            table.add_column(column)
        for r in rows:
            # What a switch answered (observed, and items named from its output) is text: never markup
            # (a `[/]` in it crashed the table), its control characters escaped (never sent to the terminal).
            cells = (Text(printable(v)) for v in (r.check, r.device, r.item, r.expected, r.observed))
            table.add_row(*cells, Text("pass", "green") if r.ok else Text("fail", "red"))
        console.print(table)
    summary = Table(title="validate: per check")
    for column in ("check", "passed", "failed"):
        summary.add_column(column)
    passed, failed = Counter(r.check for r in results if r.ok), Counter(r.check for r in results if not r.ok)
    for check in dict.fromkeys(r.check for r in results):
        summary.add_row(check, str(passed[check]), f"[red]{failed[check]}[/]" if failed[check] else "0")
    console.print(summary)
