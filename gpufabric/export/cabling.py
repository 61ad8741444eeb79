"""The cabling plan: one CSV row per cable, in plan order, with a stable cable id for labels."""

from __future__ import annotations

import csv
import io

from gpufabric import media
from gpufabric.plan.converged import link_carries
from gpufabric.plan.infiniband import IbPlan
from gpufabric.plan.model import Plan, cable_label, link_length
from gpufabric.plan.multiplane import parts

HEADER = ["cable_id", "plane", "kind", "a_device", "a_port", "b_device", "b_port", "speed", "medium", "length_m"]


def cable_id(prefix: str, index: int) -> str:
    """The label of a plane's `index`-th cable (1-based, plan order): what a technician finds on it."""
    return cable_label(prefix, index)


def cable_labels(plan: Plan) -> dict[tuple[str, str], str]:
    """(switch or server, port) -> the label of the cable plugged there, as `render` writes it."""
    out: dict[tuple[str, str], str] = {}
    for plane in plan.planes.values():
        for link in plane.links:
            label = cable_id(plane.prefix, link.number)
            out[(link.a, link.a_port)] = label
            out[(link.b, link.b_port)] = label
    return out


def render(plan: Plan) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    # A converged plane's cables carry its logical planes as tags: a `carries` column says which (only in a
    # plan that has carried planes, so every other plan's CSV stays as it was).
    converged = any(p.carried for p in plan.planes.values())
    w.writerow([*HEADER, "carries"] if converged else HEADER)
    groups = {s.name: s.group for s in plan.servers} if converged else {}
    for name, plane in [part for n, p in plan.planes.items() for part in parts(n, p)]:
        roles = {d.name: d.role for d in plane.devices}
        for link in plane.links:
            length = link_length(plane, link, roles)
            medium = media.choose(link.speed, length) if length is not None else None
            tags = (
                [" ".join(f"{c.name}:{c.vlan}" for c in link_carries(plane, link, roles, groups))] if converged else []
            )
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
                    medium.name if medium is not None else "",
                    "" if length is None else length,
                    *tags,
                ]
            )
    if plan.infiniband is not None:
        w.writerows(infiniband_rows(plan.infiniband))
    return out.getvalue()


def infiniband_rows(ib: IbPlan) -> list[list[str]]:
    """The InfiniBand compute fabric's cables in plan order: `a` the end nearer the adapters, ports by number;
    with the plane's lengths the medium and length of each."""
    rows = []
    for i, c in enumerate(ib.fabric.cables, 1):
        length = ib.length(c)
        medium = media.choose_infiniband(c.rate.speed, length) if length is not None else None
        rows.append(
            [
                cable_id("ib", i),
                ib.plane,
                c.tier,
                *_ib_end(c.down.node, c.down.port),
                *_ib_end(c.up.node, c.up.port),
                f"{c.rate.gbps}G",
                medium.name if medium is not None else "",
                "" if length is None else str(length),
            ]
        )
    return rows


def _ib_end(node: str, port: int) -> tuple[str, str]:
    """(device, port) of a cable end: an adapter "dgx001 mlx5_0" is the host and its adapter's port 1."""
    host, _, adapter = node.partition(" ")
    return (host, f"{adapter}/{port}") if adapter else (node, str(port))
