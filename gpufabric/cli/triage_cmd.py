"""`gpufabric triage nccl`: what a job's NCCL and PyTorch errors name, on the plan (docs/jobs.md)."""

from __future__ import annotations

from pathlib import Path

import click

from gpufabric.cli.errors import EXIT_FINDINGS, EXIT_OK
from gpufabric.cli.options import load_plan
from gpufabric.cli.output import err, out, shown, write_stdout
from gpufabric.jobs.nccl_log import read_logs
from gpufabric.jobs.triage import End, Event, Suspect, Triage, triage
from gpufabric.outputs import json_dumps

SHOWN_EVENTS = 20  # errors listed in the text report (--json has them all)


@click.group("triage")
def triage_cmd() -> None:
    """Why a job failed, from its own words: the parts of the fabric its errors name."""


@triage_cmd.command("nccl")
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--intent",
    "file",
    type=click.Path(dir_okay=False),
    help="The intent file. [default: ./inventory/fabric.yml, else the default fabric shipped with gpufabric]",
)
@click.option("--json", "as_json", is_flag=True, help="Everything read, resolved and concluded, as one JSON object.")
def nccl_cmd(logs: tuple[Path, ...], file: str | None, as_json: bool) -> int:
    """Map every address, GID, host name and rank the NCCL and PyTorch errors in LOGS name onto the plan's
    NICs, rails, leaf ports and cables, and name the part they all have in common.

    \b
    Read: NCCL WARN lines of NCCL 2.18-2.27 (NET/IB completion errors and async events, failing ibv_* calls,
    socket errors), NCCL INFO init lines (which host each rank ran on), PyTorch's watchdog timeouts. A WARN or
    watchdog line in no known layout is listed as unread; nothing is guessed from it.

    \b
    JSON keys: suspects[] {kind, name, events, plane, rail, cable, leaf, leaf_port, confirm}, common[],
    most_named[], events[] {kind, layout, file, line, host, rank, detail, ends[] {said, via, server, nic,
    note}}, evidence, weighed, layouts, errors_not_kept, ranks_placed, unread[] {file, line, text}, unread_count,
    notes.

    Exit codes: 0 nothing points anywhere; 4 a suspect (the most specific part every error names: a NIC and
    its cable, a leaf, a server); 2 a log that cannot be read (not a regular file, not UTF-8, a line over
    64 KiB, a file over 1 GiB).
    """
    plan = load_plan(file)
    found = triage(plan, read_logs(logs))
    if as_json:
        write_stdout(json_dumps(found.as_dict(), indent=2) + "\n")
    else:
        _print(found)
    return EXIT_FINDINGS if found.suspects else EXIT_OK


def _print(t: Triage) -> None:
    r = t.reading
    layouts = ", ".join(f"{name} {count}" for name, count in sorted(r.layouts.items())) or "none"
    err.print(
        shown(f"read {len(r.files)} file(s), {r.lines} line(s): errors {layouts}; {t.ranks_placed} rank(s) placed")
    )
    for where, text in r.unread[:SHOWN_EVENTS]:
        err.print(shown(f"unread: {where.file}:{where.line}: {text}"))
    if r.unread_count > SHOWN_EVENTS:
        err.print(shown(f"unread: {r.unread_count - SHOWN_EVENTS} more line(s) (--json lists {len(r.unread)})"))
    for event in t.events[:SHOWN_EVENTS]:
        out.print(shown(_event(event)), soft_wrap=True)  # one error a line, however long, for grep
    if len(t.events) > SHOWN_EVENTS:
        out.print(shown(f"... {len(t.events) - SHOWN_EVENTS} more error(s) (--json lists them all)"))
    for note in t.notes:
        err.print(shown(f"note: {note}"))
    if not t.suspects:
        out.print(shown(f"no part common to the {t.weighed} error(s) weighed ({t.evidence})"))
        for (kind, name), count in t.counts[:5]:
            out.print(shown(f"  named in {count}: {kind} {name}"))
        return
    which = "suspect" if len(t.suspects) == 1 else f"suspects (one of {len(t.suspects)})"
    out.print(shown(f"{which}, common to all {t.weighed} error(s) weighed ({t.evidence}):"), style="bold")
    for s in t.suspects:
        out.print(shown(f"  {_suspect(s)}"))
        for command in s.confirm:
            out.print(shown(f"    look: {command}"), soft_wrap=True)


def _suspect(s: Suspect) -> str:
    if s.nic is None:
        return f"{s.kind} {s.name} (in {s.events})"
    n = s.nic
    rail = f", rail {n.rail}" if n.rail is not None else ""
    return f"NIC {s.name} ({n.plane}{rail}, {n.address}): cable {n.cable} to {n.leaf} {n.leaf_port} (in {s.events})"


def _event(e: Event) -> str:
    s = e.said
    what = s.detail.get("status_name") or s.detail.get("call") or s.detail.get("error") or s.detail.get("op") or ""
    ends = "; ".join(_end(end) for end in e.ends) or "nothing the plan holds"
    return f"{s.where.file}:{s.where.line} {s.kind} {what}: {ends}"


def _end(end: End) -> str:
    if end.nic is not None:
        return f"{end.via} {end.said} = {end.nic.node} {end.nic.interface} ({end.nic.leaf} {end.nic.leaf_port})"
    said = end.said if end.via == "rank" else f"{end.via} {end.said}"  # "rank 8", not "rank rank 8"
    if end.server is not None:
        return f"{said} = {end.server}" + (f" ({end.note})" if end.note else "")
    return f"{said}: {end.note}"
