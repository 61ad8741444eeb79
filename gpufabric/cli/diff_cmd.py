"""`gpufabric diff OLD NEW`: what a change of intent does to the fabric, before anything is pushed."""

from __future__ import annotations

from pathlib import Path

import click

from gpufabric.cli.errors import EXIT_DISRUPTIVE, EXIT_FINDINGS, EXIT_OK
from gpufabric.cli.output import err, out, write_stdout
from gpufabric.config.compare import compare, load_side
from gpufabric.intent import load_intent
from gpufabric.outputs import json_dumps
from gpufabric.plan import Plan, build_plan
from gpufabric.plan.diff import PlanDiff


@click.command("diff")
@click.argument("old")
@click.argument("new", required=False)
@click.option("--json", "as_json", is_flag=True, help="The whole diff as JSON on stdout.")
@click.option("--work-order", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the cable work order (CSV: action, cable id, rack, device, port, far end).")  # fmt: skip
@click.option("--configs", "show_configs", is_flag=True, help="Print each changed switch's configuration diff.")
@click.option("--drawing", type=click.Path(file_okay=False, path_type=Path),
              help="Write NEW's drawings (DOT, and SVG with graphviz) here, with the additions in green.")  # fmt: skip
def diff_cmd(*, old: str, new: str | None, as_json: bool, work_order: Path | None, show_configs: bool,
             drawing: Path | None) -> int:  # fmt: skip
    """Compare two intents (files, or REV:PATH from git; NEW defaults to ./inventory/fabric.yml):
    switches and servers added and removed, cables added, removed and moved, switches renumbered,
    each switch's configuration diff, and the failure domains a push would touch.

    \b
    Exit codes for a CI gate: 0 nothing changes; 4 only additions (new switches, cables and the
    configuration lines they need); 5 something that carries traffic today would change (a
    renumbered or removed switch, a moved or removed cable, a removed configuration line).
    """
    before, after = build_plan(load_side(old)), build_plan(load_side(new) if new else load_intent(None))
    diff = compare(before, after)
    if work_order is not None:
        from gpufabric.export.workorder import render
        from gpufabric.files import write_atomic

        write_atomic(work_order, render(diff, before, after))
        err.print(f"wrote {work_order}")
    if drawing is not None:
        _draw(diff, after, drawing)
    if as_json:
        write_stdout(json_dumps(_as_dict(diff), indent=2) + "\n")
    else:
        _print(diff, show_configs)
    if diff.empty:
        return EXIT_OK
    return EXIT_DISRUPTIVE if diff.disruptive else EXIT_FINDINGS


def _draw(diff: PlanDiff, after: Plan, directory: Path) -> None:
    from gpufabric.cli.drawings import write_drawings
    from gpufabric.export.drawing import Added, render_files
    from gpufabric.plan.diff import link_key

    moved = {m.key for m in diff.links_moved}  # a moved cable is drawn at its new place, as new
    keys = {link_key(x) for x in diff.links_added} | moved
    added = Added(frozenset(diff.devices_added + diff.servers_added), frozenset(keys))
    write_drawings(render_files(after, added), directory, "--drawing")


def _as_dict(diff: PlanDiff) -> dict[str, object]:
    def link(x) -> dict[str, object]:  # noqa: ANN001
        return {"plane": x.plane, "kind": x.kind, "a": x.a, "a_port": x.a_port, "b": x.b, "b_port": x.b_port}

    return {
        "disruptive": diff.disruptive,
        "devices": {"added": diff.devices_added, "removed": diff.devices_removed},
        "servers": {"added": diff.servers_added, "removed": diff.servers_removed},
        "renumbered": [{"device": r.device, "field": r.field, "old": r.old, "new": r.new} for r in diff.renumbered],
        "cables": {
            "added": [link(x) for x in diff.links_added],
            "removed": [link(x) for x in diff.links_removed],
            "moved": [
                {"plane": m.key[0], "device": m.key[1], "port": m.key[2], "old": list(m.old), "new": list(m.new)}
                for m in diff.links_moved
            ],
        },
        "configs": [{"device": c.device, "added": c.added, "removed": c.removed, "diff": c.diff} for c in diff.configs],
        "changed_switches": diff.changed_switches(),
        "failure_domains": diff.domains,
    }


def _print(diff: PlanDiff, show_configs: bool) -> None:
    if diff.empty:
        out.print("no change")
        return
    rows = [
        ("switches added", len(diff.devices_added), ", ".join(diff.devices_added[:8])),
        ("switches removed", len(diff.devices_removed), ", ".join(diff.devices_removed[:8])),
        ("servers added", len(diff.servers_added), ", ".join(diff.servers_added[:8])),
        ("servers removed", len(diff.servers_removed), ", ".join(diff.servers_removed[:8])),
        ("cables added", len(diff.links_added), ""),
        ("cables removed", len(diff.links_removed), ""),
        ("cables moved", len(diff.links_moved), ""),
        ("switches renumbered", len({r.device for r in diff.renumbered}), ""),
        ("configurations changed", len(diff.configs), ""),
    ]
    for what, n, names in rows:
        if n:
            out.print(f"{what}: {n}" + (f" ({names}{', ...' if n > 8 else ''})" if names else ""), markup=False)
    existing = [c for c in diff.configs if c.device not in set(diff.devices_added)]
    for c in existing:
        out.print(f"  {c.device}: +{c.added} -{c.removed} lines", markup=False)
    out.print(f"failure domains touched: {', '.join(diff.domains) or 'none'}", markup=False)
    for r in diff.renumbered:
        err.print(f"warning: {r.device} would be renumbered: {r.field} {r.old} -> {r.new}", markup=False)
    for m in diff.links_moved:
        err.print(f"warning: the cable at {m.key[1]} {m.key[2]} would move from {m.old[0]} {m.old[1]} to "
                  f"{m.new[0]} {m.new[1]}", markup=False)  # fmt: skip
    if show_configs:
        for c in diff.configs:
            out.print(c.diff, markup=False, end="")
