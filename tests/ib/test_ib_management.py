"""InfiniBand switches' management ports on the OOB plane: cabled, addressed and counted like an Ethernet
switch's, after every port and address the Ethernet planes already had."""

from __future__ import annotations

import copy
import csv
import io
import json
from ipaddress import IPv4Network, ip_address
from typing import Any

import pytest
import yaml
from conftest import INVENTORY, plan_doc

from gpufabric.errors import GpufabricError
from gpufabric.export import bom, cabling, plan_json

LAB = INVENTORY / "examples" / "lab-infiniband.yml"


def _doc() -> dict[str, Any]:
    return yaml.safe_load(LAB.read_text())


def test_every_ib_switch_is_cabled_to_an_oob_switch_and_addressed_after_the_servers() -> None:
    plan = plan_doc(_doc())
    ib = plan.infiniband
    assert ib is not None
    switches = [n.name for n in ib.fabric.switches]
    assert len(switches) == 5  # two units of two leaves, one spine
    oob = plan.planes["oob"]
    mgmt = {link.a: link for link in oob.links if link.kind == "mgmt"}
    for name in switches:
        link = mgmt[name]
        assert link.a_port == "mgmt0"
        assert link.b == "oob-mgmt1"
        assert (ib.management[name].oob_switch, ib.management[name].oob_port) == (link.b, link.b_port)
    assert list(ib.management) == switches
    # The IB switches come after every Ethernet switch and server: nothing planned before moves.
    order = [link.a for link in oob.links if link.kind == "mgmt"]
    assert order[-len(switches) :] == switches
    ports = [link.b_port for link in oob.links if link.kind == "mgmt"]
    assert len(set(ports)) == len(ports)
    subnet = IPv4Network(plan.intent.planes.oob.subnet)
    ib_ips = [ib.management[n].address for n in switches]
    others = [d.mgmt_ip for p in plan.planes.values() for d in p.devices] + [s.mgmt_ip for s in plan.servers]
    assert all(a is not None and ip_address(a) in subnet for a in ib_ips)
    assert len(set(ib_ips + others)) == len(ib_ips) + len(others)
    assert min(a for a in ib_ips if a is not None) > max(a for a in others if a is not None)
    assert oob.sizing["management_ports"] == len(others) - 1 + len(switches)  # the OOB switch has no port on itself


def test_the_exports_show_the_ib_management_cables() -> None:
    plan = plan_doc(_doc())
    rows = list(csv.DictReader(io.StringIO(cabling.render(plan))))
    ib_rows = [r for r in rows if r["plane"] == "oob" and r["a_port"] == "mgmt0"]
    assert [r["a_device"] for r in ib_rows] == ["su1-leaf1", "su1-leaf2", "su2-leaf1", "su2-leaf2", "spine01"]
    oob_rows = [r for r in rows if r["plane"] == "oob"]
    bom_rows = list(csv.DictReader(io.StringIO(bom.render(plan))))
    oob_cables = sum(int(r["quantity"]) for r in bom_rows if r["plane"] == "oob" and r["category"] == "cable")
    assert oob_cables == len(oob_rows) == 22
    full = plan_json.full(plan)
    entries = {m["name"]: m for m in full["infiniband"]["management"]}
    assert entries["spine01"]["mgmt_port"] == "mgmt0"
    assert entries["spine01"]["oob_switch"] == "oob-mgmt1"
    assert full["infiniband"]["management_ports"] == 5
    json.dumps(full)


def test_without_an_oob_plane_the_ib_switches_have_no_management_port() -> None:
    doc = _doc()
    del doc["planes"]["oob"]
    for group in doc["server_groups"]:
        group["nics"].pop("oob", None)
    plan = plan_doc(doc)
    assert plan.infiniband is not None and plan.infiniband.management == {}
    assert "oob" not in plan.planes


def test_an_oob_switch_without_room_for_the_ib_switches_is_refused_at_its_field() -> None:
    doc = copy.deepcopy(_doc())
    # 17 Ethernet switches and BMCs fit a 20-port switch; the 5 IB switches do not.
    doc["planes"]["oob"]["switches"]["mgmt"]["ports"] = 20
    with pytest.raises(GpufabricError) as err:
        plan_doc(doc)
    assert "22 management ports need more than one 20-port mgmt switch" in str(err.value)
