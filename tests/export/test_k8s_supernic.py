"""The NIC side of a Spectrum-X plane in `gpufabric export k8s-network`: NicConfigurationTemplates for the NIC
Configuration Operator and the operator in the NicClusterPolicy, judged by the published CRDs.

The NicClusterPolicy's CRD comes from the shared schemas folder (test_k8s_network's reader). The
NicConfigurationTemplate's CRD is not kept in this repository: `scripts/nic_configuration_crds.sh SOURCE` places
NVIDIA's published file (pinned commit and SHA-256) under .cache/nic-configuration-operator, or GPUFABRIC_NCO_CRDS
names its folder; without it the tests that need it skip and say which file is missing. The CRD's CEL rules
(x-kubernetes-validations), which jsonschema does not run, are held here by the same conditions written in Python,
and a rule this file does not know fails the test rather than passing unread.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import DELETE, INVENTORY, ROOT, plan_doc, set_path
from test_k8s_network import _crds, objects, published_crds, schema_errors

from gpufabric.export import inventory, k8s_labels, k8s_network
from gpufabric.intent import IntentError

SPECTRUM_X = INVENTORY / "examples" / "spectrum-x.yml"
NCO_CRDS = Path(os.environ.get("GPUFABRIC_NCO_CRDS", ROOT / ".cache" / "nic-configuration-operator"))
NCO_CRD = "configuration.net.nvidia.com_nicconfigurationtemplates.yaml"
TEMPLATE_KEY = ("configuration.net.nvidia.com/v1alpha1", "NicConfigurationTemplate")


def _doc() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load(SPECTRUM_X.read_text()))


@pytest.fixture(scope="module")
def crds() -> dict[str, dict[tuple[str, str], dict[str, Any]]]:
    return published_crds()


@pytest.fixture(scope="module")
def nco(crds: Any) -> dict[str, Any]:
    """The shared CRDs plus the NIC Configuration Operator's NicConfigurationTemplate (read the same way)."""
    if not (NCO_CRDS / NCO_CRD).is_file():
        pytest.skip(
            f"{NCO_CRDS / NCO_CRD} is missing: run scripts/nic_configuration_crds.sh with a clone of "
            "Mellanox/nic-configuration-operator (or set GPUFABRIC_NCO_CRDS)"
        )
    found = _crds(NCO_CRDS)
    assert TEMPLATE_KEY in found
    return {flavour: {**schemas, **found} for flavour, schemas in crds.items()}


def _templates(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == "NicConfigurationTemplate"]


@pytest.mark.parametrize("mode", ["host-device", "sriov"])
def test_the_spectrum_x_example_configures_its_supernics_and_passes_the_crds(mode: str, nco: Any) -> None:
    plan = plan_doc(set_path(_doc(), ("kubernetes",), {"rdma": mode}))
    objs = objects(plan)
    for obj in objs:
        assert schema_errors(obj, nco) == [], (obj["kind"], obj["metadata"]["name"])
    (template,) = _templates(objs)
    spec = template["spec"]
    # ConnectX-8's PCI device ID, the group's nodes by the labels the k8s-labels export writes.
    assert spec["nicSelector"] == {"nicType": "1023"}
    labels = k8s_labels.labels(plan)
    chosen = {node for node, has in labels.items() if all(has.get(k) == v for k, v in spec["nodeSelector"].items())}
    assert chosen == {s.name for s in plan.servers if s.group == "gb300"} and len(chosen) == 36
    sx = spec["template"]["spectrumXOptimized"]
    assert sx == {
        "enabled": True,
        "version": "spectrum-x-ra2-3",
        "platformType": "gb300",
        "overlay": "none",
        "multiplaneMode": "none",
        "numberOfPlanes": 1,
    }
    assert spec["template"]["numVfs"] == 1 and spec["template"]["linkType"] == "Ethernet"
    assert "roceOptimized" not in spec["template"]
    (policy,) = [o for o in objs if o["kind"] == "NicClusterPolicy"]
    nco_spec = policy["spec"]["nicConfigurationOperator"]
    assert nco_spec["operator"]["image"] == "nic-configuration-operator"
    assert nco_spec["configurationDaemon"]["image"] == "nic-configuration-operator-daemon"


def test_the_cnp_follows_the_planes_qos_contract() -> None:
    doc = _doc()
    doc["qos_profiles"]["roce"] = {"cnp_dscp": 40, "cnp_priority": 5}
    (template,) = _templates(objects(plan_doc(doc)))
    raw = {p["name"]: p["value"] for p in template["spec"]["template"]["rawNvConfig"]}
    assert raw == {"CNP_DSCP_P1": "40", "CNP_DSCP_P2": "40", "CNP_802P_PRIO_P1": "5", "CNP_802P_PRIO_P2": "5"}
    # ... which the switches' side of the same contract uses too (the inventory's QoS facts).
    qos = inventory.plane_facts(plan_doc(doc))["compute"]["qos"]
    assert (qos["cnp_dscp"], qos["cnp_priority"]) == (40, 5)


# The CRD's CEL rules by their messages, each as the same condition on the object in Python.
def _sx(t: dict[str, Any]) -> dict[str, Any]:
    return t.get("spectrumXOptimized") or {}


CEL: dict[str, Any] = {
    "spectrumXOptimized can be enabled only for ConnectX-8, ConnectX-9 or BlueField-3 SuperNICs": lambda s: (
        not _sx(s["template"]).get("enabled") or s["nicSelector"]["nicType"] in ("1023", "1025", "a2dc")
    ),
    "hwplb MultiplaneMode can only be enabled for ConnectX-8 (NicType 1023) or ConnectX-9 (NicType 1025)": lambda s: (
        _sx(s["template"]).get("multiplaneMode") != "hwplb" or s["nicSelector"]["nicType"] in ("1023", "1025")
    ),
    "networkBay can only be configured for ConnectX-9 (NicType 1025)": lambda s: (
        "networkBay" not in s["template"] or s["nicSelector"]["nicType"] == "1025"
    ),
    "spectrumXOptimized can be enabled only when linkType=='Ethernet' (or unset for Network Bay) and numVfs==1": (
        lambda t: not _sx(t).get("enabled") or (t.get("linkType", "Ethernet") == "Ethernet" and t["numVfs"] == 1)
    ),
    "spectrumXOptimized includes RoCE optimizations, so separate roceOptimized section must not be enabled": (
        lambda t: not _sx(t).get("enabled") or not (t.get("roceOptimized") or {}).get("enabled")
    ),
    "linkType is required unless networkBay is configured": lambda t: "networkBay" in t or "linkType" in t,
    "linkType must not be set when networkBay is configured (the Network Bay link type is governed by the system "
    "configuration)": lambda t: "networkBay" not in t or "linkType" not in t,
    "rawNvConfig parameter names must not use index-range syntax like NAME[0..3]; list each index explicitly "
    "(NAME[0], NAME[1], ...)": lambda t: all(".." not in p["name"] for p in t.get("rawNvConfig", [])),
    "when MultiplaneMode is none, numberOfPlanes must be 1": lambda x: (
        x.get("multiplaneMode", "none") != "none" or x.get("numberOfPlanes", 1) == 1
    ),
    "when MultiplaneMode is not none, numberOfPlanes must not be 1": lambda x: (
        x.get("multiplaneMode", "none") == "none" or x.get("numberOfPlanes", 1) != 1
    ),
    "platformType is required when Spectrum-X optimization is enabled": lambda x: (
        not x.get("enabled") or "platformType" in x
    ),
}


def _rules(schema: Any, at: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """(where in the object, message) of every CEL rule in the schema."""
    out = [(at, r["message"]) for r in schema.get("x-kubernetes-validations", [])]
    for key, sub in schema.get("properties", {}).items():
        out += _rules(sub, (*at, key))
    return out


def test_the_crds_cel_rules_hold_for_every_template(nco: Any) -> None:
    schema = nco["upstream"][TEMPLATE_KEY]
    rules = _rules(schema)
    unknown = [m for _, m in rules if m not in CEL]
    assert not unknown, f"CEL rules this test does not hold: {unknown}"
    doc = _doc()
    checked = 0
    for obj in _templates(objects(plan_doc(doc))):
        for where, message in rules:
            node: Any = obj
            for key in where:
                node = node.get(key, {})
            assert CEL[message](node), message
            checked += 1
    assert checked == len(rules) > 5
    # The same conditions catch what the API server's rules would: a ConnectX-7, two VFs, RoCE optimized beside.
    (obj,) = _templates(objects(plan_doc(doc)))
    bad_type = copy.deepcopy(obj["spec"])
    bad_type["nicSelector"]["nicType"] = "1021"
    assert not CEL["spectrumXOptimized can be enabled only for ConnectX-8, ConnectX-9 or BlueField-3 SuperNICs"](
        bad_type
    )
    two_vfs = {**obj["spec"]["template"], "numVfs": 2}
    assert not CEL[next(m for m in CEL if m.startswith("spectrumXOptimized can be enabled only when"))](two_vfs)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda s: s["template"]["spectrumXOptimized"].update(multiplaneMode="bogus"), "is not one of"),
        (lambda s: s["template"].update(numVfs="1"), "is not of type 'integer'"),
        (lambda s: s["template"]["spectrumXOptimized"].update(overlay="vxlan"), "is not one of"),
        (lambda s: s["template"].update(spectrumXOptimised={"enabled": True}), "Additional properties"),
        (lambda s: s["template"]["spectrumXOptimized"].pop("version"), "'version' is a required property"),
        (lambda s: s["nicSelector"].pop("nicType"), "'nicType' is a required property"),
    ],
)
def test_a_planted_error_fails_the_crd(change: Any, says: str, nco: Any) -> None:
    (obj,) = _templates(objects(plan_doc(_doc())))
    bad = copy.deepcopy(obj)
    change(bad["spec"])
    errors = schema_errors(bad, nco)
    assert any(says in e for e in errors), errors


def test_without_spectrum_x_there_is_no_nic_configuration() -> None:
    for path in (INVENTORY / "fabric.yml", INVENTORY / "examples" / "superpod-1su.yml"):
        plan = plan_doc(yaml.safe_load(path.read_text()))
        docs = k8s_network.documents(plan)
        assert "nic-configuration.yaml" not in docs
        assert "nicConfigurationOperator" not in docs["nic-cluster-policy.yaml"]
        assert "NicConfigurationTemplate" not in k8s_network.render(plan)
    assert "spectrum_x" not in inventory.plane_facts(plan)["compute"]


def test_the_hosts_get_the_planes_spectrum_x_settings() -> None:
    facts = inventory.plane_facts(plan_doc(_doc()))
    assert facts["compute"]["spectrum_x"] == {"profile": "spectrum-x-ra2-3", "platform": "gb300"}
    assert "spectrum_x" not in facts["oob"]


def _refused(doc: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(IntentError) as info:
        plan_doc(doc, "spectrum-x.yml")
    problems = [p for p in info.value.problems if p.field == field]
    assert problems, [(p.field, p.message) for p in info.value.problems]
    assert any(words in f"{p.message} {p.hint}" for p in problems), [(p.message, p.hint) for p in problems]
    assert info.value.line_of(problems[0].path) is not None


NIC_MODEL = ("server_groups", 0, "nics", "compute", "model")
SPECTRUM = ("planes", "compute", "spectrum_x")


@pytest.mark.parametrize(
    ("edits", "field", "words"),
    [
        ([(("planes", "compute", "load_balancing"), "ecmp")], "planes.compute.spectrum_x", "adaptive routing"),
        ([(NIC_MODEL, "ConnectX-7")], "server_groups[0].nics.compute.model", "ConnectX-7 is not a SuperNIC"),
        ([(NIC_MODEL, DELETE)], "server_groups[0].nics.compute.model", "no NIC model is given"),
        (
            [(("planes", "compute", "switches", "spine", "model"), "SN4700")],
            "planes.compute.switches.spine.model",
            "not an NVIDIA Spectrum-X switch",
        ),
        ([(SPECTRUM, DELETE)], "planes.compute", "add spectrum_x"),
        ([(("qos_profiles", "roce"), {"roce_priority": 4})], "qos_profiles.roce.roce_priority", "priority 3"),
        (
            [(("server_groups", 0, "nics", "oob", "model"), "ConnectX-8")],
            "server_groups[0].nics.oob.model",
            "selects a node's NICs by type",
        ),
        ([(("planes", "compute", "spectrum_x", "profile"), "RA2.3")], "planes.compute.spectrum_x.profile", "RA2.3"),
        # The operator's multi-plane modes split a SuperNIC over 2 or 4 planes (numberOfPlanes): 3 is refused.
        (
            [(("planes", "compute", "multiplane"), {"planes": 3})],
            "planes.compute.multiplane.planes",
            "2 or 4 planes",
        ),
    ],
)
def test_where_the_nic_side_cannot_apply_the_intent_is_refused_at_the_field(
    edits: list[tuple[tuple[Any, ...], Any]], field: str, words: str
) -> None:
    doc = _doc()
    for path, value in edits:
        doc = set_path(doc, path, value)
    _refused(doc, field, words)


def test_without_supernics_adaptive_routing_alone_stays_as_it_was() -> None:
    """Adaptive routing on Spectrum-4 switches toward NICs of no given model: the switches' side only, as before."""
    doc = set_path(set_path(_doc(), SPECTRUM, DELETE), NIC_MODEL, DELETE)
    plan = plan_doc(doc)
    assert "nic-configuration.yaml" not in k8s_network.documents(plan)


def test_a_multiplane_plane_sets_the_supernics_software_plane_balancing_and_passes_the_crd(nco: Any) -> None:
    """Each plane's port of a SuperNIC is an interface with its own address and NCCL balances over them: `swplb`
    with the plan's plane count, which the CRD and its CEL rules accept for ConnectX-8."""
    doc = set_path(_doc(), ("planes", "compute", "multiplane"), {"planes": 2, "ports": "interleaved"})
    objs = objects(plan_doc(doc))
    (template,) = _templates(objs)
    sx = template["spec"]["template"]["spectrumXOptimized"]
    assert (sx["multiplaneMode"], sx["numberOfPlanes"]) == ("swplb", 2)
    for obj in objs:
        assert schema_errors(obj, nco) == [], (obj["kind"], obj["metadata"]["name"])
    rules = _rules(nco["upstream"][TEMPLATE_KEY])
    for where, message in rules:
        node: Any = template
        for key in where:
            node = node.get(key, {})
        assert CEL[message](node), message
