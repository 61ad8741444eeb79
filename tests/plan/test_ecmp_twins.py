"""The expected ECMP widths, one path vector per class of twin origins, against one path vector per origin.

A class's members are switches whose path vectors are one another's with two names exchanged (the same
neighbours, and the same ASN or each a unique one): `expected_widths` walks once per class. The reference
here walks from every origin, as the planner did before, on every shipped intent, whole and with switches
taken out (a drained spine, a drained leaf: what a drain's wait asks for).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from conftest import ALL_INTENTS, example_plan, sized

from gpufabric.plan.ecmp import expected_widths, twins, widths_from
from gpufabric.plan.model import Plan, ip


def _every_origin(plan: Plan, plane: str, without: frozenset[str]) -> dict[str, dict[str, int]]:
    """The widths by a path vector from every origin: the definition, without classes."""
    devices = {d.name: d for d in plan.devices() if d.plane == plane and d.asn is not None and d.name not in without}
    adjacent: dict[str, list[str]] = defaultdict(list)
    for link in plan.links():
        if link.kind == "fabric" and link.a in devices and link.b in devices:
            adjacent[link.a].append(link.b)
            adjacent[link.b].append(link.a)
    asn = {n: d.asn for n, d in devices.items()}
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for origin, device in devices.items():
        if device.loopback is not None:
            prefix = f"{ip(device.loopback)}/32"  # once per origin, not once per switch it reaches
            for name, width in widths_from(origin, asn, adjacent).items():  # type: ignore[arg-type]
                out[name][prefix] = width
    return dict(out)


def _taken_out(plan: Plan, plane: str) -> list[frozenset[str]]:
    """Nothing; the plane's first spine; its first leaf (each as a drain takes it out)."""
    roles = {d.role: d.name for d in reversed(plan.planes[plane].devices)}
    return [frozenset(), *(frozenset({roles[r]}) for r in ("spine", "leaf") if r in roles)]


@pytest.mark.parametrize("intent", sized(ALL_INTENTS), ids=lambda p: Path(p).stem)
def test_one_walk_per_class_gives_every_origins_widths(intent: Path) -> None:
    plan = example_plan(intent)
    for plane in plan.planes:
        for without in _taken_out(plan, plane):
            assert expected_widths(plan, plane, {}, without=without) == _every_origin(plan, plane, without), (
                plane,
                sorted(without),
            )


def test_leaves_on_the_same_spines_are_one_class_and_a_shared_asn_splits_none_from_its_peers() -> None:
    # Two spines sharing an ASN; l1-l3 cabled to both, l4 twice to s1 and once to s2 (one entry per link).
    adjacent = {
        "l1": ["s1", "s2"],
        "l2": ["s2", "s1"],
        "l3": ["s1", "s2"],
        "l4": ["s1", "s1", "s2"],
        "s1": ["l1", "l2", "l3", "l4", "l4"],
        "s2": ["l1", "l2", "l3", "l4"],
    }
    unique = {"l1": 1, "l2": 2, "l3": 3, "l4": 4, "s1": 10, "s2": 10}
    origins = [(n, f"{n}/32") for n in adjacent]
    classes = sorted(sorted(n for n, _ in c) for c in twins(origins, unique, adjacent))
    # l1-l3: the same spines (in any order), each its own ASN; l4's second link to s1 sets it and s1 apart.
    assert classes == [["l1", "l2", "l3"], ["l4"], ["s1"], ["s2"]]
    # l2 and l3 share an ASN that l1 does not: exchanging l1 with either would change which paths are refused.
    shared = {**unique, "l3": 2}
    assert widths_from("l1", shared, adjacent)["l3"] == 2 and "l3" not in widths_from("l2", shared, adjacent)
    assert sorted(sorted(n for n, _ in c) for c in twins(origins, shared, adjacent)) == [
        ["l1"],
        ["l2", "l3"],
        ["l4"],
        ["s1"],
        ["s2"],
    ]
