"""Which switches a push touches, and in which batches.

A canary goes first, alone. Then the failure domains (each split into batches of at most `--batch`
switches), a plane's domains in turn: a batch never holds two domains of one plane, so a bad change
can take at most one domain of a plane down, and the rollout stops at the first batch that fails.
The data planes go side by side: their switches share no link, so a batch takes the next domain of
each (as many switches as one domain alone would have, or `--batch`). The OOB plane goes last and
alone, as every push reaches the switches over it. A compute plane built as several planes goes plane
by plane, its domains never two to a batch (unless `--max-capacity-loss` lets a batch hold more of a
plane's domains, within that budget: gpufabric/push/budget.py). `--one-plane-at-a-time` keeps every domain to a
batch of its own. Only switches whose configuration changes are batched (`narrow`): a canary that
would not change proves nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest

from gpufabric.plan.model import Device, Plan

# Leaves first: a bad change on a leaf strands one unit's servers, on a spine a whole plane's share.
ROLE_ORDER = {"leaf": 0, "border": 1, "mgmt": 1, "spine": 2, "superspine": 3}
OOB = "oob"  # the management plane: every push, validate and login crosses it

Part = tuple[str, tuple[str, ...]]  # a failure domain and the switches of it a batch changes


@dataclass(frozen=True)
class Batch:
    number: int
    domain: str  # the failure domain ("a + b" when planes go side by side), or "canary (domain)"
    devices: tuple[str, ...]
    parts: tuple[Part, ...] = ()  # per failure domain, when the batch holds more than one
    cost: dict[str, object] | None = None  # under a capacity budget: what it costs the fabric (budget.Cost)

    def split(self) -> tuple[Part, ...]:
        return self.parts or ((self.domain, self.devices),)


def batch_of(number: int, parts: list[Part]) -> Batch:
    if len(parts) == 1:
        return Batch(number, *parts[0])
    return Batch(number, " + ".join(d for d, _ in parts), tuple(n for _, ds in parts for n in ds), tuple(parts))


@dataclass(frozen=True)
class _Chunk:
    plane: str
    domain: str
    devices: tuple[str, ...]


def domains_of(plan: Plan, targets: list[Device]) -> list[tuple[str, str, list[str]]]:
    """(plane, failure domain, targeted members), leaves first."""
    wanted = {d.name for d in targets}
    by_name = {d.name: d for d in targets}
    domains: list[tuple[str, str, list[str]]] = []
    seen: set[str] = set()
    for plane in plan.planes.values():
        for fd in plane.failure_domains:
            members = [n for n in fd.devices if n in wanted and n not in seen]
            seen.update(members)
            if members:
                domains.append((plane.name, fd.name, members))
    for d in targets:  # a switch no failure domain names still gets pushed, in a domain of its own
        if d.name not in seen:
            domains.append((d.plane, d.failure_domain or d.name, [d.name]))
    # A compute plane built as several planes goes plane by plane (every role of plane 1, then of plane 2):
    # a bad change then degrades one plane, whose traffic NCCL moves to the others, and never two.
    plane_of = {n: k for p in plan.planes.values() for n, k in p.plane_of.items()}
    domains.sort(
        key=lambda item: (plane_of.get(item[2][0], 1), min(ROLE_ORDER.get(by_name[n].role, 9) for n in item[2]))
    )
    return domains


def batches(
    plan: Plan, targets: list[Device], size: int | None, *, width: int = 1, one_plane_at_a_time: bool = False
) -> list[Batch]:
    """`width`: how many switches the push stages at once; batches side by side stay within it (or
    within the largest domain, or `size`), so they take no longer to stage than one domain did."""
    domains = domains_of(plan, targets)
    if not domains:
        return []
    plane, first, members = domains[0]
    out: list[list[Part]] = [[(f"canary ({first})", (members[0],))]]
    domains[0] = (plane, first, members[1:])
    chunks = [
        _Chunk(plane, name, tuple(members[i : i + (size or len(members))]))
        for plane, name, members in domains
        for i in range(0, len(members), size or len(members) or 1)
    ]
    if one_plane_at_a_time:
        out += [[(c.domain, c.devices)] for c in chunks]
    else:
        capacity = size or max([width, *(len(c.devices) for c in chunks)])
        out += _side_by_side([c for c in chunks if c.plane != OOB], capacity)
        out += [[(c.domain, c.devices)] for c in chunks if c.plane == OOB]
    return [batch_of(number, parts) for number, parts in enumerate(out, 1)]


def _side_by_side(chunks: list[_Chunk], capacity: int) -> list[list[Part]]:
    """The k-th batch of every plane together, as far as `capacity` allows (a chunk that does not fit
    starts the next batch): each plane keeps its own order, and no batch holds two of a plane's."""
    per_plane: dict[str, list[_Chunk]] = {}
    for c in chunks:
        per_plane.setdefault(c.plane, []).append(c)
    out: list[list[Part]] = []
    for wave in zip_longest(*per_plane.values()):
        current: list[Part] = []
        for c in wave:
            if c is None:
                continue
            if current and sum(len(ds) for _, ds in current) + len(c.devices) > capacity:
                out.append(current)
                current = []
            current.append((c.domain, c.devices))
        if current:
            out.append(current)
    return out


def narrow(plan_batches: list[Batch], keep: set[str]) -> list[Batch]:
    """The batches with only the switches in `keep`, in the same order, renumbered. A canary still goes
    first, alone: the planned one when it is kept, else the first switch kept."""
    kept: list[list[Part]] = []
    for b in plan_batches:
        parts = [(domain, tuple(n for n in devices if n in keep)) for domain, devices in b.split()]
        parts = [(domain, devices) for domain, devices in parts if devices]
        if parts:
            kept.append(parts)
    if kept and not kept[0][0][0].startswith("canary"):
        (domain, devices), *others = kept[0]
        rest = ([(domain, devices[1:])] if devices[1:] else []) + others
        kept[0:1] = [[(f"canary ({domain})", devices[:1])]] + ([rest] if rest else [])
    return [batch_of(number, parts) for number, parts in enumerate(kept, 1)]
