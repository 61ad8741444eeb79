"""The intent's converged planes (`carries:`): what is refused, and where the refusal points."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpufabric.intent import IntentError, load_intent_text
from tests.conftest import INVENTORY, plan_doc, set_path

EXAMPLE = INVENTORY / "examples" / "converged-inband.yml"
CARRIES = ("planes", "business", "carries")


def _doc() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())


def _problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(dotted field path, message) of every problem the intent has, schema or rules."""
    with pytest.raises(IntentError) as caught:
        plan_doc(doc)
    return [(".".join(map(str, p.path)), p.message) for p in caught.value.problems]


def _line_of(doc: dict[str, Any], path: str) -> int | None:
    with pytest.raises(IntentError) as caught:
        load_intent_text(yaml.safe_dump(doc, sort_keys=False), "x.yml")
    err = caught.value
    return next(err.line_of(p.path) for p in err.problems if ".".join(map(str, p.path)) == path)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("vrf", "STO;reload"),
        ("vrf", "STORAGE\nrouter bgp 1"),
        ("vrf", "storage"),  # lower case: the pattern is upper-case letters, digits and '_'
        ("vrf", "A_VERY_LONG_VRF_NAME"),  # 20 characters: longer than a Linux device name
        ("vrf", "STORAGE_NVME"),  # 12: SONiC's Vrf_STORAGE_NVME is 16, which its YANG model refuses
        ("vrf", "MGMT"),  # reserved
        ("vlan", 1006),  # EOS's internal VLANs
        ("vlan", 1),
        ("vlan", "20"),  # strict: text is not a number
        ("hosts", "10.11.0.0/16 ; id"),
        ("dscp", [64]),
        ("groups", ["GPU $(id)"]),
        ("bandwidth_percent", 99),
    ],
)
def test_hostile_or_out_of_range_values_are_refused_at_their_field(field, value):
    doc = set_path(_doc(), (*CARRIES, "inband", field), value)
    found = _problems(doc)
    assert any(path.startswith(f"planes.business.carries.inband.{field}") for path, _ in found), found
    line = _line_of(doc, next(p for p, _ in found if p.startswith(f"planes.business.carries.inband.{field}")))
    assert line is not None and line > 1


def test_one_logical_plane_carried_by_two_fabrics_is_refused_at_both():
    # Each host would have two in-band planes with nothing to join them.
    doc = yaml.safe_load((INVENTORY / "fabric.yml").read_text())
    inband = {
        "vrf": "INBAND",
        "vlan": 30,
        "hosts": "10.13.0.0/16",
        "priority": 2,
        "dscp": [16],
        "bandwidth_percent": 10,
    }
    doc = set_path(doc, ("planes", "business", "carries"), {"inband": inband})
    doc = set_path(
        doc,
        ("planes", "storage", "carries"),
        {"inband": {**inband, "vrf": "INBAND2", "vlan": 31, "hosts": "10.14.0.0/16", "p2p": "10.24.0.0/24"}},
    )
    assert _problems(doc) == [
        ("planes.storage.carries.inband", "inband is carried by the business plane too"),
        ("planes.business.carries.inband", "inband is carried by the storage plane too"),
    ]


def test_an_unknown_carried_plane_is_refused():
    doc = _doc()
    doc["planes"]["business"]["carries"]["compute"] = doc["planes"]["business"]["carries"]["inband"]
    assert any(p.startswith("planes.business.carries.compute") for p, _ in _problems(doc))


def test_duplicate_vrf_vlan_priority_and_dscp_are_named():
    doc = _doc()
    inband = doc["planes"]["business"]["carries"]["inband"]
    inband |= {"vrf": "STORAGE", "vlan": 20, "priority": 6, "dscp": [26]}
    found = dict(_problems(doc))
    assert found["planes.business.carries.inband.vrf"] == "VRF STORAGE is storage's too"
    assert found["planes.business.carries.inband.vlan"] == "VLAN 20 is storage's too"
    assert found["planes.business.carries.inband.priority"] == "priority 6 is CNP's"
    assert found["planes.business.carries.inband.dscp.0"] == "DSCP 26 is RoCE's"


def test_shares_above_99_percent_are_refused():
    doc = set_path(_doc(), (*CARRIES, "storage", "bandwidth_percent"), 90)
    found = dict(_problems(doc))
    assert "take 100%" in found["planes.business.carries"]


def test_a_small_pool_and_a_missing_p2p_pool_are_refused():
    doc = set_path(_doc(), (*CARRIES, "inband", "hosts"), "10.13.0.0/17")
    doc = set_path(doc, (*CARRIES, "storage", "p2p"), None)
    del doc["planes"]["business"]["carries"]["storage"]["p2p"]
    found = dict(_problems(doc))
    assert "smaller than the plane's hosts pool 10.12.0.0/16" in found["planes.business.carries.inband.hosts"]
    assert "a /31 per fabric link" in found["planes.business.carries.storage.p2p"]


def test_a_carried_pool_overlapping_another_is_refused():
    doc = set_path(_doc(), (*CARRIES, "inband", "hosts"), "10.10.0.0/16")  # the compute plane's hosts
    found = dict(_problems(doc))
    assert "overlaps 10.10.0.0/16" in found["planes.business.carries.inband.hosts"]


def test_lossless_needs_the_roce_class_and_takes_no_class_of_its_own():
    doc = set_path(_doc(), ("planes", "business", "carries_roce"), False)
    doc = set_path(doc, (*CARRIES, "storage", "priority"), 4)
    found = dict(_problems(doc))
    assert "RoCE class, which it does not have" in found["planes.business.carries.storage.traffic"]
    assert "takes the QoS profile's RoCE priority" in found["planes.business.carries.storage.priority"]


def test_a_lossy_plane_needs_its_own_class():
    doc = _doc()
    del doc["planes"]["business"]["carries"]["inband"]["priority"]
    found = dict(_problems(doc))
    assert "needs its own class" in found["planes.business.carries.inband"]


def test_storage_carried_and_its_own_plane_at_once_is_refused():
    doc = _doc()
    doc["planes"]["storage"] = doc["planes"]["business"] | {"prefix": "sto", "carries": None, "border": None}
    doc["planes"]["storage"]["switches"] = {
        k: v for k, v in doc["planes"]["storage"]["switches"].items() if k != "border"
    }
    found = dict(_problems(doc))
    assert "is a plane of its own" in found["planes.business.carries.storage"]


def test_nics_of_a_carried_plane_are_refused():
    doc = _doc()
    doc["server_groups"][0]["nics"]["storage"] = {"speed": "200G", "interfaces": ["eth9"]}
    found = dict(_problems(doc))
    assert "rides the business plane's switches" in found["server_groups.0.nics.storage"]


def test_a_nic_set_that_carries_nothing_is_refused():
    doc = set_path(_doc(), (*CARRIES, "storage", "groups"), ["gpu"])
    doc = set_path(doc, (*CARRIES, "inband", "groups"), ["gpu"])
    found = dict(_problems(doc))
    assert "would carry nothing" in found["server_groups.1.nics.business.native"]


def test_unknown_groups_and_lacp_hosts_are_refused():
    doc = set_path(_doc(), (*CARRIES, "inband", "groups"), ["cpu"])
    doc = set_path(doc, ("planes", "business", "host_links"), "lacp")
    found = dict(_problems(doc))
    assert "'cpu' is not a server group" in found["planes.business.carries.inband.groups.0"]
    assert "routed host ports" in found["planes.business.host_links"]


def test_a_platform_without_carried_planes_is_refused_at_the_role(monkeypatch):
    """Every built-in platform renders carried planes; one that does not (a third party's, by the base class's
    default) is refused at the role's platform."""
    from gpufabric.platforms import platform
    from gpufabric.platforms.spec import Platform

    spec = platform("nxos")
    monkeypatch.setattr(spec, "carried_planes_problem", lambda: Platform.carried_planes_problem(spec))
    doc = set_path(_doc(), ("planes", "business", "switches", "spine", "platform"), "nxos")
    found = dict(_problems(doc))
    message = found["planes.business.switches.spine.platform"]
    assert message.startswith("gpufabric renders no VRFs on tagged subinterfaces for Cisco")
    assert message.endswith("so this plane cannot carry storage, inband")


def test_border_switches_need_no_carried_planes():
    doc = set_path(_doc(), ("planes", "business", "switches", "border", "platform"), "frr")
    plan = plan_doc(doc)
    assert {c.name for c in plan.planes["business"].carried} == {"storage", "inband"}


def test_the_lab_refuses_a_converged_plane_at_its_field():
    from gpufabric.fleet.lab.topology import as_frr
    from gpufabric.intent import load_intent

    with pytest.raises(IntentError) as caught:
        as_frr(load_intent(str(EXAMPLE)))
    problem = caught.value.problems[0]
    assert problem.path == ("planes", "business", "carries")
    assert "no VRF or 802.1Q devices" in problem.message
    assert caught.value.line_of(problem.path) is not None


def test_a_subinterface_name_longer_than_linux_takes_is_refused_at_the_nic():
    # enp219s0f0np0.20 is 16 characters: no host backend can create it (a Linux name takes 15).
    doc = set_path(_doc(), ("server_groups", 1, "nics", "business", "interfaces", 0), "enp219s0f0np0")
    problems = _problems(doc)
    assert problems == [
        (
            "server_groups.1.nics.business.interfaces.0",
            "the storage plane's subinterface enp219s0f0np0.20 is 16 characters, more than a Linux interface "
            "name takes (15)",
        ),
        (
            "server_groups.1.nics.business.interfaces.0",
            "the inband plane's subinterface enp219s0f0np0.30 is 16 characters, more than a Linux interface "
            "name takes (15)",
        ),
    ]
    assert _line_of(doc, "server_groups.1.nics.business.interfaces.0") is not None
    # 15 characters fit.
    plan_doc(set_path(_doc(), ("server_groups", 1, "nics", "business", "interfaces", 0), "enp21s0f0np0"))
