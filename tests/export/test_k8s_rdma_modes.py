"""`export k8s-network`: RDMA to pods in every mode. The RDMA shared device plugin (`kubernetes.rdma: shared`) on
RoCE rails and on an InfiniBand plane's HCAs, and the rdma CNI's namespace isolation (`rdma_isolation`) on
host-device and SR-IOV rails.

Objects are judged by the operators' published CRDs (test_k8s_network's helpers, default and strict). The JSON the
CRDs carry as strings (the shared plugin's `config`, the networks' `metaPlugins`, the attachments' `config`) is
opaque to them, so it is parsed here and held to the field sets the projects document: the shared plugin's
README ("RDMA Shared Device Plugin Configurations", "Devices Selectors") and the rdma CNI's README (a chained
plugin of `"type": "rdma"`). Expected values come from the plan's own NICs, not from the exporter.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufabric.export import k8s_network
from gpufabric.intent.errors import IntentError
from gpufabric.plan import Plan
from tests.conftest import INVENTORY, default_doc, plan_doc, run_in_process, set_path
from tests.export import test_k8s_network
from tests.export.test_k8s_network import objects, schema_errors

schemas = test_k8s_network.schemas  # the fixture: the published CRDs, or a skip where they are absent

SUPERPOD_IB = INVENTORY / "examples" / "superpod-ib.yml"
# The shared plugin's documented config fields (its README's two tables); anything else it ignores.
CONFIG_FIELDS = {"resourceName", "rdmaHcaMax", "selectors", "devices", "resourcePrefix"}
SELECTOR_FIELDS = {"vendors", "deviceIDs", "drivers", "ifNames", "linkTypes"}


def _plan(doc: dict[str, Any], **kubernetes: Any) -> Plan:
    return plan_doc(set_path(doc, ("kubernetes",), kubernetes))


def _by_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


def _shared_config(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    policy = _by_kind(objs, "NicClusterPolicy")[0]["spec"]
    config = json.loads(policy["rdmaSharedDevicePlugin"]["config"])
    assert set(config) == {"configList"}
    for entry in config["configList"]:
        assert set(entry) <= CONFIG_FIELDS and {"resourceName", "rdmaHcaMax"} <= set(entry), entry
        assert isinstance(entry["rdmaHcaMax"], int) and set(entry["selectors"]) <= SELECTOR_FIELDS, entry
    return list(config["configList"])


def _rails_from_plan(plan: Plan) -> dict[str, list[str]]:
    """Resource (<plane>_rail<r>) -> the interface names that serve that rail, from the plan's NICs."""
    out: dict[str, set[str]] = {}
    for server in plan.servers:
        for nic in server.nics:
            plane = plan.planes[nic.plane]
            if plane.carries_roce and not plane.carried:
                out.setdefault(f"{nic.plane}_rail{nic.rail}", set()).add(nic.interface)
    return {k: sorted(v) for k, v in out.items()}


def test_shared_gives_each_rail_a_shared_resource_and_no_pod_network(schemas: Any) -> None:
    plan = _plan(default_doc(), rdma="shared", rdma_hca_max=16)
    objs = objects(plan)
    for obj in objs:
        assert schema_errors(obj, schemas) == [], (obj["kind"], obj["metadata"]["name"])
    configs = _shared_config(objs)
    assert {c["resourceName"]: c["selectors"]["ifNames"] for c in configs} == _rails_from_plan(plan)
    assert {c["rdmaHcaMax"] for c in configs} == {16}
    assert all(c["selectors"]["vendors"] == ["15b3"] for c in configs)
    # The pods run on the host's network: no rail pool, network or attachment, no SR-IOV device plugin.
    assert {o["kind"] for o in objs} == {"NicClusterPolicy"}
    spec = _by_kind(objs, "NicClusterPolicy")[0]["spec"]
    assert "sriovDevicePlugin" not in spec and "nvIpam" not in spec  # no pool to allocate from


def test_shared_selects_by_device_id_where_every_group_names_its_nic_model() -> None:
    doc = default_doc()
    doc["server_groups"][0]["nics"]["compute"]["model"] = "ConnectX-7"
    configs = _shared_config(objects(_plan(doc, rdma="shared")))
    assert {c["resourceName"]: c["selectors"].get("deviceIDs") for c in configs} == {
        "compute_rail1": ["1021"],  # ConnectX-7's PCI device ID (NVIDIA's Network Operator documentation)
        "compute_rail2": ["1021"],
    }
    without = _shared_config(objects(_plan(default_doc(), rdma="shared")))
    assert all("deviceIDs" not in c["selectors"] for c in without)  # no model: not guessed


def test_infiniband_pods_get_the_hcas_beside_ipoib_when_shared(schemas: Any) -> None:
    doc = yaml.safe_load(SUPERPOD_IB.read_text())
    plan = _plan(doc, rdma="shared", rdma_hca_max=8)
    objs = objects(plan)
    for obj in objs:
        assert schema_errors(obj, schemas) == [], (obj["kind"], obj["metadata"]["name"])
    assert _shared_config(objs) == [
        {
            "resourceName": "compute_hca",
            "rdmaHcaMax": 8,
            "selectors": {"vendors": ["15b3"], "linkTypes": ["infiniband"]},
        }
    ]
    # The partitions' IPoIB networks stay: the pod's address for rdma_cm, its HCAs from the resource.
    assert {o["metadata"]["name"] for o in _by_kind(objs, "IPoIBNetwork")} == {"ib-tenant-a", "ib-tenant-b"}
    assert "nvIpam" in _by_kind(objs, "NicClusterPolicy")[0]["spec"]  # the partitions' pools
    # The default keeps what it gave before: IPoIB only, no RDMA device plugin.
    default = objects(plan_doc(copy.deepcopy(doc)))
    assert "rdmaSharedDevicePlugin" not in _by_kind(default, "NicClusterPolicy")[0]["spec"]


def test_infiniband_shared_needs_no_pod_subnet() -> None:
    """Pods on the host's network still get the HCAs: without a partition's pod subnet the export gives the
    shared resource alone, where host-device had nothing to give and refuses."""
    doc = yaml.safe_load(SUPERPOD_IB.read_text())
    for p in doc["planes"]["compute"]["partitions"]:
        p.pop("pod_subnet", None)
    objs = objects(_plan(doc, rdma="shared"))
    assert [c["resourceName"] for c in _shared_config(objs)] == ["compute_hca"]
    assert not _by_kind(objs, "IPoIBNetwork") and "nvIpam" not in _by_kind(objs, "NicClusterPolicy")[0]["spec"]
    with pytest.raises(k8s_network.K8sNetworkError, match="no InfiniBand partition gives pods a subnet"):
        k8s_network.documents(plan_doc(doc))


@pytest.mark.parametrize("mode", ["host-device", "sriov"])
def test_isolation_chains_the_rdma_cni_after_each_rail(mode: str, schemas: Any) -> None:
    objs = objects(_plan(default_doc(), rdma=mode, rdma_isolation=True))
    for obj in objs:
        assert schema_errors(obj, schemas) == [], (obj["kind"], obj["metadata"]["name"])
        if obj["kind"].startswith("Sriov"):
            assert schema_errors(obj, schemas, "upstream") == [], obj["metadata"]["name"]
    network_kind = "HostDeviceNetwork" if mode == "host-device" else "SriovNetwork"
    nets = _by_kind(objs, network_kind)
    assert len(nets) == 2
    for net in nets:
        # metaPlugins: CNI objects, comma-separated, without the list's brackets (both CRDs' descriptions)
        assert json.loads(f"[{net['spec']['metaPlugins']}]") == [{"type": "rdma"}]
    for nad in _by_kind(objs, "NetworkAttachmentDefinition"):
        config = json.loads(nad["spec"]["config"])
        assert set(config) == {"cniVersion", "name", "plugins"}
        assert [p["type"] for p in config["plugins"]] == [mode, "rdma"]
        assert config["plugins"][0]["ipam"]["poolName"] == nad["metadata"]["name"]


@pytest.mark.parametrize("mode", ["host-device", "sriov"])
def test_without_isolation_no_rdma_cni(mode: str) -> None:
    objs = objects(_plan(default_doc(), rdma=mode))
    assert all("metaPlugins" not in o["spec"] for o in objs if o["kind"] in ("HostDeviceNetwork", "SriovNetwork"))
    assert all("plugins" not in json.loads(o["spec"]["config"]) for o in _by_kind(objs, "NetworkAttachmentDefinition"))


def test_planted_errors_fail_the_crds(schemas: Any) -> None:
    objs = objects(_plan(default_doc(), rdma="shared"))
    policy = _by_kind(objs, "NicClusterPolicy")[0]
    typo = copy.deepcopy(policy)
    typo["spec"]["rdmaSharedDevicePlugin"]["configs"] = typo["spec"]["rdmaSharedDevicePlugin"].pop("config")
    assert any("configs" in e for e in schema_errors(typo, schemas))
    no_image = copy.deepcopy(policy)
    del no_image["spec"]["rdmaSharedDevicePlugin"]["image"]
    assert any("'image' is a required property" in e for e in schema_errors(no_image, schemas))
    as_object = copy.deepcopy(policy)
    as_object["spec"]["rdmaSharedDevicePlugin"]["config"] = {"configList": []}
    assert any("is not of type 'string'" in e for e in schema_errors(as_object, schemas))
    net = _by_kind(objects(_plan(default_doc(), rdma="host-device", rdma_isolation=True)), "HostDeviceNetwork")[0]
    as_list = copy.deepcopy(net)
    as_list["spec"]["metaPlugins"] = [{"type": "rdma"}]
    assert any("metaPlugins" in e for e in schema_errors(as_list, schemas))


def test_isolation_with_a_shared_device_is_an_intent_error(tmp_path: Path) -> None:
    bad = tmp_path / "fabric.yml"
    bad.write_text(yaml.safe_dump(set_path(default_doc(), ("kubernetes",), {"rdma": "shared", "rdma_isolation": True})))
    done = run_in_process("gpufabric", "check", str(bad))
    assert done.returncode == 2, done.stderr
    assert f"{bad}:" in done.stderr and "kubernetes" in done.stderr and "rdma_isolation" in done.stderr
    assert "moves a NIC's RDMA device into one pod's namespace" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    with pytest.raises(IntentError):
        _plan(default_doc(), rdma="shared", rdma_isolation=True)


def test_isolation_without_a_rail_network_is_refused_at_its_field(tmp_path: Path) -> None:
    doc = set_path(yaml.safe_load(SUPERPOD_IB.read_text()), ("kubernetes",), {"rdma_isolation": True})
    path = tmp_path / "ib.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "net"
    done = run_in_process("gpufabric", "export", "k8s-network", str(path), "-o", str(out))
    assert done.returncode == 2, done.stderr
    assert "kubernetes.rdma_isolation" in done.stderr and "leave rdma_isolation false" in done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


def test_hca_max_bounds() -> None:
    assert [c["rdmaHcaMax"] for c in _shared_config(objects(_plan(default_doc(), rdma="shared")))] == [63, 63]
    for bad in (0, 1001):
        with pytest.raises(IntentError, match="rdma_hca_max"):
            _plan(default_doc(), rdma="shared", rdma_hca_max=bad)
