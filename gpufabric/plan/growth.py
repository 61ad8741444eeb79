"""Planning for the build-out while fewer servers are installed.

A server group's `build_out` is the size it will reach. The plan is made for the build-out (spines,
port positions, addresses, ASNs, management ports are all numbered for it), then cut down to what
is installed: servers past `count`, the leaves and management switches only they would use, and
every link to them are left out. Growing `count` toward `build_out` is therefore another cut of the
same plan: it only adds devices, links and the configuration lines they need.
"""

from __future__ import annotations

import dataclasses

from gpufabric.intent.model import Intent
from gpufabric.plan.model import Plan, PlanePlan


def at_build_out(intent: Intent) -> Intent:
    """The intent with every server group at its build-out size (itself when none is larger)."""
    if all((g.build_out or g.count) == g.count for g in intent.server_groups):
        return intent
    groups = [g.model_copy(update={"count": g.build_out or g.count}) for g in intent.server_groups]
    return intent.model_copy(update={"server_groups": groups})


def installed(plan: Plan, intent: Intent) -> Plan:
    """The part of a build-out plan that `intent`'s counts install."""
    counts = {g.name: g.count for g in intent.server_groups}
    seen: dict[str, int] = {}
    absent: set[str] = set()
    for s in plan.servers:
        seen[s.group] = seen.get(s.group, 0) + 1
        if seen[s.group] > counts[s.group]:
            absent.add(s.name)
    if not absent:
        return Plan(intent, plan.source, plan.planes, plan.servers, plan.warnings)
    for name, plane in plan.planes.items():
        if name != "oob":
            absent |= _unused_leaves(plane, absent)
    oob = plan.planes.get("oob")
    if oob is not None:
        absent |= _unused_leaves(oob, absent, role="mgmt", kind="mgmt")
    planes = {name: _without(plane, absent) for name, plane in plan.planes.items()}
    servers = [s for s in plan.servers if s.name not in absent]
    return Plan(intent, plan.source, planes, servers, plan.warnings)


def _unused_leaves(plane: PlanePlan, absent: set[str], role: str = "leaf", kind: str = "host") -> set[str]:
    """Switches of `role` whose every `kind` link goes to something absent (a unit not yet installed)."""
    served: dict[str, list[str]] = {}
    for link in plane.links:
        if link.kind == kind:
            served.setdefault(link.b, []).append(link.a)
    return {
        d.name
        for d in plane.devices
        if d.role == role and d.name in served and all(end in absent for end in served[d.name])
    }


def _without(plane: PlanePlan, absent: set[str]) -> PlanePlan:
    out = dataclasses.replace(
        plane,
        devices=[d for d in plane.devices if d.name not in absent],
        links=[link for link in plane.links if link.a not in absent and link.b not in absent],
        failure_domains=[],
        plane_of={n: k for n, k in plane.plane_of.items() if n not in absent},
    )
    for domain in plane.failure_domains:
        members = [d for d in domain.devices if d not in absent]
        if members:
            domain.devices = members
            out.failure_domains.append(domain)
    return out
