"""`gpufabric export k8s-network` on an InfiniBand compute plane: an IPoIBNetwork and an nv-ipam IPPool per
partition that gives pods a subnet, judged by the Network Operator's and nv-ipam's published CRDs and by
the plan (the partition's hosts, the child interface the ib_host role makes)."""

from __future__ import annotations

import copy
import json
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import INVENTORY, plan_doc, run_in_process
from test_k8s_network import objects, published_crds, schema_errors

from gpufabric.export import inventory, k8s_network

H100 = INVENTORY / "examples" / "superpod-ib.yml"


@pytest.fixture(scope="module")
def crds() -> dict[str, dict[tuple[str, str], dict[str, Any]]]:
    return published_crds()


def _doc() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load(H100.read_text()))


def _by_kind(objs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


def test_each_partition_gets_an_ipoib_network_that_passes_the_crds(crds: Any) -> None:
    plan = plan_doc(_doc())
    objs = objects(plan)
    for obj in objs:
        assert schema_errors(obj, crds) == [], (obj["kind"], obj["metadata"]["name"])
    nets = _by_kind(objs, "IPoIBNetwork")
    pools = _by_kind(objs, "IPPool")
    assert set(nets) == set(pools) == {"ib-tenant-a", "ib-tenant-b"}
    assert nets["ib-tenant-a"]["spec"]["master"] == "ib0.8101"
    assert nets["ib-tenant-b"]["spec"]["master"] == "ib0.8102"
    assert json.loads(nets["ib-tenant-a"]["spec"]["ipam"]) == {
        "type": "nv-ipam",
        "poolName": "ib-tenant-a",
        "poolType": "ippool",
    }
    policy = _by_kind(objs, "NicClusterPolicy")["nic-cluster-policy"]
    assert policy["spec"]["secondaryNetwork"]["ipoib"]["image"] == "ipoib-cni"
    assert "sriovDevicePlugin" not in policy["spec"]  # no RoCE rail to select
    assert not _by_kind(objs, "CIDRPool") and not _by_kind(objs, "HostDeviceNetwork")
    nads = _by_kind(objs, "NetworkAttachmentDefinition")
    config = json.loads(nads["ib-tenant-b"]["spec"]["config"])
    assert (config["type"], config["master"]) == ("ipoib", "ib0.8102")


def test_a_pool_holds_exactly_its_partitions_hosts_and_fits_its_subnet() -> None:
    plan = plan_doc(_doc())
    assert plan.infiniband is not None
    pools = _by_kind(objects(plan), "IPPool")
    for partition in plan.infiniband.settings.partitions:
        spec = pools[f"ib-{partition.name}"]["spec"]
        nodes = [t["matchFields"][0]["values"][0] for t in spec["nodeSelector"]["nodeSelectorTerms"]]
        assert nodes == list(partition.hosts)
        usable = IPv4Network(spec["subnet"]).num_addresses - 2
        assert spec["perNodeBlockSize"] >= 1 and spec["perNodeBlockSize"] * len(nodes) <= usable
    # tenant-a: 95 DGX in 4094 addresses; tenant-b: 32.
    assert [len(p.hosts) for p in plan.infiniband.settings.partitions] == [95, 32]
    assert pools["ib-tenant-a"]["spec"]["perNodeBlockSize"] == 4094 // 95


def test_the_master_is_the_child_the_host_role_makes() -> None:
    """ib_host names the child `<netdev>.<pkey without 0x>` from the inventory's IPoIB entry."""
    doc = _doc()
    doc["planes"]["compute"]["ipoib"]["netdev"] = "ibp12s0"
    plan = plan_doc(doc)
    assert plan.infiniband is not None
    masters = {n["metadata"]["name"]: n["spec"]["master"] for n in objects(plan) if n["kind"] == "IPoIBNetwork"}
    for net in k8s_network.ipoib_networks(plan):
        for node in net.nodes:
            host = inventory.infiniband_host(plan.infiniband, node)
            assert host is not None
            (entry,) = host["ipoib"]
            assert masters[net.name] == "ibp12s0." + entry["pkey"].removeprefix("0x")


def test_a_partition_without_a_pod_subnet_gets_no_network(crds: Any) -> None:
    doc = _doc()
    del doc["planes"]["compute"]["partitions"][1]["pod_subnet"]
    objs = objects(plan_doc(doc))
    assert set(_by_kind(objs, "IPoIBNetwork")) == {"ib-tenant-a"}


def test_the_crd_refuses_a_field_it_does_not_have(crds: Any) -> None:
    """The judge is live: a PKey field is not IPoIBNetwork's (the partition is in the master's name)."""
    net = _by_kind(objects(plan_doc(_doc())), "IPoIBNetwork")["ib-tenant-a"]
    net["spec"]["pkey"] = "0x8101"
    assert any("pkey" in e for e in schema_errors(net, crds))


REFUSED = {
    "no ipoib": (
        lambda d: d["planes"]["compute"].pop("ipoib"),
        "export",
        "planes.compute.partitions[0].pod_subnet: pods' IPoIB networks enslave the hosts' IPoIB interface",
    ),
    "no ipoib at all": (
        lambda d: (
            d["planes"]["compute"].pop("ipoib"),
            [p.pop("pod_subnet") for p in d["planes"]["compute"]["partitions"]],
        ),
        "export",
        "planes.compute: no `ipoib`: pods' IPoIB networks need the hosts' IPoIB interface",
    ),
    "no pod subnet": (
        lambda d: [p.pop("pod_subnet") for p in d["planes"]["compute"]["partitions"]],
        "export",
        "planes.compute.partitions: no partition with IPoIB has a `pod_subnet`",
    ),
    "overlap": (
        lambda d: d["planes"]["compute"]["partitions"][1].update(pod_subnet="10.141.8.0/21"),
        "check",
        "planes.compute.partitions[1].pod_subnet: 10.141.8.0/21 overlaps planes.compute.partitions[0].pod_subnet",
    ),
    "hosts' subnet": (
        lambda d: d["planes"]["compute"]["partitions"][0].update(pod_subnet="10.140.0.0/23"),
        "check",
        "planes.compute.partitions[0].pod_subnet: 10.140.0.0/23 overlaps planes.compute.ipoib.subnet",
    ),
    "long netdev": (
        lambda d: d["planes"]["compute"]["ipoib"].update(netdev="ibp123s0f0np0"),
        "check",
        "planes.compute.ipoib.netdev: 'ibp123s0f0np0.8xxx' (a partition's child) is longer",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refusals_are_located(tmp_path: Path, case: str) -> None:
    change, command, says = REFUSED[case]
    doc = _doc()
    change(doc)
    path = tmp_path / "fabric.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    args = ("export", "k8s-network", str(path)) if command == "export" else ("check", str(path))
    done = run_in_process("gpufabric", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr, done.stderr
    assert f"{path}:" in done.stderr and "Traceback" not in done.stderr
