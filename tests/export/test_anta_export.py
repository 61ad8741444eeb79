"""`gpufabric export anta`: ANTA catalogs for the EOS switches, read by ANTA's own catalog parser, and two of
their tests run by ANTA itself on answers written in EOS's published JSON form (`show lldp neighbors detail`,
`show bgp neighbors vrf all`): the answer of a switch cabled as planned passes, a swapped cable fails."""

from __future__ import annotations

import asyncio
import csv
import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from anta.catalog import AntaCatalog
from anta.device import AsyncEOSDevice
from conftest import EXAMPLES, INVENTORY, example_plan, run_in_process

from gpufabric.export import anta, cabling

EOS_EXAMPLES = [p for p in EXAMPLES if any(d.platform == "eos" for d in example_plan(p).devices())]
MULTI = INVENTORY / "examples" / "multi-vendor.yml"


def test_there_is_an_eos_example() -> None:
    assert MULTI in EOS_EXAMPLES


@pytest.mark.parametrize("path", EOS_EXAMPLES, ids=lambda p: p.stem)
def test_the_fabric_catalog_passes_anta_s_parser_with_every_test_tagged_to_its_switch(path: Path, tmp_path) -> None:
    plan = example_plan(path)
    eos = sorted(d.name for d in plan.devices() if d.platform == "eos")
    out = tmp_path / "catalog.yml"
    out.write_text(anta.render(plan))
    parsed = AntaCatalog.parse(out)
    parsed.build_indexes()
    tags = {tag for test in parsed.tests for tag in test.inputs.filters.tags}
    assert tags == set(eos)
    for name in eos:
        mine = {t.test.__name__ for t in parsed.get_tests_by_tags({name})}
        assert {"VerifyLLDPNeighbors", "VerifyInterfacesStatus", "VerifyInterfacesSpeed"} <= mine
        assert "VerifyBGPPeerSession" in mine


def test_one_catalog_per_switch_each_passes_the_parser(tmp_path) -> None:
    done = run_in_process("gpufabric", "export", "anta", str(MULTI), "-o", str(tmp_path / "anta"))
    assert done.returncode == 0, done.stderr
    files = sorted((tmp_path / "anta").iterdir())
    plan = example_plan(MULTI)
    assert [f.stem for f in files] == sorted(d.name for d in plan.devices() if d.platform == "eos")
    for f in files:
        assert AntaCatalog.parse(f).tests


def _cables(plan) -> set[tuple[str, str, str, str]]:
    """Switch-to-switch cables as the cabling export lists them (both directions)."""
    rows = list(csv.DictReader(io.StringIO(cabling.render(plan))))
    out = set()
    for r in rows:
        out.add((r["a_device"], r["a_port"], r["b_device"], r["b_port"]))
        out.add((r["b_device"], r["b_port"], r["a_device"], r["a_port"]))
    return out


def test_every_lldp_neighbour_is_a_planned_cable() -> None:
    plan = example_plan(MULTI)
    cables = _cables(plan)
    found = 0
    for name, found_catalog in anta.catalogs(plan).items():
        for entry in found_catalog["anta.tests.connectivity"]:
            for n in entry["VerifyLLDPNeighbors"]["neighbors"]:
                assert (name, n["port"], n["neighbor_device"], n["neighbor_port"]) in cables
                found += 1
    assert found >= 12


def _run(test_class: type, device_name: str, inputs: dict[str, Any], answer: dict[str, Any]) -> Any:
    device = AsyncEOSDevice(host="127.0.0.1", username="u", password="p", name=device_name)
    test = test_class(device, inputs=inputs, eos_data=[answer])
    asyncio.run(test.test())
    return test.result


def _inputs(catalog: dict[str, Any], module: str, name: str, sub: str | None = None) -> dict[str, Any]:
    section = catalog[module][sub] if sub else catalog[module]
    return next(e[name] for e in section if name in e)


def _lldp_answer(neighbors: list[dict[str, str]]) -> dict[str, Any]:
    """`show lldp neighbors detail | json` as EOS prints it (the fields ANTA reads, and their neighbours)."""
    return {
        "lldpNeighbors": {
            n["port"]: {
                "lldpNeighborInfo": [
                    {
                        "chassisIdType": "macAddress",
                        "chassisId": "02:00:00:00:00:01",
                        "systemName": f"{n['neighbor_device']}.example.net",
                        "neighborInterfaceInfo": {
                            "interfaceIdType": "interfaceName",
                            "interfaceId": f'"{n["neighbor_port"]}"',
                            "interfaceId_v2": n["neighbor_port"],
                            "interfaceDescription": "",
                        },
                    }
                ]
            }
            for n in neighbors
        }
    }


def test_anta_passes_a_switch_cabled_as_planned_and_fails_a_swapped_cable() -> None:
    from anta.tests.connectivity import VerifyLLDPNeighbors

    catalog = anta.catalogs(example_plan(MULTI))["sto-leaf1a"]
    inputs = _inputs(catalog, "anta.tests.connectivity", "VerifyLLDPNeighbors")
    good = _run(VerifyLLDPNeighbors, "sto-leaf1a", inputs, _lldp_answer(inputs["neighbors"]))
    assert good.result == "success", good.messages
    swapped = [dict(n) for n in inputs["neighbors"]]
    first, second = swapped[0]["neighbor_device"], swapped[1]["neighbor_device"]
    swapped[0]["neighbor_device"], swapped[1]["neighbor_device"] = second, first
    bad = _run(VerifyLLDPNeighbors, "sto-leaf1a", inputs, _lldp_answer(swapped))
    assert bad.result == "failure"
    assert any("Wrong LLDP neighbors" in m for m in bad.messages)


def _bgp_answer(addresses: list[str], down: str | None) -> dict[str, Any]:
    """`show bgp neighbors vrf all | json` (revision 2 of its model), the fields ANTA reads."""
    return {
        "vrfs": {
            "default": {
                "peerList": [
                    {
                        "peerAddress": a,
                        "state": "Active" if a == down else "Established",
                        "establishedTime": 3600,
                        "peerTcpInfo": {"inputQueueLength": 0, "outputQueueLength": 0},
                    }
                    for a in addresses
                ]
            }
        }
    }


def test_anta_fails_a_planned_session_that_is_not_established() -> None:
    from anta.tests.routing.bgp import VerifyBGPPeerSession

    catalog = anta.catalogs(example_plan(MULTI))["sto-spine1"]
    inputs = _inputs(catalog, "anta.tests.routing", "VerifyBGPPeerSession", "bgp")
    addresses = [p["peer_address"] for p in inputs["bgp_peers"]]
    assert len(addresses) == 4
    assert _run(VerifyBGPPeerSession, "sto-spine1", inputs, _bgp_answer(addresses, None)).result == "success"
    bad = _run(VerifyBGPPeerSession, "sto-spine1", inputs, _bgp_answer(addresses, addresses[2]))
    assert bad.result == "failure"
    assert any("Expected: Established Actual: Active" in m for m in bad.messages)


def test_a_fabric_without_eos_is_refused_with_exit_2() -> None:
    done = run_in_process("gpufabric", "export", "anta", str(INVENTORY / "fabric.yml"))
    assert done.returncode == 2
    assert "ANTA tests Arista EOS" in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""


def test_the_catalog_is_plain_yaml_with_anta_s_module_layout() -> None:
    text = anta.render(example_plan(MULTI))
    doc = yaml.safe_load(text)
    assert set(doc) >= {"anta.tests.connectivity", "anta.tests.interfaces", "anta.tests.routing"}
    assert "bgp" in doc["anta.tests.routing"]
