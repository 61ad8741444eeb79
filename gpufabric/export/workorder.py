"""A work order a data-center technician can follow: one row per cable to add, remove or move."""

from __future__ import annotations

import csv
import io

from gpufabric.export.bom import cable_name
from gpufabric.export.cabling import cable_id
from gpufabric.plan.diff import PlanDiff
from gpufabric.plan.model import Link, Plan

HEADER = ["action", "cable_id", "plane", "rack", "device", "port", "far_device", "far_port", "cable"]


def _racks(plan: Plan) -> dict[str, str]:
    """Where a device sits, as far as the plan knows: its scalable unit (or rack) on its plane."""
    racks = {d.name: f"{d.plane}-unit{d.unit}" if d.unit else f"{d.plane}-core" for d in plan.devices()}
    for s in plan.servers:
        unit = next(iter(s.units.items()), None)
        racks[s.name] = f"{unit[0]}-unit{unit[1]}" if unit else "servers"
    return racks


def _ids(plan: Plan) -> dict[tuple[str, str, str], str]:
    return {
        (link.plane, link.a, link.a_port): cable_id(p.prefix, link.number)
        for p in plan.planes.values()
        for link in p.links
    }


def _cable(plan: Plan, link: Link) -> str:
    """The cable as the bill of material names it (its medium and length where the plane gives lengths)."""
    plane = plan.planes[link.plane]
    return cable_name(plane, link, {d.name: d.role for d in plane.devices})


def render(diff: PlanDiff, old: Plan, new: Plan) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(HEADER)
    racks = {**_racks(old), **_racks(new)}
    old_ids, new_ids = _ids(old), _ids(new)
    for link in diff.links_removed:
        key = (link.plane, link.a, link.a_port)
        w.writerow(["remove", old_ids[key], link.plane, racks.get(link.a, ""), link.a, link.a_port, link.b, link.b_port,
                    _cable(old, link)])  # fmt: skip
    for m in diff.links_moved:
        plane, a, a_port = m.key
        w.writerow(["move", new_ids[m.key], plane, racks.get(a, ""), a, a_port, *m.new,
                    f"was to {m.old[0]} {m.old[1]}"])  # fmt: skip
    for link in diff.links_added:
        key = (link.plane, link.a, link.a_port)
        w.writerow(["add", new_ids[key], link.plane, racks.get(link.a, ""), link.a, link.a_port, link.b, link.b_port,
                    _cable(new, link)])  # fmt: skip
    return out.getvalue()
