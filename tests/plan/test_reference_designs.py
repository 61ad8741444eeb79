"""The planner reproduces published designs: DGX SuperPOD H100 and textbook k-ary fat trees."""

from __future__ import annotations

import pytest
from conftest import INVENTORY, example_plan, plan_doc
from fabric_builders import kary_three_tier, kary_two_tier, role, single_plane, superpod

from gpufabric.intent import load_intent
from gpufabric.plan import build_plan


@pytest.mark.parametrize(("su", "leaves", "spines"), [(1, 8, 4), (2, 16, 8), (4, 32, 16)])
def test_superpod_switch_counts(su, leaves, spines):
    counts = plan_doc(superpod(su)).planes["compute"].count_by_role()
    assert counts == {"leaf": leaves, "spine": spines}


@pytest.mark.parametrize("su", [1, 2, 4])
def test_superpod_every_leaf_reaches_every_spine_evenly(su):
    plane = plan_doc(superpod(su)).planes["compute"]
    spines = [d.name for d in plane.devices if d.role == "spine"]
    per_pair: dict[tuple[str, str], int] = {}
    for link in plane.links:
        if link.kind == "fabric":
            per_pair[(link.a, link.b)] = per_pair.get((link.a, link.b), 0) + 1
    leaves = {a for a, _ in per_pair}
    assert len(per_pair) == len(leaves) * len(spines)
    assert set(per_pair.values()) == {32 // len(spines)}  # 32 uplinks spread evenly
    used = {}
    for link in plane.links:
        if link.kind == "fabric":
            used[link.b] = used.get(link.b, 0) + 1
    assert set(used.values()) == {64}  # every spine port is used: non-blocking, fully built


def test_superpod_rail_alignment():
    """NIC r of every node in an SU lands on that SU's leaf r, on the port of the node's position."""
    plan = plan_doc(superpod(2))
    for s in plan.servers:
        unit = s.units["compute"]
        for nic in s.nics:
            assert nic.leaf == f"c-su{unit}-leaf{nic.rail}"
    n33 = next(s for s in plan.servers if s.name == "n00033")
    assert n33.units["compute"] == 2
    assert [n.leaf_port for n in n33.nics] == ["swp1"] * 8


@pytest.mark.parametrize(("k", "leaves", "spines"), [(4, 4, 2), (8, 8, 4), (16, 16, 8)])
def test_kary_two_tier(k, leaves, spines):
    plane = plan_doc(kary_two_tier(k)).planes["compute"]
    assert plane.count_by_role() == {"leaf": leaves, "spine": spines}
    assert sum(1 for link in plane.links if link.kind == "host") == k * k // 2
    assert plane.tier_stats[0].ratio == 1.0


@pytest.mark.parametrize("k", [4, 8])
def test_kary_three_tier(k):
    plane = plan_doc(kary_three_tier(k)).planes["compute"]
    assert plane.count_by_role() == {"leaf": k * k // 2, "spine": k * k // 2, "superspine": (k // 2) ** 2}
    assert plane.sizing["pods"] == k
    assert sum(1 for link in plane.links if link.kind == "host") == k**3 // 4
    # Every superspine has exactly one link to every pod.
    pods_per_superspine: dict[str, set[int]] = {}
    pod_of = {d.name: d.pod for d in plane.devices}
    for link in plane.links:
        if link.kind == "fabric" and link.b.startswith("c-superspine"):
            pods_per_superspine.setdefault(link.b, set()).add(pod_of[link.a])
    assert all(p == set(range(1, k + 1)) for p in pods_per_superspine.values())
    assert [t.ratio for t in plane.tier_stats] == [1.0, 1.0]


@pytest.mark.slow
def test_three_tier_32k():
    plan = example_plan(INVENTORY / "examples" / "three-tier-32k.yml")
    plane = plan.planes["compute"]
    assert plane.count_by_role() == {"superspine": 256, "spine": 512, "leaf": 512}
    assert sum(s.gpus for s in plan.servers) == 32768
    assert sum(1 for link in plane.links if link.kind == "host") == 32768
    assert sum(1 for link in plane.links if link.kind == "fabric") == 65536
    assert [t.ratio for t in plane.tier_stats] == [1.0, 1.0]


def test_oversubscribed_leaf():
    """48 x 100G down, 3:1 target: 16 x 100G up on a 64-port leaf."""
    doc = single_plane(
        96,
        1,
        {"leaf": role(64, "100G"), "spine": role(64, "100G")},
        topology="clos",
        nic_speed="100G",
        oversubscription="3:1",
    )
    plane = plan_doc(doc).planes["compute"]
    assert plane.sizing["unit_nodes"] == 48
    assert plane.sizing["leaf_uplinks"] == 16
    assert plane.tier_stats[0].ratio == 3.0
    assert plane.count_by_role() == {"leaf": 2, "spine": 2}


def test_mixed_speeds_breakout():
    """400G leaf uplinks into 800G spine ports split 2x400G: a spine takes 128 leaf uplinks."""
    doc = single_plane(
        256,
        8,
        {"leaf": role(64, "400G"), "spine": role(64, "800G", downlink_speed="400G")},
        unit_nodes=32,
    )
    plan = plan_doc(doc)
    plane = plan.planes["compute"]
    assert plane.count_by_role() == {"leaf": 64, "spine": 16}
    spine_ports = {link.b_port for link in plane.links if link.kind == "fabric" and link.b == "c-spine1"}
    assert "swp1s0" in spine_ports and "swp1s1" in spine_ports and len(spine_ports) == 128
    assert all(link.speed == 400 for link in plane.links)
    # One 800G module per split spine cage, one 400G module per leaf port.
    from gpufabric.export.bom import plane_bom

    modules = plane_bom(plane).transceivers
    assert modules["800G module (breakout 2x400G)"] == 16 * 64
    assert modules["400G module"] == 64 * 64


def test_asns_follow_rfc7938():
    plane = plan_doc(kary_three_tier(4)).planes["compute"]
    by_role: dict[str, list] = {}
    for d in plane.devices:
        by_role.setdefault(d.role, []).append(d)
    assert {d.asn for d in by_role["superspine"]} == {4200000000}
    pod_asns = {d.pod: d.asn for d in by_role["spine"]}
    assert all(d.asn == pod_asns[d.pod] for d in by_role["spine"])  # spines of one pod share an ASN
    assert len(set(pod_asns.values())) == 4
    leaf_asns = [d.asn for d in by_role["leaf"]]
    assert len(set(leaf_asns)) == len(leaf_asns)  # each leaf its own
    assert all(4200000000 <= a <= 4294967294 for a in leaf_asns)


def test_p2p31_addresses_pair_up(default_plan):
    plane = default_plan.planes["storage"]
    seen = set()
    for link in plane.links:
        if link.kind != "fabric":
            continue
        assert link.prefixlen == 31 and link.b_ip % 2 == 0 and link.a_ip == link.b_ip + 1
        assert link.b_ip not in seen
        seen.add(link.b_ip)


def test_host_ports_are_routed_31s(default_plan):
    for s in default_plan.servers:
        for nic in s.nics:
            assert nic.prefixlen == 31 and nic.gateway == nic.address - 1


def test_lacp_hosts_share_a_unit_subnet():
    plan = example_plan(INVENTORY / "examples" / "multi-vendor.yml")
    storage = [n for s in plan.servers for n in s.nics if n.plane == "storage"]
    by_server: dict[tuple[int, int], set[str]] = {}
    for nic in storage:
        assert nic.bond == "bond-storage"
        by_server.setdefault((nic.address, nic.gateway), set()).add(nic.leaf)
    # Both NICs of a server carry one bond address and land on the two leaves of a pair.
    assert all(len(leaves) == 2 for leaves in by_server.values())


def test_failure_domains_never_cut_a_server_off(default_plan):
    for plane in default_plan.planes.values():
        for domain in plane.failure_domains:
            down = set(domain.devices)
            for s in default_plan.servers:
                leaves = {n.leaf for n in s.nics if n.plane == plane.name}
                if leaves and len(leaves) > 1:
                    assert leaves - down, f"{domain.name} takes every {plane.name} leaf of {s.name}"
        spines = [d for d in plane.devices if d.role == "spine"]
        assert all(len(f.devices) == 1 for f in plane.failure_domains if f.devices[0] in {s.name for s in spines})


def test_oob_gives_every_device_and_server_an_address(default_plan):
    addresses = [d.mgmt_ip for d in default_plan.devices()] + [s.mgmt_ip for s in default_plan.servers]
    assert None not in addresses
    assert len(set(addresses)) == len(addresses)
    gateway = int.from_bytes(bytes([172, 20, 0, 1]), "big")
    assert gateway not in addresses


@pytest.fixture(scope="module")
def rail_28k():
    return example_plan(INVENTORY / "examples" / "rail-28k.yml")


@pytest.mark.slow
def test_the_28k_rail_design_plans_to_its_published_counts(rail_28k):
    """3,584 servers of 8 GPUs, 32 groups of 112; 8 rail leaves of 128 x 400G per group; 64 x 800G spines."""
    plane = rail_28k.planes["compute"]
    assert plane.count_by_role() == {"leaf": 256, "spine": 32}
    assert sum(s.gpus for s in rail_28k.servers) == 28_672
    fabric = [link for link in plane.links if link.kind == "fabric"]
    per_spine: dict[str, int] = {}
    for link in fabric:
        per_spine[link.b] = per_spine.get(link.b, 0) + 1
    assert len(per_spine) == 32 and set(per_spine.values()) == {128}  # every spine port used (64 x 800G split)
    assert len(fabric) == 256 * 16  # 16 uplinks per leaf: 7:1
    assert plane.sizing["spine_groups"] == 2 and plane.sizing["spines_per_group"] == 16


@pytest.mark.slow
def test_the_28k_rail_design_spreads_each_leaf_over_its_rail_group(rail_28k):
    plane = rail_28k.planes["compute"]
    rail = {d.name: d.rail for d in plane.devices if d.role == "leaf"}
    spines_of: dict[str, list[str]] = {}
    for link in plane.links:
        if link.kind == "fabric":
            spines_of.setdefault(link.a, []).append(link.b)
    for spines in spines_of.values():
        assert len(spines) == len(set(spines)) == 16  # one link to each of 16 spines: ECMP 16 wide
    group = {r: frozenset().union(*(set(spines_of[n]) for n in rail if rail[n] == r)) for r in range(1, 9)}
    assert all(len(g) == 16 for g in group.values())
    assert group[1] == group[2] == group[3] == group[4] != group[5] == group[6] == group[7] == group[8]
    assert not group[1] & group[5]
    asns = [d.asn for d in plane.devices if d.role == "leaf"]
    assert len(set(asns)) == 256  # RFC 7938: a private ASN per leaf, one for the spines
    assert len({d.asn for d in plane.devices if d.role == "spine"}) == 1


@pytest.mark.slow
def test_the_28k_rail_design_keeps_same_rail_gpus_leaf_spine_leaf_apart(rail_28k):
    from gpufabric.export.plan_json import plane_summary
    from gpufabric.plan.ecmp import expected_widths

    plane = rail_28k.planes["compute"]
    reach = plane_summary(plane)["rail_reach"]
    assert reach == {"same_rail_leaf_spine_leaf": True, "rail_groups": [[1, 2, 3, 4], [5, 6, 7, 8]]}
    leaves = [d for d in plane.devices if d.role == "leaf"]
    first = next(d for d in leaves if d.unit == 1 and d.rail == 1)
    widths = expected_widths(rail_28k, "compute", {d.name: 64 for d in plane.devices})[first.name]
    loop = {d.name: f"{d.loopback >> 24}.{d.loopback >> 16 & 255}.{d.loopback >> 8 & 255}.{d.loopback & 255}/32"
            for d in leaves}  # fmt: skip
    far_same_rail = next(d for d in leaves if d.unit == 32 and d.rail == 1)
    other_rail_same_group = next(d for d in leaves if d.unit == 32 and d.rail == 4)
    other_group = next(d for d in leaves if d.unit == 1 and d.rail == 5)
    assert widths[loop[far_same_rail.name]] == 16  # through every spine of the group
    assert widths[loop[other_rail_same_group.name]] == 16
    assert loop[other_group.name] not in widths  # only through the servers


def test_a_spine_count_that_cannot_group_says_what_would(tmp_path):
    text = (INVENTORY / "examples" / "rail-28k.yml").read_text()
    bad = text.replace("downlink_speed: 400G}", "downlink_speed: 400G, count: 24}")
    (tmp_path / "bad.yml").write_text(bad)
    with pytest.raises(Exception) as caught:
        build_plan(load_intent(str(tmp_path / "bad.yml")))
    assert "groups" in str(getattr(caught.value, "problems", caught.value))
    good = text.replace("downlink_speed: 400G}", "downlink_speed: 400G, count: 32}")
    (tmp_path / "good.yml").write_text(good)
    assert build_plan(load_intent(str(tmp_path / "good.yml"))).planes["compute"].count_by_role()["spine"] == 32
