"""`gpufabric check` and `gpufabric plan`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from gpufabric.cli.options import file_arg, load_plan, print_warnings, strict_option, warnings_exit
from gpufabric.cli.output import err, out, shown, write_stdout
from gpufabric.export.plan_json import summary
from gpufabric.intent import IntentError
from gpufabric.outputs import json_dumps
from gpufabric.plan import Plan
from gpufabric.plan.storage import flow as storage_flow
from gpufabric.plan.storage import notes as storage_notes

if TYPE_CHECKING:
    from rich.table import Table


@click.command("check")
@file_arg
@strict_option
def check_cmd(file: str | None, strict: bool) -> int:
    """Validate an intent file without writing anything (exit 2 with located errors when it is wrong)."""
    plan = load_plan(file)
    print_warnings(plan)
    err.print(shown(f"{plan.source}: valid; {len(plan.devices())} switches, {len(plan.servers)} servers"))
    return warnings_exit(plan, strict)


@click.command("plan")
@file_arg
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout (errors as JSON too).")
@strict_option
def plan_cmd(file: str | None, as_json: bool, strict: bool) -> int:
    """Plan the fabric and print a summary per plane.

    \b
    JSON keys scripts can rely on (docs/plan-json.md has them all):
      planes.<plane>.switches.<role>        switch count per role
      planes.<plane>.oversubscription.<tier> {target, planned, down_gbps, up_gbps}
      totals.switches / totals.transceivers / totals.cables
    """
    try:
        plan = load_plan(file)
    except IntentError as exc:
        if not as_json:
            raise
        write_stdout(json_dumps({"errors": exc.as_dicts()}, indent=2) + "\n")
        return 2
    doc = summary(plan)
    if as_json:
        write_stdout(json_dumps(doc, indent=2) + "\n")
    else:
        out.print(_table(plan, doc))
        for line in _reach_notes(doc):
            out.print(line, markup=False)
        path = storage_flow(plan)
        for line in storage_notes(path) if path is not None else []:
            out.print(line, markup=False)
    print_warnings(plan)
    return warnings_exit(plan, strict)


def _rails(rails: list[int]) -> str:
    if len(rails) > 1 and rails == list(range(rails[0], rails[-1] + 1)):
        return f"rails {rails[0]}-{rails[-1]}"
    return ("rail " if len(rails) == 1 else "rails ") + ", ".join(map(str, rails))


def _reach_notes(doc: dict) -> list[str]:
    """What the plan says about reach on rail-optimized planes: spine groups, and who meets where."""
    notes = []
    for name, p in doc["planes"].items():
        reach = p.get("rail_reach")
        if reach is None:
            continue
        sizing = p["sizing"]
        same = (
            "at most leaf-spine-leaf apart" if reach["same_rail_leaf_spine_leaf"] else "NOT all leaf-spine-leaf apart"
        )
        if sizing.get("spine_groups", 1) > 1:
            groups = "; ".join(_rails(g) for g in reach["rail_groups"])
            notes.append(
                f"{name}: {sizing['spine_groups']} spine groups of {sizing['spines_per_group']} spines ({groups}); "
                f"a leaf's {sizing['leaf_uplinks']} uplinks reach its group's spines, "
                f"{sizing['leaf_spine_links']} link each"
            )
        notes.append(f"{name}: GPUs of the same rail are {same}")
        if len(reach["rail_groups"]) > 1:
            notes.append(
                f"{name}: GPUs of rails in different groups meet through the servers (NVLink, PXN), not the fabric"
            )
    return notes


def _ratio(t: dict[str, float]) -> str:
    mark = "" if t["planned"] <= t["target"] + 1e-9 else " [bold red]above target[/]"
    return f"{t['planned']:g}:1 (target {t['target']:g}:1){mark}"


def _table(plan: Plan, doc: dict) -> Table:
    from rich.table import Table  # the table only: `plan --json` and `check` do without it

    t = Table(
        title=f"{plan.intent.fabric.name}: {len(plan.servers)} servers, {doc['totals']['gpus']} GPUs ({plan.source})",
        title_justify="left",
    )
    for col in ("plane", "topology", "switches", "links", "oversubscription", "host ports", "transceivers", "cables"):
        t.add_column(col, justify="right" if col in ("host ports", "transceivers", "cables") else "left")
    for name, p in doc["planes"].items():
        switches = ", ".join(f"{n} {r}" for r, n in p["switches"].items())
        links = ", ".join(f"{n} {k}" for k, n in p["links"].items())
        over = "\n".join(f"{tier}: {_ratio(v)}" for tier, v in p["oversubscription"].items()) or "-"
        # A converged plane's row names the planes its switches carry (their switches are its own).
        carried = "".join(f"\n+ {c['plane']}, VLAN {c['vlan']}" for c in p.get("carries", []))
        t.add_row(
            name + carried,
            f"{p['topology']}, {p['tiers']} tier{'s' if p['tiers'] > 1 else ''}"
            + (f", {p['sizing']['planes']} planes" if "planes" in p.get("sizing", {}) else ""),
            switches,
            links,
            over,
            str(p["host_ports"]),
            str(p["transceivers"]),
            str(p["cables"]),
        )
    if "infiniband" in doc:
        ib = doc["infiniband"]
        c = ib["counts"]
        t.add_row(
            f"{ib['plane']} (InfiniBand)",
            f"rail-optimized fat tree, {ib['tiers']} tiers",
            ", ".join(f"{c[r]} {r}" for r in ("leaf", "spine", "core") if c[r]) + f" ({ib['switch_model']})",
            ", ".join(
                f"{c[k]} {k.removesuffix('_cables').replace('_', '-')}"
                for k in ("node_leaf_cables", "leaf_spine_cables", "spine_core_cables")
                if c[k]
            ),
            "1:1 (non-blocking)",
            str(c["node_leaf_cables"]),
            "-",
            str(sum(c[k] for k in ("node_leaf_cables", "leaf_spine_cables", "spine_core_cables"))),
        )
    tot = doc["totals"]
    t.add_section()
    t.add_row(
        "total",
        "",
        f"{tot['switches']} switches",
        f"{tot['links']} links",
        "",
        "",
        str(tot["transceivers"]),
        str(tot["cables"]),
    )
    return t
