"""`gpufabric audit`: read back the push audit trail, as a table or JSON."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from gpufabric.cli.output import err, out
from gpufabric.intent.errors import printable
from gpufabric.outputs import json_dumps
from gpufabric.push.audit import ENV, default_path, matches, parse_time, read

COLUMNS = ("time", "push_id", "switch", "platform", "plane", "status", "os_user", "login_user", "controller")


def _since(_ctx: click.Context, _param: click.Parameter, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO 8601 time (e.g. 2026-11-23T19:00:00Z)") from None


@click.command("audit")
@click.option("--json", "as_json", is_flag=True, help="The matching records as a JSON list on stdout.")
@click.option("--push", "push_id", metavar="ID", help="Only this push's records.")
@click.option("--device", "devices", multiple=True, metavar="NAME", help="Only this switch's (repeatable).")
@click.option("--since", callback=_since, metavar="ISO", help="Only records from this time on (UTC unless it says).")
@click.option(
    "--audit-log",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar=ENV,
    help=f"The trail to read. [env: {ENV}; default: where `push` writes it]",
)
def audit_cmd(
    as_json: bool, push_id: str | None, devices: tuple[str, ...], since: datetime | None, audit_log: Path | None
) -> int:
    """The pushes' audit trail: one record per switch a push touched (dry runs and refused pushes
    too), oldest first: when, which push, which switch, how it ended, who and from where.

    Exit codes: 0 records read (none matching is not an error); 2 the file cannot be read.
    """
    path = audit_log or default_path()
    if not path.exists():
        err.print(f"no audit log at {path} yet: no push has run with it", markup=False)
        found: list[dict[str, Any]] = []
        total = 0
    else:
        found, total = _load(path, lambda r: matches(r, push_id=push_id, devices=devices, since=since))
    if as_json:
        out.print_json(json_dumps(found))
        return 0
    table = Table(title=Text(f"audit {printable(str(path))}"))
    for column in (*COLUMNS, "diff", "reason"):
        table.add_column(column)
    for r in found:
        digest = str(r.get("diff_sha256") or "")
        cells = [*(str(r.get(c) or "") for c in COLUMNS), digest.removeprefix("sha256:")[:12], str(r.get("reason"))]
        # Text cells, control characters escaped: a record is read from a file, never taken as markup.
        table.add_row(*(Text(printable(c)) for c in cells))
    out.print(table)
    err.print(f"{len(found)} of {total} records")
    return 0


def _load(path: Path, wanted: Callable[[dict[str, Any]], bool]) -> tuple[list[dict[str, Any]], int]:
    """The records `wanted` keeps, and how many records the trail holds: read a line at a time, so a
    long trail is never held whole."""
    found, total = [], 0
    for number, record in read(path):
        if record is None:
            err.print(f"warning: {printable(str(path))}:{number}: not a JSON record; skipped", markup=False)
            continue
        total += 1
        if wanted(record):
            found.append(record)
    return found, total
