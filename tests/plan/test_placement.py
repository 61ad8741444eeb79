"""Hosts listed with racks, positions and serials; the site's racks and switch places; cable lengths from
positions (the distance model) or as measured; and the intent rules that keep them consistent."""

from __future__ import annotations

import copy
import csv
import io
from typing import Any

import pytest
from conftest import plan_doc
from sot_fabric import sot_intent

from gpufabric.export import cabling
from gpufabric.export.plan_json import full
from gpufabric.intent import IntentError
from gpufabric.intent.model import Distances, Rack
from gpufabric.plan.placement import length_m

D = Distances()


def lengths(doc: dict[str, Any]) -> dict[str, str]:
    rows = csv.DictReader(io.StringIO(cabling.render(plan_doc(doc))))
    return {r["cable_id"]: r["length_m"] for r in rows}


def test_distance_model() -> None:
    r1, r2, r9 = Rack(name="r1", row=1, column=1), Rack(name="r2", row=1, column=2), Rack(name="r9", row=3, column=4)
    # Within a rack: 8 units (0.356 m) and the 2 m of slack: 3 m.
    assert length_m(D, r1, 2, r1, 10) == 3
    assert length_m(D, r1, 5, r1, 5) == 2
    # Next rack, both at the top unit: half a unit up each, 0.5 m tray each way, 0.6 m across, 2 m slack.
    assert length_m(D, r1, 42, r2, 42) == 4
    # From the bottom: 2 x (41.5 units + 0.5 m) + 0.6 m + 2 m = 7.29 m -> 8 m.
    assert length_m(D, r1, 1, r2, 1) == 8
    # Two rows and three columns away: + 2 x 2.4 m + 3 x 0.6 m.
    assert length_m(D, r1, 1, r9, 1) == 14  # 13.29 m
    assert length_m(D, r1, 1, r9, 1) == length_m(D, r9, 1, r1, 1)
    no_slack = Distances(slack=0, tray=0)
    assert length_m(no_slack, r1, 1, r1, 23) == 1  # 22 units: 0.978 m, rounded up


def test_plan_takes_lengths_from_positions_and_keeps_everything_else() -> None:
    doc = sot_intent(3)
    plain = copy.deepcopy(doc)
    del plain["site"]
    for host in plain["server_groups"][0]["hosts"]:
        del host["rack"], host["position"], host["serial"]
    with_site, without = full(plan_doc(doc)), full(plan_doc(plain))
    assert "length_m" not in without["planes"]["compute"]["links"][0]
    for name, plane in with_site["planes"].items():  # the same fabric, placed
        for placed, bare in zip(plane["links"], without["planes"][name]["links"], strict=True):
            assert {k: v for k, v in placed.items() if k not in ("label", "length_m")} == bare
    by_id = lengths(doc)
    assert by_id["cmp-000009"] == "4"  # gpu01 (r01 U2) to cmp-su1-leaf1 (r01 U40)
    assert by_id["cmp-000001"] == "7"  # cmp-su1-leaf1 (r01 U40) to cmp-spine1 (r03 U30, next row)
    assert by_id["sto-000013"] == ""  # stor01: a storage server has no place: no length
    gpu = {s["name"]: s for s in with_site["servers"]}
    assert (gpu["gpu03"]["rack"], gpu["gpu03"]["position"], gpu["gpu03"]["serial"]) == ("r02", 2, "SN-GPU03")


def test_measured_length_wins() -> None:
    doc = sot_intent(3)
    doc["site"]["cable_lengths"] = {"cmp-000009": 11}
    assert lengths(doc)["cmp-000009"] == "11"


def test_hosts_name_servers_in_order_and_grow_to_build_out() -> None:
    three, four = plan_doc(sot_intent(3)), plan_doc(sot_intent(4))
    assert [s.name for s in three.servers if s.group == "gpu"] == ["gpu01", "gpu02", "gpu03"]
    new = {(link.a, link.a_port, link.b, link.b_port) for link in four.links()} - {
        (link.a, link.a_port, link.b, link.b_port) for link in three.links()
    }
    assert {a for a, _, _, _ in new} == {"gpu04"}  # growing the list adds only the new server's cables
    assert "unlisted" not in " ".join(s.name for s in three.servers)


def bad(doc: dict[str, Any], field: str, words: str) -> None:
    with pytest.raises(IntentError) as info:
        plan_doc(doc)
    text = info.value.render()
    assert field in text and words in text, text


def test_rules_on_hosts_and_site() -> None:
    doc = sot_intent(3)
    d = copy.deepcopy(doc)
    d["server_groups"][0]["count"] = 5
    bad(d, "server_groups[0].count", "is not the 3 hosts listed")
    d = copy.deepcopy(doc)
    d["server_groups"][0]["naming"] = "gpu{index:02d}"
    bad(d, "server_groups[0].naming", "by `hosts` and by `naming`")
    d = copy.deepcopy(doc)
    d["server_groups"][1]["naming"] = "gpu{index:02d}"
    bad(d, "server_groups[1].naming", "also made by group")
    d = copy.deepcopy(doc)
    d["server_groups"][0]["hosts"][1]["name"] = "gpu01"
    bad(d, "server_groups[0].hosts[1].name", "is also in group 'gpu'")
    d = copy.deepcopy(doc)
    d["server_groups"][0]["hosts"][0]["rack"] = "r77"
    bad(d, "server_groups[0].hosts[0].rack", "rack 'r77' is not under site.racks")
    d = copy.deepcopy(doc)
    del d["server_groups"][0]["hosts"][0]["position"]
    bad(d, "server_groups[0].hosts[0]", "a rack without a position")
    d = copy.deepcopy(doc)
    d["site"]["switches"]["cmp-spine1"]["position"] = 50
    bad(d, "site.switches.cmp-spine1.position", "above rack 'r03'")
    d = copy.deepcopy(doc)
    d["site"]["racks"][1]["column"] = 1
    bad(d, "site.racks[1].column", "stands where rack 'r01' does")
    d = copy.deepcopy(doc)
    d["site"]["switches"]["cmp-spine9"] = {"rack": "r03", "position": 1}
    bad(d, "site.switches.cmp-spine9", "no planned switch is named")
    d = copy.deepcopy(doc)
    d["site"]["cable_lengths"] = {"cmp-009999": 3}
    bad(d, "site.cable_lengths.cmp-009999", "no planned cable is labelled")
    d = copy.deepcopy(doc)
    del d["server_groups"][0]["hosts"], d["server_groups"][0]["build_out"]
    bad(d, "server_groups[0].count", "the group has no servers")
    d = copy.deepcopy(doc)
    d["planes"]["compute"]["cable_length"] = "5m"
    bad(d, "planes.compute.cable_length", "cable cmp-000001 is 7 m by the site's positions")
