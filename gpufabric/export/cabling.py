"""The cabling plan: one CSV row per cable, in plan order, with a stable cable id for labels."""

from __future__ import annotations

import csv
import io

from gpufabric.plan.model import Plan

HEADER = ["cable_id", "plane", "kind", "a_device", "a_port", "b_device", "b_port", "speed"]


def cable_id(prefix: str, index: int) -> str:
    """The label of a plane's `index`-th cable (1-based, plan order): what a technician finds on it."""
    return f"{prefix}-{index:06d}"


def render(plan: Plan) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(HEADER)
    for name, plane in plan.planes.items():
        for link in plane.links:
            w.writerow(
                [
                    cable_id(plane.prefix, link.number),
                    name,
                    link.kind,
                    link.a,
                    link.a_port,
                    link.b,
                    link.b_port,
                    f"{link.speed}G",
                ]
            )
    return out.getvalue()
