"""The demo's report: a table per part for people, JSON (one entry per fact) for machines."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from gpufabric.demo.fact import Fact
from gpufabric.demo.flow import Report
from gpufabric.outputs import json_dumps


def as_json(report: Report) -> str:
    return json_dumps(
        {
            "fabric": report.fabric,
            "passed": report.passed,
            "seconds": round(report.seconds, 1),
            "planes": report.planes,
            "facts": [f.as_dict() for f in report.facts],
            "chaos": [f.as_dict() for f in report.chaos],
            "artifacts": report.artifacts,
            "steps": report.steps,
        },
        indent=2,
    )


def _table(title: str, facts: list[Fact]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("", "fact", "expected", "observed"):
        table.add_column(column)
    for f in facts:
        note = f"\n[dim]{f.note}[/dim]" if f.note else ""
        table.add_row("[green]PASS[/green]" if f.passed else "[red]FAIL[/red]", f.name + note, f.expected, f.observed)
    return table


def show(console: Console, report: Report) -> None:
    console.print(_table(f"gpufabric demo: {report.fabric}", report.facts))
    if report.chaos:
        console.print(_table("chaos: one spine cut, then restored", report.chaos))
    for kind, path in report.artifacts.items():
        console.print(f"  {kind:8} {path}")
    steps = ", ".join(f"{s['name']} {s['seconds']} s" for s in report.steps)
    console.print(f"steps: {steps}")
    verdict = "[green]every fact passed[/green]" if report.passed else "[red]some facts failed[/red]"
    console.print(f"{verdict} in {report.seconds:.0f} s")
