"""`export k8s-network` keeps the rails apart: a rail's resource takes only that rail's NIC on every node, and a
rail's address pool hands out only the /31s the plan pinned, which no other rail's pool holds.

Judged from the plan's own objects (HostNic, Server) and the k8s-labels export's node labels, not from the
exporter's helpers; every object still validates against the published CRDs (test_k8s_network's helpers).
"""

from __future__ import annotations

import copy
import ipaddress
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufabric.export import k8s_labels
from gpufabric.plan import Plan
from tests.conftest import ALL_INTENTS, default_doc, plan_doc, plan_text, run_in_process, set_path, sized
from tests.export import test_k8s_network
from tests.export.test_k8s_network import objects, schema_errors

schemas = test_k8s_network.schemas  # the fixture: the published CRDs, or a skip where they are absent

_INFINIBAND = [p for p in ALL_INTENTS if "transport: infiniband" in p.read_text()]
_ROCE = [p for p in ALL_INTENTS if p not in _INFINIBAND]


def _roce_plan(path: Path, mode: str = "host-device") -> Plan:
    doc = yaml.safe_load(path.read_text())
    if path.name == "multi-vendor.yml":  # its RoCE plane bonds its hosts; routed, it has rails
        doc["planes"]["storage"]["host_links"] = "routed"
    return plan_doc(set_path(doc, ("kubernetes",), {"rdma": mode}), str(path))


def _swapped_groups(mode: str = "host-device") -> dict[str, Any]:
    """The default fabric with a second GPU group whose NICs serve the rails the other way round:
    its eth1 is rail 2 and its eth2 rail 1 (`rails: [2, 1]`)."""
    doc = default_doc()
    second = copy.deepcopy(doc["server_groups"][0])
    second.update(name="gpub", naming="gpub{index:02d}", count=2)
    second["nics"]["compute"]["rails"] = [2, 1]
    doc["server_groups"].insert(1, second)
    return set_path(doc, ("kubernetes",), {"rdma": mode})


def _rail_nics(plan: Plan) -> dict[str, dict[str, str]]:
    """Node -> resource name (<plane>_rail<r>) -> the one interface that serves that rail there, from the plan."""
    out: dict[str, dict[str, str]] = {}
    for server in plan.servers:
        for nic in server.nics:
            plane = plan.planes[nic.plane]
            if plane.carries_roce and not plane.carried:  # a converged plane's NIC stays the host's
                index = plane.plane_of.get(nic.leaf)  # plane k of a multi-plane compute plane: a resource each
                part = f"{nic.plane}_p{index}" if index else nic.plane
                out.setdefault(server.name, {})[f"{part}_rail{nic.rail}"] = nic.interface
    return out


def _selected(plan: Plan, objs: list[dict[str, Any]]) -> dict[str, dict[str, set[str]]]:
    """Node -> resource -> every interface of the node that the exported objects put into that resource:
    the device plugin's resource list (host-device, one for every node), or the SR-IOV node policies whose
    nodeSelector the node's labels (the k8s-labels export) match."""
    labels = k8s_labels.labels(plan)
    nics = _rail_nics(plan)
    out: dict[str, dict[str, set[str]]] = {node: {} for node in nics}
    policy = next(o for o in objs if o["kind"] == "NicClusterPolicy")
    plugin = policy["spec"].get("sriovDevicePlugin")
    rules: list[tuple[dict[str, str], str, list[str]]] = []
    if plugin is not None:
        for r in json.loads(plugin["config"])["resourceList"]:
            rules.append(({}, r["resourceName"], r["selectors"]["pfNames"]))
    shared = policy["spec"].get("rdmaSharedDevicePlugin")  # shared: its resources select rail NICs by name
    if shared is not None:
        for r in json.loads(shared["config"])["configList"]:
            rules.append(({}, r["resourceName"], r["selectors"]["ifNames"]))
    for o in objs:
        if o["kind"] == "SriovNetworkNodePolicy":
            spec = o["spec"]
            rules.append((spec["nodeSelector"], spec["resourceName"], spec["nicSelector"]["pfNames"]))
    for node, mine in nics.items():
        for selector, resource, names in rules:
            if all(labels[node].get(k) == v for k, v in selector.items()):
                out[node].setdefault(resource, set()).update(set(names) & set(mine.values()))
    return out


def _each_resource_takes_its_rails_nic(plan: Plan, objs: list[dict[str, Any]]) -> list[str]:
    problems = []
    selected = _selected(plan, objs)
    for node, mine in _rail_nics(plan).items():
        for resource, interface in mine.items():
            got = selected[node].get(resource, set())
            if got != {interface}:
                problems.append(f"{node}: {resource} takes {sorted(got)}, the plan has {interface} on that rail")
    return problems


@pytest.mark.parametrize("mode", ["host-device", "sriov", "shared"])
@pytest.mark.parametrize("path", sized(_ROCE), ids=lambda p: p.name)
def test_every_rails_resource_takes_only_that_rails_nic_on_every_node(path: Path, mode: str) -> None:
    plan = _roce_plan(path, mode)
    assert _each_resource_takes_its_rails_nic(plan, objects(plan)) == []


def test_sriov_gives_groups_that_name_rails_differently_a_policy_each(schemas: Any) -> None:
    plan = plan_doc(_swapped_groups("sriov"))
    objs = objects(plan)
    assert _each_resource_takes_its_rails_nic(plan, objs) == []
    policies = {o["metadata"]["name"]: o["spec"] for o in objs if o["kind"] == "SriovNetworkNodePolicy"}
    assert policies["compute-rail1-gpu"]["nicSelector"]["pfNames"] == ["eth1"]
    assert policies["compute-rail1-gpub"]["nicSelector"]["pfNames"] == ["eth2"]
    assert policies["compute-rail1-gpub"]["nodeSelector"]["gpufabric.io/group"] == "gpub"
    assert {p["resourceName"] for n, p in policies.items() if n.startswith("compute-rail1")} == {"compute_rail1"}
    for obj in objs:
        assert schema_errors(obj, schemas) == [], obj["metadata"]["name"]
        if obj["kind"].startswith("Sriov"):
            assert schema_errors(obj, schemas, "upstream") == [], obj["metadata"]["name"]


@pytest.mark.parametrize("mode", ["host-device", "shared"])
def test_host_device_refuses_groups_that_name_rails_differently(tmp_path: Path, mode: str) -> None:
    # shared: the RDMA shared device plugin's one configuration selects by name on every node, as host-device's
    path = tmp_path / "fabric.yml"
    path.write_text(yaml.safe_dump(_swapped_groups(mode), sort_keys=False))
    out = tmp_path / "net"
    done = run_in_process("gpufabric", "export", "k8s-network", str(path), "-o", str(out))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    # Located (file:line, field) and naming both groups and both rails.
    assert f"{path}:" in done.stderr and "server_groups[1].nics.compute.interfaces" in done.stderr, done.stderr
    assert "group 'gpu' on compute-rail1" in done.stderr and "group 'gpub' on compute-rail2" in done.stderr
    assert "kubernetes.rdma: sriov" in done.stderr
    assert not out.exists()


def _allocations(pool: dict[str, Any]) -> dict[str, ipaddress.IPv4Network]:
    return {a["nodeName"]: ipaddress.IPv4Network(a["prefix"]) for a in pool["spec"]["staticAllocations"]}


def _dynamic_allocation_problems(pool: dict[str, Any]) -> list[str]:
    """nv-ipam gives every node its nodeSelector matches a prefix: the static one when the node has one,
    else a free one of `cidr` (shared by every rail). Empty when no node without a static allocation can
    match: every term pins one node by name (terms are ORed), and that node has a static allocation."""
    pinned = _allocations(pool)
    terms = pool["spec"].get("nodeSelector", {}).get("nodeSelectorTerms")
    if not terms:
        return ["no node selector: every node of the cluster matches"]
    problems = []
    for term in terms:
        names = [
            f["values"][0]
            for f in term.get("matchFields", [])
            if f["key"] == "metadata.name" and f["operator"] == "In" and len(f["values"]) == 1
        ]
        if not names:
            problems.append(f"term {term} does not pin one node by name: nodes without an allocation may match")
        elif names[0] not in pinned:
            problems.append(f"term pins {names[0]}, which has no static allocation")
    return problems


def _overlaps(pools: list[dict[str, Any]]) -> list[str]:
    """What the pools can hand out (their pinned prefixes, parsed): any address in two of them."""
    handed = sorted(
        ((net, pool["metadata"]["name"]) for pool in pools for net in _allocations(pool).values()),
        key=lambda pair: (int(pair[0].network_address), -pair[0].prefixlen),
    )
    problems = []
    for i, (a, pool_a) in enumerate(handed):
        for b, pool_b in handed[i + 1 :]:
            if not a.overlaps(b):
                break  # sorted by start address: nothing further along starts inside `a`
            problems.append(f"{a} ({pool_a}) overlaps {b} ({pool_b})")
    return problems


def _pool_check(plan: Plan) -> list[str]:
    pools = [o for o in objects(plan) if o["kind"] == "CIDRPool"]
    assert pools
    problems = []
    for pool in pools:
        problems += [f"{pool['metadata']['name']}: {p}" for p in _dynamic_allocation_problems(pool)]
    return problems + _overlaps(pools)


@pytest.mark.parametrize("path", sized(_ROCE), ids=lambda p: p.name)
def test_no_two_rail_pools_can_hand_out_one_address(path: Path) -> None:
    plan = plan_text(path.read_text(), str(path)) if path.name != "multi-vendor.yml" else _roce_plan(path)
    assert _pool_check(plan) == []


def test_the_pool_check_fails_on_a_selector_by_label_or_an_overlap() -> None:
    """The check above can fail: a selector any labelled node matches, and a /31 in two pools."""
    plan = plan_doc(default_doc())
    pools = [o for o in objects(plan) if o["kind"] == "CIDRPool"]
    by_label = copy.deepcopy(pools[0])
    by_label["spec"]["nodeSelector"] = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpufabric.io/compute-rail1-leaf", "operator": "Exists"}]}]
    }
    assert _dynamic_allocation_problems(by_label)
    stranger = copy.deepcopy(pools[0])
    stranger["spec"]["nodeSelector"]["nodeSelectorTerms"].append(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu99"]}]}
    )
    assert _dynamic_allocation_problems(stranger) == ["term pins gpu99, which has no static allocation"]
    twice = copy.deepcopy(pools[1])
    twice["spec"]["staticAllocations"][0]["prefix"] = pools[0]["spec"]["staticAllocations"][1]["prefix"]
    assert len(_overlaps([pools[0], twice])) == 1
