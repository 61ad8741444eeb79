"""An InfiniBand compute plane in the cluster intent (`transport: infiniband`): planned with NVIDIA's
published SuperPOD counts, exported for ibsim and the inventory, and bad input refused with line and fix."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import INVENTORY, run_in_process

from gpufabric.export import inventory
from gpufabric.ib import topology
from gpufabric.ib.design import B200_TABLE, H100_TABLE, PublishedCounts
from gpufabric.intent.loader import load_intent_text
from gpufabric.plan import build_plan

H100 = INVENTORY / "examples" / "superpod-ib.yml"
B200 = INVENTORY / "examples" / "superpod-b200-ib.yml"
LAB = INVENTORY / "examples" / "lab-infiniband.yml"


def _doc(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def _plan(doc: dict[str, Any]):
    return build_plan(load_intent_text(yaml.safe_dump(doc, sort_keys=False), "ib-intent.yml"))


def _published(counts: PublishedCounts) -> dict[str, int]:
    return {
        "nodes": counts.nodes,
        "leaf": counts.leaf,
        "spine": counts.spine,
        "core": counts.core,
        "node_leaf_cables": counts.node_leaf_cables,
        "leaf_spine_cables": counts.leaf_spine_cables,
        "spine_core_cables": counts.spine_core_cables,
    }


@pytest.mark.parametrize("su", [1, 2, 4])
def test_the_h100_superpod_example_plans_nvidias_counts_at_1_2_and_4_su(su: int) -> None:
    """The example is 4 SU; with fewer nodes the same intent plans the smaller rows of NVIDIA's table."""
    doc = _doc(H100)
    nodes = H100_TABLE[su].nodes
    doc["server_groups"][1]["count"] = min(32, nodes - 1)
    doc["server_groups"][0]["count"] = nodes - doc["server_groups"][1]["count"]
    doc["server_groups"][1]["start_index"] = doc["server_groups"][0]["count"] + 1
    plan = _plan(doc)
    assert plan.infiniband is not None
    assert plan.infiniband.fabric.counts() == _published(H100_TABLE[su])
    assert plan.infiniband.fabric.sm.primary == "ufm1 mlx5_0" and plan.infiniband.fabric.sm.standby == "ufm2 mlx5_0"


def test_the_b200_example_plans_three_tiers_with_nvidias_counts() -> None:
    plan = _plan(_doc(B200))
    assert plan.infiniband is not None and plan.infiniband.fabric.tiers == 3
    assert plan.infiniband.fabric.counts() == _published(B200_TABLE[16])


def test_the_compute_plane_leaves_the_ethernet_planes_and_names_its_hosts() -> None:
    plan = _plan(_doc(H100))
    assert "compute" not in plan.planes and {"storage", "business", "oob"} <= set(plan.planes)
    fabric = plan.infiniband.fabric
    assert fabric.hosts == [f"dgx{i:03d}" for i in range(1, 128)]
    # The adapters are the intent's RDMA devices, rail by rail, on their SU's rail leaf at the node's slot.
    node = fabric.by_name["dgx033 mlx5_3"]
    assert (node.su, node.rail) == (2, 2)
    assert fabric.peer[topology.PortRef("dgx033 mlx5_3", 1)] == topology.PortRef("su2-leaf2", 1)


def test_partitions_hold_their_groups_hosts() -> None:
    plan = _plan(_doc(H100))
    a, b = plan.infiniband.settings.partitions
    assert (a.name, a.pkey, len(a.hosts), a.sl) == ("tenant-a", 0x0101, 95, 0)
    assert (b.name, b.pkey, b.hosts[0], b.hosts[-1], b.sl) == ("tenant-b", 0x0102, "dgx096", "dgx127", 2)


def test_the_inventory_gives_each_host_its_adapters_partitions_and_ipoib() -> None:
    plan = _plan(_doc(H100))
    hosts = {h.name: h for h in inventory.build(plan)}
    h = hosts["dgx097"]
    assert {"compute_servers", "plane_compute", "compute_su4"} <= set(h.groups)
    ib = h.data["infiniband"]
    assert ib["mtu"] == 4096 and ib["su"] == 4
    assert [a["device"] for a in ib["adapters"]] == [
        "mlx5_0",
        "mlx5_3",
        "mlx5_4",
        "mlx5_5",
        "mlx5_6",
        "mlx5_9",
        "mlx5_10",
        "mlx5_11",
    ]
    assert ib["adapters"][7] == {"device": "mlx5_11", "rail": 8, "leaf": "su4-leaf8", "leaf_port": 1, "rate": "4xNDR"}
    assert ib["partitions"] == [{"name": "tenant-b", "pkey": "0x0102", "sl": 2, "ipoib": True}]
    # IPoIB as a full member of the host's partition (PKey 0x8102), the 97th address of the subnet.
    assert ib["ipoib"] == [
        {
            "device": "mlx5_0",
            "pkey": "0x8102",
            "address": "10.140.0.97",
            "prefixlen": 24,
            "mtu": 4092,
            "mode": "datagram",
            "netdev": "ib0",
        }
    ]
    # No RoCE: the compute plane is not among the host's Ethernet planes or NICs.
    assert "compute" not in h.data["planes"] and all(n["plane"] != "compute" for n in h.data["nics"])


def test_no_ipoib_unless_asked() -> None:
    doc = _doc(H100)
    del doc["planes"]["compute"]["ipoib"]
    for partition in doc["planes"]["compute"]["partitions"]:
        partition.pop("pod_subnet", None)  # pods' IPoIB needs the hosts' (refused without)
    plan = _plan(doc)
    assert all(h.data["infiniband"]["ipoib"] == [] for h in inventory.build(plan) if "infiniband" in h.data)


def test_the_exported_topology_reads_back_as_the_plan() -> None:
    done = run_in_process("gpufabric", "export", "ib-topology", str(H100), check=True)
    seen = topology.parse(done.stdout)
    plan = _plan(_doc(H100))
    assert set(seen.by_name()) == {n.name for n in plan.infiniband.fabric.nodes}
    planned = {frozenset((str(c.down), str(c.up))) for c in plan.infiniband.fabric.cables}
    assert {frozenset((str(link.a), str(link.b))) for link in seen.links} == planned


def _with(change) -> dict[str, Any]:
    doc = copy.deepcopy(_doc(H100))
    change(doc)
    return doc


def _compute(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["planes"]["compute"]


BAD = {
    "no members": (
        lambda d: _compute(d)["partitions"].append({"name": "empty", "pkey": 0x0200, "groups": []}),
        "planes.compute.partitions[2].groups: the partition has no members",
    ),
    "pkey out of range": (
        lambda d: _compute(d)["partitions"][0].update(pkey=0x7FFF),
        "planes.compute.partitions[0].pkey: 32767 is out of range",
    ),
    "pkey twice": (
        lambda d: _compute(d)["partitions"][1].update(pkey=0x0101),
        "planes.compute.partitions[1].pkey: PKey 0x0101 is already partition 'tenant-a''s",
    ),
    "roce qos on infiniband": (
        lambda d: _compute(d).update(qos="roce"),
        "planes.compute.qos: 'qos' is a RoCE (Ethernet) setting",
    ),
    "bgp on infiniband": (
        lambda d: _compute(d).update(routing={"asn_pool": "65000-65100"}),
        "planes.compute.routing: 'routing' is an IP/BGP setting",
    ),
    "radix": (
        lambda d: _compute(d).update(switch_model="QM8700", unit_nodes=32),
        "server_groups[0].nics.compute.speed: 400G adapters do not run on QM8700 leaves",
    ),
    "unit larger than a leaf": (
        lambda d: _compute(d).update(unit_nodes=40),
        "planes.compute.switch_model: a leaf needs 40 NDR downlinks",
    ),
    "unknown transport": (
        lambda d: _compute(d).update(transport="omnipath"),
        "planes.compute.transport: omnipath is not allowed",
    ),
    "unknown group": (
        lambda d: _compute(d)["partitions"][0].update(groups=["dgx-c"]),
        "planes.compute.partitions[0].groups[0]: no server group 'dgx-c'",
    ),
    "ipoib without a partition": (
        lambda d: _compute(d).update(partitions=[_compute(d)["partitions"][0]]),
        "planes.compute.ipoib: the hosts of group 'dgx-b' are in no partition with ipoib",
    ),
    "sl2vl above max_vls": (
        lambda d: _compute(d).update(sl2vl=[0] * 15 + [9]),
        "planes.compute.sl2vl[15]: SL 15 on VL 9",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_infiniband_intents_exit_2_with_line_field_and_fix(tmp_path: Path, case: str) -> None:
    change, says = BAD[case]
    path = tmp_path / "fabric.yml"
    path.write_text(yaml.safe_dump(_with(change), sort_keys=False))
    done = run_in_process("gpufabric", "check", str(path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr, done.stderr
    assert f"{path}:" in done.stderr and "fix:" in done.stderr and "Traceback" not in done.stderr
    line = done.stderr.split(f"{path}:")[1].split(":")[0]
    assert line.isdigit()


def test_push_to_an_infiniband_compute_plane_says_what_configures_it() -> None:
    env = {"GPUFABRIC_SWITCH_PASSWORD": "not-used", "GPUFABRIC_SALT_KEY": "not-used"}
    done = run_in_process("nornir", "push", "--plane", "compute", "--dry-run", str(LAB), **env)
    assert done.returncode == 2, done.stderr
    assert "the compute plane is InfiniBand" in done.stderr and "Traceback" not in done.stderr
