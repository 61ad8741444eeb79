"""Where switches and servers stand, and the cable lengths that follow from it.

The intent's `site` lists the racks (row and column) and where each switch stands; a group's `hosts` say
where each server does. A cable between two placed ends gets its length from the distance model
(`Distances`): within a rack, the run between the two units; between racks, up from one unit to the
overhead tray, along the rows and across them, and down to the other unit; plus the slack, rounded up to
whole metres. A length measured and recorded under `site.cable_lengths` takes its place.
"""

from __future__ import annotations

from gpufabric.intent.errors import Problem
from gpufabric.intent.model import Distances, Intent, Rack
from gpufabric.plan.model import Place, Plan, cable_label

UNIT_UM = 44_450  # one rack unit (EIA-310): 44.45 mm, in micrometres


def places(intent: Intent) -> dict[str, Place]:
    """Switch and server name -> where it stands, as the intent says."""
    out: dict[str, Place] = {}
    for group in intent.server_groups:
        for host in group.hosts or []:
            if host.rack is not None or host.serial is not None:
                out[host.name] = Place(host.rack, host.position, host.serial)
    if intent.site is not None:
        for name, where in intent.site.switches.items():
            out[name] = Place(where.rack, where.position, where.serial)
    return out


def problems(intent: Intent, build_out: Plan) -> list[Problem]:
    """Switches placed and cables measured that the plan (at its build-out) does not have."""
    site = intent.site
    if site is None:
        return []
    switches = {d.name for d in build_out.devices()}
    found: list[Problem] = [
        Problem(("site", "switches", name), f"no planned switch is named '{name}'", "name a switch of the plan")
        for name in site.switches
        if name not in switches
    ]
    labels = {cable_label(p.prefix, link.number) for p in build_out.planes.values() for link in p.links}
    found += [
        Problem(("site", "cable_lengths", label), f"no planned cable is labelled '{label}'", "use a label of the plan")
        for label in site.cable_lengths
        if label not in labels
    ]
    return found


def place(plan: Plan) -> list[Problem]:
    """Record where everything stands, and give each cable between two placed ends its length. Returns
    what does not fit: a cable of a lossless RoCE plane longer than the length class its PFC headroom is
    sized for."""
    intent = plan.intent
    plan.places = places(intent)
    site = intent.site
    if site is None:
        return []
    racks = {r.name: r for r in site.racks}
    for plane in plan.planes.values():
        for link in plane.links:
            measured = site.cable_lengths.get(cable_label(plane.prefix, link.number))
            if measured is not None:
                link.length = measured
                continue
            a, b = plan.places.get(link.a), plan.places.get(link.b)
            if a is None or b is None or a.rack is None or b.rack is None or a.position is None or b.position is None:
                continue
            link.length = length_m(site.distances, racks[a.rack], a.position, racks[b.rack], b.position)
    return _too_long(plan)


def _too_long(plan: Plan) -> list[Problem]:
    found: list[Problem] = []
    for name, plane in plan.planes.items():
        measured = [link for link in plane.links if link.length is not None]
        if not plane.carries_roce or not measured:
            continue
        longest = max(measured, key=lambda link: link.length or 0)
        allowed = int(plane.cable_length.rstrip("m"))
        if longest.length is not None and longest.length > allowed:
            wider = next((c for c in ("30m", "100m") if int(c.rstrip("m")) >= longest.length), None)
            found.append(
                Problem(
                    ("planes", name, "cable_length"),
                    f"cable {cable_label(plane.prefix, longest.number)} is {longest.length} m by the site's "
                    f"positions, on a lossless RoCE plane whose PFC headroom is sized for {plane.cable_length}",
                    f"set cable_length: {wider}" if wider else "keep lossless RoCE cables within 100 m",
                )
            )
    return found


def length_m(d: Distances, ra: Rack, ua: int, rb: Rack, ub: int) -> int:
    """A cable's length in whole metres between unit `ua` of rack `ra` and unit `ub` of rack `rb`."""
    ha, hb = (2 * ua - 1) * UNIT_UM // 2, (2 * ub - 1) * UNIT_UM // 2  # the units' middles, from the floor
    if ra.name == rb.name:
        run = abs(ha - hb)
    else:
        up = ra.units * UNIT_UM - ha + d.tray * 1000
        down = rb.units * UNIT_UM - hb + d.tray * 1000
        across = abs(ra.column - rb.column) * d.rack_width * 1000 + abs(ra.row - rb.row) * d.row_pitch * 1000
        run = up + across + down
    total = run + d.slack * 1000
    return -(-total // 1_000_000)
