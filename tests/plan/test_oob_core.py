"""The OOB plane with a core: mgmt switches aggregate per group of spines, and every spine uplinks to
every core switch (`superspine`), as large management networks are built when one set of spines
cannot take every mgmt switch's uplinks."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import default_doc, plan_doc

from gpufabric.intent import IntentError

ROLE = {"platform": "frr", "model": "lab-1g-8", "port_speed": "1G"}


def _doc(core_ports: int = 16, cores: int = 2, spine_uplinks: int | None = None) -> dict:
    doc = default_doc()
    oob = doc["planes"]["oob"]
    oob["spine_group"] = 2
    spine = {**ROLE, "ports": 6, **({"uplinks": spine_uplinks} if spine_uplinks else {})}
    oob["switches"] = {
        "mgmt": {**ROLE, "ports": 6, "uplinks": 2},  # 4 device ports each
        "spine": spine,
        "superspine": {**ROLE, "ports": core_ports, "count": cores},
    }
    return doc


def test_mgmt_switches_uplink_to_their_groups_spines_and_spines_to_every_core():
    plan = plan_doc(_doc(), "oob-core")
    oob = plan.planes["oob"]
    roles = Counter(d.role for d in oob.devices)
    ends = oob.sizing["management_ports"]
    assert roles["mgmt"] == -(-ends // 4) and roles["superspine"] == 2 and oob.tiers == 3
    # A spine keeps 2 ports for the cores, 4 for mgmt switches (one port from each): 4 mgmt switches a group.
    assert roles["spine"] == 2 * -(-roles["mgmt"] // 4)
    fabric = [link for link in oob.links if link.kind == "fabric"]
    spines = [d.name for d in oob.devices if d.role == "spine"]
    for m in range(roles["mgmt"]):
        name = f"oob-mgmt{m + 1}"
        ups = sorted(link.b for link in fabric if link.a == name)
        group = m // 4
        assert ups == sorted(spines[2 * group : 2 * group + 2]), (name, ups)
    cores = {d.name for d in oob.devices if d.role == "superspine"}
    for spine in spines:
        assert sorted(link.b for link in fabric if link.a == spine) == sorted(cores)
    used = Counter((end, port) for link in oob.links for end, port in ((link.a, link.a_port), (link.b, link.b_port)))
    assert max(used.values()) == 1  # no port cabled twice
    per_spine_down = Counter(link.b for link in fabric if link.b in spines)
    assert max(per_spine_down.values()) <= 4
    addresses = [d.mgmt_ip for d in plan.devices()] + [s.mgmt_ip for s in plan.servers if s.mgmt_ip]
    assert len(addresses) == len(set(addresses)) and None not in addresses
    assert {d.name for d in oob.devices} <= {fd.devices[0] for fd in oob.failure_domains}


def test_a_core_without_the_ports_for_every_spine_is_refused():
    with pytest.raises(IntentError) as refused:
        plan_doc(_doc(core_ports=1), "oob-core")
    assert "planes.oob.switches.superspine.ports: " in str(refused.value)
    assert "exceed 2 core switches of 1 ports" in str(refused.value)


def test_spine_uplinks_spread_evenly_over_the_cores():
    with pytest.raises(IntentError) as refused:
        plan_doc(_doc(spine_uplinks=3), "oob-core")
    assert "planes.oob.switches.spine.uplinks: 3 uplinks do not spread over 2 core switches" in str(refused.value)


def test_the_cabling_and_the_bill_of_material_count_the_core():
    from gpufabric.export.registry import EXPORTERS

    plan = plan_doc(_doc(), "oob-core")
    oob = plan.planes["oob"]
    fabric = [link for link in oob.links if link.kind == "fabric"]
    cabling = EXPORTERS["cabling"].render(plan)
    to_core = [row for row in cabling.splitlines() if "oob-core" in row]
    assert (
        len(to_core)
        == sum(1 for link in fabric if link.b.startswith("oob-core"))
        == 2 * len([d for d in oob.devices if d.role == "spine"])
    )
    bom = EXPORTERS["bom"].render(plan)
    roles = Counter(d.role for d in oob.devices)
    for role in ("superspine", "spine", "mgmt"):
        assert f'oob,switch,"lab-1g-8 (frr, {role})",{roles[role]}' in bom.splitlines(), bom
