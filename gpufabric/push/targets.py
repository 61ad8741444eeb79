"""Which switches a push touches, and in which batches.

A canary goes first, alone. Then one failure domain at a time (split into batches of at most
`--batch` switches): a batch never spans two failure domains, so a bad change can take at
most one domain down, and the rollout stops at the first batch that fails. Only switches whose
configuration changes are batched (`narrow`): a canary that would not change proves nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufabric.plan.model import Device, Plan

# Leaves first: a bad change on a leaf strands one unit's servers, on a spine a whole plane's share.
ROLE_ORDER = {"leaf": 0, "border": 1, "mgmt": 1, "spine": 2, "superspine": 3}


@dataclass(frozen=True)
class Batch:
    number: int
    domain: str  # the failure domain, or "canary"
    devices: tuple[str, ...]


def select(plan: Plan, plane: str | None, devices: tuple[str, ...], role: str | None) -> list[Device]:
    return [
        d
        for d in plan.devices()
        if (plane is None or d.plane == plane)
        and (role is None or d.role == role)
        and (not devices or d.name in devices)
    ]


def batches(plan: Plan, targets: list[Device], size: int | None) -> list[Batch]:
    wanted = {d.name for d in targets}
    by_name = {d.name: d for d in targets}
    domains: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    for fd in (fd for p in plan.planes.values() for fd in p.failure_domains):
        members = [n for n in fd.devices if n in wanted and n not in seen]
        seen.update(members)
        if members:
            domains.append((fd.name, members))
    for d in targets:  # a switch no failure domain names still gets pushed, in a domain of its own
        if d.name not in seen:
            domains.append((d.failure_domain or d.name, [d.name]))
    domains.sort(key=lambda item: min(ROLE_ORDER.get(by_name[n].role, 9) for n in item[1]))
    out: list[Batch] = []
    if not domains:
        return out
    first_domain, first_members = domains[0]
    canary = first_members[0]
    out.append(Batch(1, f"canary ({first_domain})", (canary,)))
    domains[0] = (first_domain, first_members[1:])
    for name, members in domains:
        step = size or len(members) or 1
        for i in range(0, len(members), step):
            out.append(Batch(len(out) + 1, name, tuple(members[i : i + step])))
    return out


def narrow(plan_batches: list[Batch], keep: set[str]) -> list[Batch]:
    """The batches with only the switches in `keep`, in the same order, renumbered. A canary still goes
    first, alone: the planned one when it is kept, else the first switch kept."""
    kept = [(b.domain, tuple(n for n in b.devices if n in keep)) for b in plan_batches]
    kept = [(domain, devices) for domain, devices in kept if devices]
    if kept and not kept[0][0].startswith("canary"):
        domain, devices = kept[0]
        kept[0:1] = [(f"canary ({domain})", devices[:1])] + ([(domain, devices[1:])] if devices[1:] else [])
    return [Batch(number, domain, devices) for number, (domain, devices) in enumerate(kept, 1)]
