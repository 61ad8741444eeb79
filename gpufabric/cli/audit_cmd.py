"""`gpufabric audit`: read back the push audit trail, as a table or JSON."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from gpufabric.cli.output import err, out
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
        records: list[dict[str, Any]] = []
    else:
        records = _load(path)
    found = [r for r in records if matches(r, push_id=push_id, devices=devices, since=since)]
    if as_json:
        out.print_json(json_dumps(found))
        return 0
    table = Table(title=f"audit {path}")
    for column in (*COLUMNS, "diff", "reason"):
        table.add_column(column)
    for r in found:
        digest = str(r.get("diff_sha256") or "")
        table.add_row(
            *(str(r.get(c) or "") for c in COLUMNS), digest.removeprefix("sha256:")[:12], str(r.get("reason"))
        )
    out.print(table)
    err.print(f"{len(found)} of {len(records)} records")
    return 0


def _load(path: Path) -> list[dict[str, Any]]:
    try:
        lines = list(read(path))
    except OSError as exc:
        raise click.FileError(str(path), exc.strerror) from None
    for number, record in lines:
        if record is None:
            err.print(f"warning: {path}:{number}: not a JSON record; skipped", markup=False)
    return [record for _, record in lines if record is not None]
