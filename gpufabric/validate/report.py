"""Validation results as a table, JSON or JUnit XML (one testsuite per check, one testcase per item)."""

from __future__ import annotations

import json
from collections import Counter
from xml.etree import ElementTree as ET

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpufabric.validate.results import CheckResult


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
        f'  "seconds": {json.dumps(round(seconds, 2))},',
    ]
    if not results:
        return "\n".join([*head, '  "results": []', "}"])
    items = ",\n".join(map(_json_result, results))
    return "\n".join([*head, '  "results": [', items, "  ]", "}"])


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
    suites = ET.Element(
        "testsuites",
        name="gpufabric validate",
        tests=str(len(results)),
        failures=str(sum(not r.ok for r in results)),
        time=f"{seconds:.2f}",
    )
    by_check: dict[str, list[CheckResult]] = {}
    for r in results:
        by_check.setdefault(r.check, []).append(r)
    for check, items in by_check.items():
        suite = ET.SubElement(
            suites, "testsuite", name=check, tests=str(len(items)), failures=str(sum(not r.ok for r in items))
        )
        for r in items:
            case = ET.SubElement(suite, "testcase", classname=f"{check}.{r.device}", name=r.item)
            if not r.ok:
                failure = ET.SubElement(case, "failure", message=f"expected {r.expected}, observed {r.observed}")
                failure.text = f"{r.device} {r.item}: expected {r.expected}\nobserved {r.observed}"
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def print_table(console: Console, results: list[CheckResult], show_all: bool) -> None:
    rows = results if show_all else [r for r in results if not r.ok]
    if rows:
        table = Table(title="validate: " + ("every result" if show_all else "failures"))
        for column in ("check", "device", "item", "expected", "observed", "verdict"):
            table.add_column(column)
        for r in rows:
            # Text cells: what a switch answered (an error's stderr included) is shown, never read as markup.
            cells = [Text(cell) for cell in (r.check, r.device, r.item, r.expected, r.observed)]
            table.add_row(*cells, "[green]pass[/]" if r.ok else "[red]fail[/]")
        console.print(table)
    summary = Table(title="validate: per check")
    for column in ("check", "passed", "failed"):
        summary.add_column(column)
    passed, failed = Counter(r.check for r in results if r.ok), Counter(r.check for r in results if not r.ok)
    for check in dict.fromkeys(r.check for r in results):
        summary.add_row(check, str(passed[check]), f"[red]{failed[check]}[/]" if failed[check] else "0")
    console.print(summary)
