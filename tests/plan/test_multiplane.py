"""A compute plane built as several independent planes (`multiplane:`): the published design it reproduces,
what keeps the planes apart, and the intents it refuses."""

from __future__ import annotations

import copy
from ipaddress import IPv4Address, IPv4Network
from typing import Any

import pytest
import yaml
from conftest import INVENTORY, example_plan, plan_doc
from fabric_builders import role, single_plane

from gpufabric.export import bom, cabling, inventory, k8s_labels
from gpufabric.export.k8s_network import rails
from gpufabric.intent import IntentError, load_intent_text
from gpufabric.plan.model import Plan, ip
from gpufabric.plan.multiplane import nic_plane, parts, planes_of
from gpufabric.push.targets import batches

EXAMPLE = INVENTORY / "examples" / "multiplane-b300.yml"


def mpft(servers: int = 2048) -> dict[str, Any]:
    """DeepSeek's multi-plane fat tree: 8 GPUs and 8 400G NICs a node, NIC i on plane i, each plane a
    two-tier fat tree of 64-port 400G switches (a leaf: 32 hosts down, 32 up)."""
    doc = single_plane(
        servers,
        8,
        {"leaf": role(64, "400G"), "spine": role(64, "400G")},
        unit_nodes=32,
        multiplane={"planes": 8, "ports": "blocked"},
    )
    return doc


# -- the published design ------------------------------------------------------------------------------------


def test_deepseek_multi_plane_fat_tree_switch_and_cable_counts():
    """Reference: C. Zhao et al. (DeepSeek-AI), "Insights into DeepSeek-V3: Scaling Challenges and Reflections
    on Hardware for AI Architectures", ISCA 2025, https://arxiv.org/abs/2505.09343: the multi-plane fat tree
    (MPFT), eight planes, each node's 8 GPUs with 8 400G InfiniBand NICs, each GPU-NIC pair on its own plane,
    each plane a two-layer fat tree; its topology comparison table gives MPFT 16,384 endpoints and 768
    switches (figures read as quoted from that table in "MPFT: Multi-Plane Fat-Tree for Massive Scale and
    Cost Efficiency", https://eeumee.net/tag/networkarchitecture; the paper's page was found, its table not).

    Planned from the stated shape: 768 / 8 = 96 switches and 16,384 / 8 = 2,048 endpoints a plane, which is
    the two-tier fat tree of radix 64 (k^2/2 endpoints, 3k/2 switches): 64-port 400G switches, 64 leaves and
    32 spines a plane. One cable per endpoint (its NIC to its leaf) and 2,048 leaf-spine cables a plane
    follow from that design, not from a published figure."""
    plan = plan_doc(mpft())
    plane = plan.planes["compute"]
    assert planes_of(plane) == 8
    assert sum(s.gpus for s in plan.servers) == 16_384
    assert len(plane.devices) == 768
    host = [link for link in plane.links if link.kind == "host"]
    fabric = [link for link in plane.links if link.kind == "fabric"]
    assert len(host) == 16_384  # one per endpoint
    for name, one in parts("compute", plane):
        assert one.count_by_role() == {"leaf": 64, "spine": 32}, name
        assert sum(1 for link in one.links if link.kind == "fabric") == 2048
    assert len(fabric) == 8 * 2048
    assert [t.ratio for t in plane.tier_stats] == [1.0]


def test_a_smaller_mpft_keeps_each_nic_on_its_own_plane():
    """The same design at 4 units (128 nodes): NIC i of every node lands on plane i + 1."""
    plan = plan_doc(mpft(128))
    plane = plan.planes["compute"]
    for server in plan.servers[:40]:
        assert [nic_plane(plan, nic) for nic in server.nics] == list(range(1, 9))
        assert [nic.interface for nic in server.nics] == [f"e{i}" for i in range(8)]
    assert {name: one.count_by_role() for name, one in parts("compute", plane)} == {
        f"compute-p{k}": {"leaf": 4, "spine": 2} for k in range(1, 9)
    }


# -- the dual-plane example ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dual() -> Plan:
    return example_plan(EXAMPLE)


def test_example_counts(dual):
    plane = dual.planes["compute"]
    assert planes_of(plane) == 2
    assert plane.count_by_role() == {"leaf": 32, "spine": 4}
    assert sorted({d.name.split("-")[1] for d in plane.devices}) == ["p1", "p2"]
    assert sum(1 for link in plane.links if link.kind == "host") == 16 * 16
    assert plane.sizing["planes"] == 2


def test_no_cable_joins_two_planes(dual):
    plane = dual.planes["compute"]
    of = plane.plane_of
    for link in plane.links:
        if link.kind == "fabric":
            assert of[link.a] == of[link.b], link
        else:
            assert link.b in of


def test_a_supernics_ports_spread_over_the_planes(dual):
    """`ports: interleaved`: SuperNIC r's port 0 on plane 1, port 1 on plane 2, both rail r."""
    hgx = dual.servers[0]
    by_interface = {nic.interface: (nic_plane(dual, nic), nic.rail, nic.leaf) for nic in hgx.nics}
    assert by_interface["enp24s0f0np0"] == (1, 1, "cmp-p1-su1-leaf1")
    assert by_interface["enp24s0f1np1"] == (2, 1, "cmp-p2-su1-leaf1")
    assert by_interface["enp219s0f1np1"] == (2, 8, "cmp-p2-su1-leaf8")


def test_each_plane_has_its_own_pools_and_asns(dual):
    plane = dual.planes["compute"]
    loopbacks = {1: IPv4Network("10.0.0.0/24"), 2: IPv4Network("10.0.1.0/24")}
    hosts = {1: IPv4Network("10.128.0.0/16"), 2: IPv4Network("10.129.0.0/16")}
    asns: dict[int, set[int]] = {1: set(), 2: set()}
    for d in plane.devices:
        k = plane.plane_of[d.name]
        assert IPv4Address(ip(d.loopback)) in loopbacks[k]
        assert d.asn is not None
        asns[k].add(d.asn)
    assert asns[1] and asns[2] and not asns[1] & asns[2]
    assert max(asns[1]) < 4200005000 <= min(asns[2])  # each plane its half of 4200000000-4200009999
    for s in dual.servers:
        for nic in s.nics:
            assert IPv4Address(ip(nic.address)) in hosts[nic_plane(dual, nic)]  # type: ignore[index]


def test_failure_domains_are_per_plane(dual):
    plane = dual.planes["compute"]
    for domain in plane.failure_domains:
        members = {plane.plane_of[n] for n in domain.devices}
        assert len(members) == 1
        assert domain.name.startswith(f"compute:p{members.pop()}-")
    names = [f.name for f in plane.failure_domains]
    assert len(names) == len(set(names))


def test_push_goes_plane_by_plane_never_two_planes_at_once(dual):
    plane_of = dual.planes["compute"].plane_of
    seen: list[int] = []
    for b in batches(dual, dual.devices(), None):
        mine = {plane_of[n] for n in b.devices if n in plane_of}
        assert len(mine) <= 1, b
        if mine:
            k = mine.pop()
            if not seen or seen[-1] != k:
                seen.append(k)
    assert seen == [1, 2]  # all of plane 1, then all of plane 2


def test_bom_and_cabling_list_each_plane(dual):
    rows = [r.split(",") for r in bom.render(dual).splitlines()[1:]]
    leaves = {r[0]: int(r[-1]) for r in rows if "leaf)" in ",".join(r[2:-1])}
    assert leaves == {"compute-p1": 16, "compute-p2": 16, "total": 32}
    planes = {line.split(",")[1] for line in cabling.render(dual).splitlines()[1:]}
    assert planes == {"compute-p1", "compute-p2", "oob"}


def test_kubernetes_sees_a_rail_per_plane(dual):
    labels = yaml.safe_load(k8s_labels.render(dual))["hgx01"]
    assert labels["gpufabric.io/compute-p1-rail3-leaf"] == "cmp-p1-su1-leaf3"
    assert labels["gpufabric.io/compute-p2-rail3-leaf"] == "cmp-p2-su1-leaf3"
    assert "gpufabric.io/compute-rail3-leaf" not in labels
    found = rails(dual)
    assert [r.name for r in found][:3] == ["compute-p1-rail1", "compute-p1-rail2", "compute-p1-rail3"]
    assert len(found) == 16 and {r.resource for r in found} >= {"compute_p2_rail8"}
    assert all(len(r.nics) == 16 for r in found)


def test_one_plane_is_unchanged(default_plan):
    assert all(not p.plane_of for p in default_plan.planes.values())
    assert [name for name, _ in parts("compute", default_plan.planes["compute"])] == ["compute"]


# -- refused ----------------------------------------------------------------------------------------------------


def _example() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())


def _refused(doc: dict[str, Any]) -> IntentError:
    with pytest.raises(IntentError) as info:
        load_intent_text(yaml.safe_dump(doc, sort_keys=False), "multiplane.yml")
    return info.value


def _at(error: IntentError, *path: str | int) -> list[str]:
    found = [p for p in error.problems if p.path == path]
    assert all(error.line_of(p.path) is not None for p in found)
    return [p.message for p in found]


def test_interfaces_that_do_not_share_out_are_refused():
    doc = _example()
    doc["server_groups"][0]["nics"]["compute"]["interfaces"] = [f"eth{i}" for i in range(1, 16)]
    error = _refused(doc)
    assert _at(error, "server_groups", 0, "nics", "compute", "interfaces") == [
        "15 compute interfaces do not share out evenly over 2 planes"
    ]


def test_rails_with_multiplane_are_refused():
    doc = _example()
    nics = doc["server_groups"][0]["nics"]["compute"]
    nics["rails"] = list(range(1, 17))
    assert _at(_refused(doc), "server_groups", 0, "nics", "compute", "rails")


def test_multiplane_on_another_plane_is_refused():
    doc = copy.deepcopy(yaml.safe_load((INVENTORY / "fabric.yml").read_text()))
    doc["planes"]["storage"]["multiplane"] = {"planes": 2}
    assert _at(_refused(doc), "planes", "storage", "multiplane") == [
        "only the compute plane can be built as several planes, not the storage plane"
    ]


@pytest.mark.parametrize("value", [1, 9, "2", 2.0, True])
def test_a_plane_count_out_of_range_or_not_a_whole_number_is_refused(value):
    doc = _example()
    doc["planes"]["compute"]["multiplane"]["planes"] = value
    assert _at(_refused(doc), "planes", "compute", "multiplane", "planes")


def test_an_unknown_mapping_is_refused():
    doc = _example()
    doc["planes"]["compute"]["multiplane"]["ports"] = "random"
    assert _at(_refused(doc), "planes", "compute", "multiplane", "ports")


def test_pools_too_small_to_share_are_refused():
    doc = _example()
    doc["planes"]["compute"]["addressing"]["loopbacks"] = "10.0.0.0/31"
    doc["planes"]["compute"]["routing"]["asn_pool"] = "4200000000-4200000000"
    error = _refused(doc)
    assert _at(error, "planes", "compute", "addressing", "loopbacks") == [
        "10.0.0.0/31 cannot be cut into 2 shares of at least a /31, one per plane"
    ]
    assert _at(error, "planes", "compute", "routing", "asn_pool") == ["1 ASNs cannot be shared out over 2 planes"]


def test_a_share_too_small_for_its_plane_says_so():
    """A /24 of loopbacks fits 36 switches, but each plane takes a /25: still enough. A /27 is not."""
    doc = _example()
    doc["planes"]["compute"]["addressing"]["loopbacks"] = "10.0.0.0/27"
    with pytest.raises(IntentError) as info:
        plan_doc(doc)
    messages = [p.message for p in info.value.problems if p.path[-1] == "loopbacks"]
    assert len(messages) == 1 and messages[0].startswith("plane 1 of 2 takes 1/2 of this pool: ")


def test_lacp_hosts_are_refused():
    doc = _example()
    doc["planes"]["compute"]["host_links"] = "lacp"
    assert _at(_refused(doc), "planes", "compute", "multiplane", "planes")


def test_three_planes_take_quarters_of_the_pools_and_thirds_of_the_asns():
    """`blocked`: the first third of the interfaces on plane 1; pools cut in four (one share unused)."""
    doc = single_plane(8, 6, {"leaf": role(64, "400G"), "spine": role(64, "400G")}, unit_nodes=4)
    doc["planes"]["compute"] |= {
        "multiplane": {"planes": 3, "ports": "blocked"},
        "routing": {"asn_pool": "4200000000-4200000029"},
        "addressing": {"loopbacks": "10.0.0.0/24", "hosts": "10.128.0.0/16"},
    }
    plan = plan_doc(doc)
    plane = plan.planes["compute"]
    assert planes_of(plane) == 3
    first = plan.servers[0]
    assert [(n.interface, nic_plane(plan, n), n.rail) for n in first.nics] == [
        ("e0", 1, 1), ("e1", 1, 2), ("e2", 2, 1), ("e3", 2, 2), ("e4", 3, 1), ("e5", 3, 2),
    ]  # fmt: skip
    shares = {1: "10.0.0.0/26", 2: "10.0.0.64/26", 3: "10.0.0.128/26"}
    asns = {1: range(4200000000, 4200000010), 2: range(4200000010, 4200000020), 3: range(4200000020, 4200000030)}
    for d in plane.devices:
        k = plane.plane_of[d.name]
        assert IPv4Address(ip(d.loopback)) in IPv4Network(shares[k])
        assert d.asn in asns[k]


def test_quad_plane_supernics():
    """Spectrum-X quad plane: each SuperNIC's four 200G ports on four planes (`interleaved`)."""
    doc = single_plane(
        8, 32, {"leaf": role(64, "800G", downlink_speed="200G"), "spine": role(64, "800G")}, nic_speed="200G",
        unit_nodes=8, multiplane={"planes": 4},
    )  # fmt: skip
    plan = plan_doc(doc)
    plane = plan.planes["compute"]
    assert planes_of(plane) == 4
    assert {name: one.count_by_role()["leaf"] for name, one in parts("compute", plane)} == {
        f"compute-p{k}": 8 for k in range(1, 5)
    }
    nic = {n.interface: n for n in plan.servers[0].nics}
    assert [nic_plane(plan, nic[f"e{i}"]) for i in range(8)] == [1, 2, 3, 4, 1, 2, 3, 4]
    assert [nic[f"e{i}"].rail for i in range(8)] == [1, 1, 1, 1, 2, 2, 2, 2]


def test_an_unknown_multiplane_key_is_refused():
    doc = _example()
    doc["planes"]["compute"]["multiplane"]["plane"] = 2
    assert _at(_refused(doc), "planes", "compute", "multiplane", "plane")


def test_more_than_sixteen_rails_a_plane_are_refused():
    doc = copy.deepcopy(yaml.safe_load((INVENTORY / "fabric.yml").read_text()))
    doc["server_groups"][0]["nics"]["compute"]["interfaces"] = [f"eth{i}" for i in range(10, 27)]
    assert _at(_refused(doc), "server_groups", 0, "nics", "compute", "interfaces") == [
        "17 interfaces: more than the 16 rails a plane can have"
    ]
    doc = _example()
    doc["server_groups"][0]["nics"]["compute"]["interfaces"] = [f"eth{i}" for i in range(10, 44)]
    assert _at(_refused(doc), "server_groups", 0, "nics", "compute", "interfaces") == [
        "34 interfaces over 2 planes: more than the 16 rails a plane can have"
    ]


def test_the_inventory_groups_each_planes_switches(dual):
    switches = [h for h in inventory.build(dual) if "switches" in h.groups]
    compute = [h for h in switches if h.data["plane"] == "compute"]
    assert {h.name for h in compute if "compute_p2" in h.groups} == {
        n for n, k in dual.planes["compute"].plane_of.items() if k == 2
    }
    assert all(h.data["fabric_plane"] == (1 if "compute_p1" in h.groups else 2) for h in compute)
    assert all("fabric_plane" not in h.data for h in switches if h.data["plane"] == "oob")


def test_growth_installs_both_planes_of_a_unit_together():
    """9 of 16 nodes installed: unit 2's leaves on both planes stand (node 9 uses them), none more; a
    build-out of 32 nodes leaves units 3-4 out on both planes, and `plane_of` names only what stands."""
    doc = _example()
    doc["server_groups"][0] |= {"count": 9, "build_out": 32}
    plan = plan_doc(doc)
    plane = plan.planes["compute"]
    assert plane.count_by_role()["leaf"] == 2 * 2 * 8
    assert set(plane.plane_of) == {d.name for d in plane.devices}
    assert sum(1 for link in plane.links if link.kind == "host") == 9 * 16


def test_a_leaf_too_small_for_every_plane_is_said_once():
    doc = _example()
    doc["planes"]["compute"]["switches"]["leaf"]["ports"] = 4
    with pytest.raises(IntentError) as info:
        plan_doc(doc)
    at = [p for p in info.value.problems if p.path == ("planes", "compute", "switches", "leaf", "ports")]
    assert len(at) == 1 and "needs" in at[0].message and info.value.line_of(at[0].path) is not None


def test_one_plane_of_a_multiplane_compute_plane_is_selected_by_its_exported_name(dual):
    """`--plane compute-p2` selects that plane's switches, as the exports name it; a plane the intent does not
    build selects none."""
    from gpufabric.fleet.select import select

    plane_of = dual.planes["compute"].plane_of
    labels = dict(parts("compute", dual.planes["compute"]))
    for index in (1, 2):
        chosen = select(dual, f"compute-p{index}", (), None)
        assert chosen and {d.name for d in chosen} == {d.name for d in labels[f"compute-p{index}"].devices}
        assert all(plane_of[d.name] == index for d in chosen)
    assert {d.name for d in select(dual, "compute", (), None)} == set(plane_of)  # the whole plane, as before
    assert select(dual, "compute-p3", (), None) == []
    assert [d.name for d in select(dual, "compute-p1", (), "spine")] == [
        d.name for d in labels["compute-p1"].devices if d.role == "spine"
    ]


def test_an_incast_of_one_plane_reads_the_counters_of_the_switches_it_crosses(dual):
    """`acceptance counters` finds a job's switches among the compute plane's, whichever plane the job names."""
    from gpufabric.acceptance.suite import build_suite
    from gpufabric.fleet.select import base_plane
    from gpufabric.telemetry.targets import switch_targets

    job = next(j for j in build_suite(dual).incast if j.plane == "compute-p2")
    assert base_plane(job.plane) == "compute" and base_plane("storage") == "storage"
    found = {t.device for t in switch_targets(dual, base_plane(job.plane))}
    assert job.crosses and set(job.crosses) <= found
    assert all(n.startswith("cmp-p2-") for n in job.crosses)
    assert switch_targets(dual, job.plane) == []  # the job's own name is no plane of the intent
