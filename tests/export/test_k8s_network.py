"""`gpufabric export k8s-network`: judged by the operators' published CRDs and by the plan itself.

Every object must validate against its CRD's openAPIV3Schema (the Network Operator's, nv-ipam's
and the SR-IOV Network Operator's, in ../shared/schemas/k8s-network), also with unknown fields
made errors (what `kubectl apply --validate=strict` does). The rail pools are compared with
addresses computed here from the plan's own objects (HostNic, leaf Device), not from the exporter.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from gpufabric.export import k8s_network
from gpufabric.plan import Plan
from gpufabric.plan.model import ip
from tests.conftest import ALL_INTENTS, K8S_CRDS, default_doc, plan_doc, plan_text, run_in_process, set_path, sized

SRIOV_KINDS = {"SriovNetwork", "SriovNetworkNodePolicy"}


def _crds(folder: Path) -> dict[tuple[str, str], dict[str, Any]]:
    out = {}
    for path in sorted(folder.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        for version in crd["spec"]["versions"]:
            out[(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])] = version["schema"][
                "openAPIV3Schema"
            ]
    return out


def published_crds() -> dict[str, dict[tuple[str, str], dict[str, Any]]]:
    """The published CRDs by (group, kind), the Network Operator's own and those it bundles; skipped where
    they are not beside the clone, failed in CI."""
    if not K8S_CRDS.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{K8S_CRDS} is missing; CI must have shared/ beside the clone")
        pytest.skip(f"the CRDs are not beside this clone ({K8S_CRDS}); set GPUFABRIC_SHARED to their folder")
    return {"upstream": _crds(K8S_CRDS), "bundled": _crds(K8S_CRDS / "network-operator-bundled")}


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict[tuple[str, str], dict[str, Any]]]:
    return published_crds()


def _strict(schema: Any) -> Any:
    """Unknown fields become errors wherever the schema lists its fields (as the API server's strict mode)."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        open_ended = "additionalProperties" in out or out.get("x-kubernetes-preserve-unknown-fields")
        if "properties" in out and not open_ended:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


_VALIDATORS: dict[tuple[str, str, str], list[jsonschema.Draft4Validator]] = {}


def schema_errors(obj: dict[str, Any], schemas: dict[str, Any], flavour: str = "bundled") -> list[str]:
    key = (obj["apiVersion"], obj["kind"])
    if (flavour, *key) not in _VALIDATORS:
        found = schemas[flavour].get(key) or schemas["upstream"][key]
        # CRD schemas are OpenAPI 3.0 structural schemas: draft 4 semantics.
        _VALIDATORS[(flavour, *key)] = [jsonschema.Draft4Validator(s) for s in (found, _strict(found))]
    errors = []
    for validator in _VALIDATORS[(flavour, *key)]:
        errors += [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)]
    return errors


def objects(plan: Plan) -> list[dict[str, Any]]:
    """Every Kubernetes custom resource the export writes (the kubelet fragment is not one)."""
    files = k8s_network.documents(plan)
    out = []
    for name, text in files.items():
        if name != "kubelet-topology.yaml":
            # libyaml, as safe_load_all reads but in C: the 32k fabric's pools are 3 MB of YAML
            out += [doc for doc in yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if doc]
    return out


def _mode(doc: dict[str, Any], mode: str) -> Plan:
    return plan_doc(set_path(doc, ("kubernetes",), {"rdma": mode}))


# An InfiniBand compute plane has no RoCE rail: its IPoIB networks are judged in test_k8s_ipoib.py.
_INFINIBAND = [p for p in ALL_INTENTS if "transport: infiniband" in p.read_text()]


def _roce_intents() -> list[Path]:
    return [p for p in ALL_INTENTS if p.name != "multi-vendor.yml" and p not in _INFINIBAND]


@pytest.mark.parametrize("mode", ["host-device", "sriov", "shared"])
@pytest.mark.parametrize("path", sized(p for p in ALL_INTENTS if p not in _INFINIBAND), ids=lambda p: p.name)
def test_every_object_validates_against_its_crd(path: Path, mode: str, schemas: Any) -> None:
    doc = yaml.safe_load(path.read_text())
    if path.name == "multi-vendor.yml":
        # Its RoCE plane bonds its hosts; the export refuses (tested below). Routed, it has rails.
        doc["planes"]["storage"]["host_links"] = "routed"
    plan = _mode(doc, mode)
    objs = objects(plan)
    kinds = {o["kind"] for o in objs}
    assert "NicClusterPolicy" in kinds
    # shared: the pods are on the host's network, so a rail has no pool, network or attachment of its own
    assert ({"CIDRPool", "NetworkAttachmentDefinition"} <= kinds) == (mode != "shared")
    assert ("HostDeviceNetwork" in kinds) == (mode == "host-device")
    assert (kinds >= SRIOV_KINDS) == (mode == "sriov")
    policy = next(o for o in objs if o["kind"] == "NicClusterPolicy")["spec"]
    assert ("rdmaSharedDevicePlugin" in policy) == (mode == "shared")
    for obj in objs:
        if obj["kind"] == "NicConfigurationTemplate":
            continue  # its CRD is the NIC Configuration Operator's, not in the shared folder: test_k8s_supernic.py
        assert schema_errors(obj, schemas) == [], (obj["kind"], obj["metadata"]["name"])
        if obj["kind"] in SRIOV_KINDS:  # also upstream's SR-IOV Network Operator
            assert schema_errors(obj, schemas, "upstream") == [], obj["metadata"]["name"]


def _expected_rails(plan: Plan) -> dict[str, set[tuple[str, str, str]]]:
    """Pool name -> (node, /31, gateway), from the plan's NICs and leaves, computed here."""
    out: dict[str, set[tuple[str, str, str]]] = {}
    for server in plan.servers:
        for nic in server.nics:
            plane = plan.planes[nic.plane]
            if not plane.carries_roce or plane.carried:  # a converged plane's NIC stays the host's
                continue
            net = ipaddress.ip_network(f"{ip(nic.address)}/{nic.prefixlen}", strict=False)
            leaf = plan.device(nic.leaf)
            block = ipaddress.ip_network(f"{ip(leaf.host_subnet)}/{leaf.host_prefixlen}")
            assert net.subnet_of(block)  # the node's block is carved from its leaf's block
            index = plane.plane_of.get(nic.leaf)  # plane k of a multi-plane compute plane: its own pool
            name = f"{nic.plane}-p{index}-rail{nic.rail}" if index else f"{nic.plane}-rail{nic.rail}"
            out.setdefault(name, set()).add((server.name, str(net), ip(nic.gateway) or ""))
    return out


def pool_problems(pool: dict[str, Any], plan: Plan, expected: set[tuple[str, str, str]]) -> list[str]:
    """What is wrong with a CIDRPool, judged by the plan (empty: nothing)."""
    spec = pool["spec"]
    part = pool["metadata"]["name"].rsplit("-rail", 1)[0]
    plane = getattr(plan.intent.planes, part.split("-p", 1)[0])
    cidr = ipaddress.ip_network(spec["cidr"])
    problems = []
    hosts = plane.addressing.hosts
    if "-p" in part:  # plane k of a multi-plane compute plane: the k-th of the equal shares of the pool
        k, n = int(part.rsplit("-p", 1)[1]), plane.multiplane.planes
        shares = list(hosts.subnets(prefixlen_diff=(n - 1).bit_length()))
        hosts = shares[k - 1]
    if cidr != hosts:
        problems.append(f"cidr {cidr} is not the plane's host pool {hosts}")
    got = {(a["nodeName"], a["prefix"], a["gateway"]) for a in spec["staticAllocations"]}
    if got != expected:
        problems.append(f"allocations differ from the plan: {sorted(got ^ expected)}")
    for node, prefix, gateway in got:
        net = ipaddress.ip_network(prefix)
        if not net.subnet_of(cidr) or net.prefixlen != spec["perNodeNetworkPrefix"]:
            problems.append(f"{node}: {prefix} is not a /{spec['perNodeNetworkPrefix']} inside {cidr}")
        hosts = list(net)
        if ipaddress.ip_address(gateway) != hosts[spec["gatewayIndex"]]:
            problems.append(f"{node}: gateway {gateway} is not index {spec['gatewayIndex']} of {prefix}")
    excluded = {i for r in spec.get("perNodeExclusions", []) for i in range(r["startIndex"], r["endIndex"] + 1)}
    if excluded != {spec["gatewayIndex"]}:
        problems.append(f"per-node exclusions {sorted(excluded)} are not just the gateway's index")
    if [r["dst"] for r in spec["routes"]] != [str(cidr)]:
        problems.append("the route to the rest of the plane is missing")
    return problems


@pytest.mark.parametrize("path", sized(_roce_intents()), ids=[p.name for p in _roce_intents()])
def test_rail_pools_equal_the_plans_rail_addresses(path: Path) -> None:
    plan = plan_text(path.read_text(), str(path))
    expected = _expected_rails(plan)
    pools = {o["metadata"]["name"]: o for o in objects(plan) if o["kind"] == "CIDRPool"}
    assert set(pools) == set(expected)
    for name, pool in pools.items():
        assert pool_problems(pool, plan, expected[name]) == [], name


def test_default_pools_by_value() -> None:
    pools = {o["metadata"]["name"]: o["spec"] for o in objects(plan_doc(default_doc())) if o["kind"] == "CIDRPool"}
    assert pools["compute-rail1"]["cidr"] == "10.10.0.0/16"
    assert pools["compute-rail2"]["staticAllocations"][0] == {
        "nodeName": "gpu01",
        "prefix": "10.10.0.4/31",  # su1-leaf2's block, port 1: leaf .4, host .5
        "gateway": "10.10.0.4",
    }


def test_planted_errors_fail(schemas: Any) -> None:
    plan = plan_doc(default_doc())
    expected = _expected_rails(plan)
    objs = objects(plan)
    pool = next(o for o in objs if o["kind"] == "CIDRPool")
    policy = next(o for o in objs if o["kind"] == "NicClusterPolicy")

    outside = copy.deepcopy(pool)
    outside["spec"]["staticAllocations"][0]["prefix"] = "192.168.0.0/31"  # an address outside the plane's pool
    assert any("192.168.0.0/31" in p for p in pool_problems(outside, plan, expected["compute-rail1"]))
    host_excluded = copy.deepcopy(pool)
    host_excluded["spec"]["perNodeExclusions"] = [{"startIndex": 0, "endIndex": 1}]  # the host's own address too
    assert any("exclusions [0, 1]" in p for p in pool_problems(host_excluded, plan, expected["compute-rail1"]))
    wrong_gw = copy.deepcopy(pool)
    wrong_gw["spec"]["staticAllocations"][1]["gateway"] = "10.10.0.3"
    assert any("gateway 10.10.0.3" in p for p in pool_problems(wrong_gw, plan, expected["compute-rail1"]))

    typo = copy.deepcopy(pool)
    typo["spec"]["perNodePrefix"] = typo["spec"].pop("perNodeNetworkPrefix")
    assert "perNodeNetworkPrefix' is a required property" in " ".join(schema_errors(typo, schemas))
    unknown = copy.deepcopy(policy)
    unknown["spec"]["nvIpam"]["enableWebhooks"] = False
    assert any("enableWebhooks" in e for e in schema_errors(unknown, schemas))
    as_text = copy.deepcopy(policy)
    as_text["spec"]["ofedDriver"]["upgradePolicy"]["maxParallelUpgrades"] = "1"
    assert any("not of type 'integer'" in e for e in schema_errors(as_text, schemas))

    sriov = objects(_mode(default_doc(), "sriov"))
    node_policy = copy.deepcopy(next(o for o in sriov if o["kind"] == "SriovNetworkNodePolicy"))
    node_policy["spec"]["deviceType"] = "host-device"
    assert any("deviceType" in e for e in schema_errors(node_policy, schemas))


def test_networks_attachments_and_device_plugin_agree() -> None:
    plan = plan_doc(default_doc())
    objs = objects(plan)
    policy = next(o for o in objs if o["kind"] == "NicClusterPolicy")
    resources = json.loads(policy["spec"]["sriovDevicePlugin"]["config"])["resourceList"]
    assert [(r["resourceName"], r["selectors"]["pfNames"]) for r in resources] == [
        ("compute_rail1", ["eth1"]),
        ("compute_rail2", ["eth2"]),
    ]
    assert all(r["selectors"]["isRdma"] for r in resources)
    pools = {o["metadata"]["name"] for o in objs if o["kind"] == "CIDRPool"}
    for net in (o for o in objs if o["kind"] == "HostDeviceNetwork"):
        ipam = json.loads(net["spec"]["ipam"])
        assert ipam == {"type": "nv-ipam", "poolName": net["metadata"]["name"], "poolType": "cidrpool"}
        assert ipam["poolName"] in pools
    for nad in (o for o in objs if o["kind"] == "NetworkAttachmentDefinition"):
        config = json.loads(nad["spec"]["config"])
        assert config["type"] == "host-device" and config["ipam"]["poolName"] in pools
        resource = nad["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"]
        assert resource in {f"nvidia.com/{r['resourceName']}" for r in resources}


def test_sriov_mode_one_vf_per_rail_nic_and_no_second_device_plugin() -> None:
    objs = objects(_mode(default_doc(), "sriov"))
    policy = next(o for o in objs if o["kind"] == "NicClusterPolicy")
    assert "sriovDevicePlugin" not in policy["spec"]
    node_policies = [o["spec"] for o in objs if o["kind"] == "SriovNetworkNodePolicy"]
    assert [(p["nicSelector"]["pfNames"], p["numVfs"], p["isRdma"], p["mtu"]) for p in node_policies] == [
        (["eth1"], 1, True, 9000),
        (["eth2"], 1, True, 9000),
    ]
    nads = [json.loads(o["spec"]["config"]) for o in objs if o["kind"] == "NetworkAttachmentDefinition"]
    assert {c["type"] for c in nads} == {"sriov"}


def test_kubelet_settings_and_pairing() -> None:
    text = k8s_network.documents(plan_doc(default_doc()))["kubelet-topology.yaml"]
    settings = yaml.safe_load(text)
    assert settings["topologyManagerPolicy"] == "single-numa-node"
    assert settings["topologyManagerScope"] == "pod"
    assert "#   gpu01 (assumed): eth1->GPU0,1,2,3, eth2->GPU4,5,6,7" in text


def _gpufabric(*args: object) -> subprocess.CompletedProcess[str]:
    return run_in_process("gpufabric", *map(str, args))


def test_cli_writes_a_directory_and_refuses_a_bonded_plane(tmp_path: Path) -> None:
    done = _gpufabric("export", "k8s-network", "-o", tmp_path / "net")
    assert done.returncode == 0, done.stderr
    # nic-configuration.yaml only on a Spectrum-X plane (test_k8s_supernic.py)
    assert sorted(p.name for p in (tmp_path / "net").iterdir()) == sorted(
        set(k8s_network.FILES) - {"nic-configuration.yaml"}
    )
    doc = default_doc()
    doc["planes"]["compute"]["carries_roce"] = False
    bad = tmp_path / "fabric.yml"
    bad.write_text(yaml.safe_dump(doc))
    done = _gpufabric("export", "k8s-network", bad)
    assert done.returncode == 2
    assert "carries_roce: true" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_bad_rdma_mode_is_an_intent_error(tmp_path: Path) -> None:
    bad = tmp_path / "fabric.yml"
    bad.write_text(yaml.safe_dump(set_path(default_doc(), ("kubernetes",), {"rdma": "macvlan"})))
    done = _gpufabric("check", bad)
    assert done.returncode == 2
    assert "kubernetes.rdma" in done.stderr and "Traceback" not in done.stderr
