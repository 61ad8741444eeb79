"""Failure domains: what one batch of a push may take down at once, judged on the plane's graph.

A domain may hold many switches only where taking them all down cuts no more than taking one of them
down would: every leaf still reaches every other leaf, and no pod or spine loses more than one of
its parallel uplinks' ends.
"""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import INVENTORY, example_plan, plan_doc
from fabric_builders import kary_three_tier, role, single_plane
from fabric_graph import cut_off_leaves, switch_graph


def _judge(plan) -> None:  # type: ignore[no-untyped-def]
    for plane in plan.planes.values():
        graph = switch_graph(plane)
        for domain in plane.failure_domains:
            alone = set().union(*(cut_off_leaves(plane, graph, [d]) for d in domain.devices))
            together = cut_off_leaves(plane, graph, domain.devices)
            assert together <= alone, f"{domain.name} cuts off {sorted(together - alone)[:5]}"


def test_a_three_tier_fat_tree_takes_one_spine_of_each_pod_and_one_superspine_of_each_group() -> None:
    plan = plan_doc(kary_three_tier(8))
    plane = plan.planes["compute"]
    by_name = {d.name: d for d in plane.devices}
    graph = switch_graph(plane)
    pods = {d.pod for d in plane.devices if d.role == "spine"}
    spine_domains = [f for f in plane.failure_domains if by_name[f.devices[0]].role == "spine"]
    superspine_domains = [f for f in plane.failure_domains if by_name[f.devices[0]].role == "superspine"]
    # k=8: 8 pods of 4 aggregation switches, 16 cores in 4 groups of 4.
    assert len(spine_domains) == 4 and len(superspine_domains) == 4
    for f in spine_domains:
        assert sorted(by_name[n].pod for n in f.devices) == sorted(pods)  # one spine of every pod
    for f in superspine_domains:
        # One superspine of each group: every spine keeps all but one of the superspines it uplinks to.
        for spine in (d.name for d in plane.devices if d.role == "spine"):
            ups = {n for n in graph[spine] if by_name[n].role == "superspine"}
            assert len(ups & set(f.devices)) == 1 and len(ups - set(f.devices)) == 3
    assert {by_name[n].failure_domain for f in plane.failure_domains for n in f.devices} == {
        f.name for f in plane.failure_domains
    }
    _judge(plan)


def test_a_two_tier_fabric_keeps_each_spine_alone(default_plan) -> None:  # type: ignore[no-untyped-def]
    for plane in default_plan.planes.values():
        spines = {d.name for d in plane.devices if d.role in ("spine", "superspine")}
        assert all(len(f.devices) == 1 for f in plane.failure_domains if f.devices[0] in spines)
    _judge(default_plan)


def test_a_spine_that_is_its_leaves_only_way_up_stays_alone() -> None:
    """One spine per pod: no leaf has another to go to, so the pods' spines do not change together."""
    doc = single_plane(
        32,
        1,
        {"leaf": role(8, "100G"), "spine": role(16, "100G", count=1), "superspine": role(8, "100G")},
        topology="clos",
        tiers=3,
        nic_speed="100G",
    )
    plane = plan_doc(doc).planes["compute"]
    spines = [d.name for d in plane.devices if d.role == "spine"]
    assert plane.sizing["pods"] == 4 and len(spines) == 4
    assert all(len(f.devices) == 1 for f in plane.failure_domains if f.devices[0] in spines)
    _judge(plan_doc(doc))


@pytest.mark.slow
def test_the_32k_example_rolls_out_in_76_domains() -> None:
    """8 rails of 64 leaves, 64 spine positions of 8 pods, 4 places of 64 superspine groups."""
    plan = example_plan(INVENTORY / "examples" / "three-tier-32k.yml")
    plane = plan.planes["compute"]
    by_name = {d.name: d for d in plane.devices}
    sizes = Counter((by_name[f.devices[0]].role, len(f.devices)) for f in plane.failure_domains)
    assert sizes == {("leaf", 64): 8, ("spine", 8): 64, ("superspine", 64): 4}
    _judge(plan)
