"""Exports of a converged plane: one fabric, counted once, carrying several planes by tag."""

from __future__ import annotations

import csv
import io
import json

from gpufabric.export import bom, cabling, drawing, inventory, k8s_network, plan_json
from tests.conftest import INVENTORY, example_plan

INBAND = INVENTORY / "examples" / "converged-inband.yml"


def test_the_bom_counts_the_fabric_once_and_nothing_for_the_carried_planes():
    plan = example_plan(INBAND)
    rows = list(csv.reader(io.StringIO(bom.render(plan))))
    planes = {r[0] for r in rows[1:]}
    assert "storage" not in planes and "inband" not in planes
    switches = sum(int(r[3]) for r in rows[1:] if r[0] == "business" and r[1] == "switch")
    assert switches == len(plan.planes["business"].devices) == 8
    total = sum(int(r[3]) for r in rows[1:] if r[0] == "total" and r[1] == "switch")
    assert total == len(plan.devices())


def test_the_cabling_plan_says_which_planes_each_cable_carries():
    plan = example_plan(INBAND)
    rows = list(csv.DictReader(io.StringIO(cabling.render(plan))))
    assert "carries" in rows[0]
    business = [r for r in rows if r["plane"] == "business"]
    by_end = {(r["a_device"], r["kind"]): r["carries"] for r in business}
    assert by_end[("gpu01", "host")] == "storage:20 inband:30"
    assert by_end[("nvme01", "host")] == "storage:20 inband:30"
    border_uplinks = [r for r in business if r["kind"] == "fabric" and r["a_device"].startswith("ns-border")]
    assert border_uplinks and {r["carries"] for r in border_uplinks} == {""}
    assert {r["carries"] for r in business if r["kind"] == "edge"} == {""}
    assert {r["carries"] for r in rows if r["plane"] == "compute"} == {""}
    # a plan without carried planes keeps its columns
    assert "carries" not in cabling.render(example_plan(INVENTORY / "examples" / "multi-vendor.yml")).splitlines()[0]


def test_the_drawing_names_the_carried_planes():
    plan = example_plan(INBAND)
    dot = drawing.plane_dot(plan, plan.planes["business"])
    assert (
        "carries storage (VRF STORAGE, VLAN 20, lossless, 50%), inband (VRF INBAND, VLAN 30, lossy, priority 2, 10%)"
        in dot
    )


def test_inventories_give_switches_their_vrfs_and_hosts_their_tagged_addresses():
    plan = example_plan(INBAND)
    hosts = {h.name: h for h in inventory.build(plan)}
    spine = hosts["ns-spine1"]
    assert spine.data["carries"] == [
        {"plane": "storage", "vrf": "STORAGE", "vlan": 20},
        {"plane": "inband", "vrf": "INBAND", "vlan": 30},
    ]
    assert {"carries_storage", "carries_inband"} <= set(spine.groups)
    assert "carries" not in hosts["ns-border1"].data
    nvme = hosts["nvme01"].data["nics"]
    first = next(n for n in nvme if n["plane"] == "business")
    assert first["address"] is None
    assert [(v["interface"], v["vrf"]) for v in first["vlans"]] == [
        (f"{first['interface']}.20", "STORAGE"),
        (f"{first['interface']}.30", "INBAND"),
    ]
    assert first["vlans"][0]["address"].startswith("10.11.")
    facts = inventory.plane_facts(plan)["business"]["carries"]
    assert [(c["plane"], c["traffic"], c["dscp"], c["bandwidth_percent"]) for c in facts] == [
        ("storage", "lossless", [], 50),
        ("inband", "lossy", [16, 18], 10),
    ]


def test_the_plan_export_and_summary_carry_the_carried_planes():
    plan = example_plan(INBAND)
    doc = json.loads(plan_json.render(plan))
    assert [c["vrf"] for c in doc["planes"]["business"]["carries"]] == ["STORAGE", "INBAND"]
    assert [c["plane"] for c in plan_json.summary(plan)["planes"]["business"]["carries"]] == ["storage", "inband"]


def test_no_kubernetes_rail_takes_a_converged_nic_whole():
    plan = example_plan(INBAND)
    assert {r.plane.name for r in k8s_network.rails(plan)} == {"compute"}


def test_the_structured_config_carries_the_vrfs_and_classes():
    from gpufabric.config.context import LinkIndex, build
    from gpufabric.export.structured import structured

    plan = example_plan(INBAND)
    index = LinkIndex(plan)
    leaf = next(d for d in plan.planes["business"].devices if d.role == "leaf")
    doc = structured(build(plan, leaf, index))
    assert [v["vrf"] for v in doc["carried"]["vrfs"]] == ["STORAGE", "INBAND"]
    assert doc["carried"]["classes"][1] == {
        "name": "storage",
        "priority": 3,
        "dscp": [26],
        "bandwidth_percent": 50,
        "lossless": True,
    }
    border = next(d for d in plan.planes["business"].devices if d.role == "border")
    assert "carried" not in structured(build(plan, border, index))


def test_anta_checks_each_carried_vrf_session_on_a_converged_eos_switch() -> None:
    """ANTA's own VerifyBGPPeerSession, on `show bgp neighbors vrf all` answers written in EOS's JSON form: every
    planned session of each VRF established passes; one STORAGE session down, or absent, fails."""
    import asyncio

    from anta.device import AsyncEOSDevice
    from anta.tests.routing.bgp import VerifyBGPPeerSession

    from gpufabric.export import anta

    plan = example_plan(INBAND)
    catalog = anta.catalogs(plan)["ns-leaf1a"]
    section = catalog["anta.tests.routing"]["bgp"]
    inputs = next(e["VerifyBGPPeerSession"] for e in section if "VerifyBGPPeerSession" in e)
    by_vrf: dict[str, list[str]] = {}
    for p in inputs["bgp_peers"]:
        by_vrf.setdefault(p["vrf"], []).append(p["peer_address"])
    assert set(by_vrf) == {"default", "STORAGE", "INBAND"} and len(by_vrf["STORAGE"]) == 6

    def answer(down: str | None, drop_vrf: str | None = None) -> dict[str, object]:
        peer = {"establishedTime": 3600, "peerTcpInfo": {"inputQueueLength": 0, "outputQueueLength": 0}}
        return {
            "vrfs": {
                vrf: {
                    "peerList": [
                        {**peer, "peerAddress": a, "state": "Active" if a == down else "Established"} for a in addrs
                    ]
                }
                for vrf, addrs in by_vrf.items()
                if vrf != drop_vrf
            }
        }

    def run(eos: dict[str, object]) -> object:
        device = AsyncEOSDevice(host="127.0.0.1", username="u", password="p", name="ns-leaf1a")
        test = VerifyBGPPeerSession(device, inputs=inputs, eos_data=[eos])
        asyncio.run(test.test())
        return test.result

    assert run(answer(None)).result == "success"
    assert run(answer(by_vrf["STORAGE"][0])).result == "failure"
    assert run(answer(None, drop_vrf="INBAND")).result == "failure"
