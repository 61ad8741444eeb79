"""Property: for any design the schema accepts, the planner plans a consistent fabric or explains why not.

Mutating whole documents rarely reaches the planner's arithmetic (most mutations
stop at the schema), so this test draws the design numbers themselves: radix,
speeds, breakouts, unit sizes, tiers and fixed counts.
"""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import plan_doc
from fabric_builders import role, single_plane
from fabric_graph import cut_off_leaves, switch_graph
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufabric.intent import IntentError

pytestmark = pytest.mark.slow  # hypothesis draws hundreds of cases: seconds

GBPS = [100, 200, 400, 800]


@st.composite
def _speed(draw: st.DrawFn, wanted: int) -> int:
    """Mostly the speed the far end needs; sometimes any speed, to reach the mismatch rules."""
    return wanted if draw(st.integers(0, 9)) else draw(st.sampled_from(GBPS))


@st.composite
def switch_role(draw: st.DrawFn, down_gbps: int, count: bool = False) -> dict:
    """A role whose downlinks run at `down_gbps` (usually), with a breakout now and then."""
    down = draw(_speed(down_gbps))
    port = min(down * draw(st.sampled_from([1, 1, 2, 4])), 1600)
    if not draw(st.integers(0, 19)):
        port = down // 2  # a port slower than its links: the rules must refuse it before the planner divides
    ways = draw(st.sampled_from([1, 1, 1, 2, 4])) if draw(st.integers(0, 19)) else 3  # 3: uneven, must be refused
    up = port // ways
    extra: dict = {"downlink_speed": f"{down}G", "uplink_speed": f"{max(up, 1)}G"}
    if count and draw(st.booleans()):
        extra["count"] = draw(st.integers(1, 16))
    if draw(st.integers(0, 4)) == 0:
        extra["uplinks"] = draw(st.integers(1, 64))
    return role(draw(st.sampled_from([4, 8, 16, 32, 48, 64, 128])), f"{port}G", **extra)


def _up(r: dict) -> int:
    return int(r["uplink_speed"].removesuffix("G"))


@st.composite
def design(draw: st.DrawFn) -> dict:
    tiers = draw(st.sampled_from([2, 3]))
    nic = draw(st.sampled_from(GBPS))
    leaf = draw(switch_role(nic))
    switches = {"leaf": leaf, "spine": draw(switch_role(_up(leaf), count=True))}
    if tiers == 3:
        switches["superspine"] = draw(switch_role(_up(switches["spine"]), count=True))
    plane: dict = {"oversubscription": draw(st.sampled_from(["1:1", "2:1", "3:1", 1.5, "7:1"]))}
    if draw(st.booleans()):
        plane["unit_nodes"] = draw(st.integers(1, 64))
    if tiers == 3 and draw(st.booleans()):
        plane["pod_units"] = draw(st.integers(1, 8))
    return single_plane(
        draw(st.integers(1, 300)),
        draw(st.integers(1, 8)),
        switches,
        topology=draw(st.sampled_from(["rail-optimized", "clos"])),
        tiers=tiers,
        nic_speed=f"{nic}G",
        **plane,
    )


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(design())
def test_designs_plan_consistently_or_explain(doc: dict):
    try:
        plan = plan_doc(doc, "design.yml")
    except IntentError as exc:
        assert exc.problems and "design.yml" in exc.render()
        return
    plane = plan.planes["compute"]
    # No port of any device carries two cables.
    ends = Counter()
    for link in plane.links:
        ends[(link.a, link.a_port)] += 1
        ends[(link.b, link.b_port)] += 1
    assert max(ends.values()) == 1, ends.most_common(1)
    # Both ends of every link run at one speed, and every NIC sits on a leaf port of its speed.
    leaves = {d.name for d in plane.devices if d.role == "leaf"}
    nic_speed = {(s.name, n.interface): n.speed for s in plan.servers for n in s.nics}
    for link in plane.links:
        if link.kind == "host":
            assert link.b in leaves and nic_speed[(link.a, link.a_port)] == link.speed
    assert sum(len(s.nics) for s in plan.servers) == sum(1 for link in plane.links if link.kind == "host")
    # Oversubscription meets the target unless the user fixed the uplink count.
    fixed = any("uplinks" in r for r in doc["planes"]["compute"]["switches"].values())
    for tier in plane.tier_stats:
        assert fixed or tier.ratio <= tier.target + 1e-9 or any(w.startswith("compute: ") for w in plan.warnings)
    # Every leaf reaches every spine of its pod with the same number of links.
    per_pair = Counter((link.a, link.b) for link in plane.links if link.kind == "fabric" and link.a in leaves)
    assert len(set(per_pair.values())) <= 1
    # A failure domain (what one batch of a push takes down) cuts off no leaf that one of its switches
    # alone would leave connected.
    graph = switch_graph(plane)
    for domain in plane.failure_domains:
        alone = set().union(*(cut_off_leaves(plane, graph, [d]) for d in domain.devices))
        assert cut_off_leaves(plane, graph, domain.devices) <= alone, domain.name
