"""A converged plane's plan: carried planes' addresses at their ports' places, hosts that join only carried
planes, the switches that hold the VRFs, and the classes of the scheduler."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network

from gpufabric.config.context import LinkIndex, build
from gpufabric.export.plan_json import nic_dict
from gpufabric.plan.model import ip
from tests.conftest import INVENTORY, example_plan

INBAND = INVENTORY / "examples" / "converged-inband.yml"
STORAGE = INVENTORY / "examples" / "converged-north-south.yml"


def test_one_fabric_carries_every_plane_without_switches_of_its_own():
    plan = example_plan(INBAND)
    assert set(plan.planes) == {"compute", "business", "oob"}
    assert [(c.name, c.vrf, c.vlan) for c in plan.planes["business"].carried] == [
        ("storage", "STORAGE", 20),
        ("inband", "INBAND", 30),
    ]
    assert plan.planes["business"].count_by_role() == {"leaf": 4, "spine": 2, "border": 2}


def test_a_gpu_nic_keeps_its_business_address_and_gets_a_tagged_one_per_carried_plane():
    plan = example_plan(INBAND)
    server = next(s for s in plan.servers if s.name == "gpu01")
    nic = next(n for n in server.nics if n.plane == "business" and n.interface == "ens7f0np0")
    assert nic.native and IPv4Address(ip(nic.address)) in IPv4Network("10.12.0.0/16")
    offset = nic.address - int(IPv4Address("10.12.0.0"))
    tagged = {c.plane: c for c in nic.carried}
    assert tagged["storage"].interface == "ens7f0np0.20" and tagged["storage"].vrf == "STORAGE"
    assert tagged["storage"].address == int(IPv4Address("10.11.0.0")) + offset
    assert tagged["inband"].address == int(IPv4Address("10.13.0.0")) + offset
    assert tagged["inband"].gateway == tagged["inband"].address ^ 1 == int(IPv4Address("10.13.0.0")) + offset - 1
    exported = nic_dict(nic)
    assert [v["interface"] for v in exported["vlans"]] == ["ens7f0np0.20", "ens7f0np0.30"]
    assert exported["address"] == ip(nic.address)


def test_a_storage_server_has_no_business_address_on_its_untagged_port():
    plan = example_plan(INBAND)
    server = next(s for s in plan.servers if s.group == "nvme")
    for nic in (n for n in server.nics if n.plane == "business"):
        assert not nic.native
        assert [c.plane for c in nic.carried] == ["storage", "inband"]
        assert nic_dict(nic)["address"] is None
    links = [lk for lk in plan.planes["business"].links if lk.kind == "host" and lk.a == server.name]
    assert links and all(lk.a_ip is None and lk.b_ip is None for lk in links)


def test_storage_servers_join_only_the_planes_that_name_them():
    plan = example_plan(STORAGE)
    nvme = next(s for s in plan.servers if s.group == "nvme")
    gpu = next(s for s in plan.servers if s.group == "gpu")
    assert {c.plane for n in nvme.nics for c in n.carried} == {"storage"}
    assert {c.plane for n in gpu.nics for c in n.carried} == {"storage"}


def test_leaves_and_spines_hold_the_vrfs_and_borders_hold_none():
    plan = example_plan(INBAND)
    index = LinkIndex(plan)
    by_role: dict[str, set[str]] = {}
    for d in plan.planes["business"].devices:
        ctx = build(plan, d, index)
        vrfs = {v.vrf for v in ctx.converged.vrfs} if ctx.converged else set()
        by_role.setdefault(d.role, set()).update(vrfs)
        if d.role == "spine":
            assert ctx.converged is not None
            peers = {s.peer for v in ctx.converged.vrfs for s in v.ports}
            assert not any(p.startswith("ns-border") for p in peers)  # no VRF toward a border
    assert by_role == {"leaf": {"STORAGE", "INBAND"}, "spine": {"STORAGE", "INBAND"}, "border": set()}


def test_each_fabric_link_has_a_31_per_vrf_at_its_place_in_the_p2p_pool():
    plan = example_plan(INBAND)
    index = LinkIndex(plan)
    leaf = next(d for d in plan.planes["business"].devices if d.role == "leaf")
    ctx = build(plan, leaf, index)
    assert ctx.converged is not None
    fabric = {p.name: p.address for p in ctx.ports if p.kind == "fabric"}
    storage = next(v for v in ctx.converged.vrfs if v.vrf == "STORAGE")
    for sub in (s for s in storage.ports if s.kind == "fabric"):
        assert sub.address is not None
        own = fabric[sub.parent]
        assert own is not None
        shift = int(IPv4Address("10.21.0.0")) - int(IPv4Address("10.22.0.0"))
        assert int(IPv4Address(sub.address.split("/")[0])) == int(IPv4Address(own.split("/")[0])) + shift
    sessions = {n.address for n in storage.neighbors}
    assert len(sessions) == len(fabric) == 6


def test_the_scheduler_gives_every_class_its_share():
    plan = example_plan(INBAND)
    leaf = next(d for d in plan.planes["business"].devices if d.role == "leaf")
    ctx = build(plan, leaf, LinkIndex(plan))
    assert ctx.converged is not None
    classes = [(c.name, c.priority, c.dscp, c.bandwidth_percent, c.lossless) for c in ctx.converged.classes]
    assert classes == [
        ("cnp", 6, (48,), None, False),
        ("storage", 3, (26,), 50, True),
        ("inband", 2, (16, 18), 10, False),
        ("default", 0, (), 40, False),
    ]
    assert ctx.converged.dscp_map() == [(16, 2), (18, 2), (26, 3), (48, 6)]
