"""Which changes of a SONiC switch are disruptive, read from its driver's diff of real configurations.

The running and candidate CONFIG_DB are cmp-leaf1a's rendered config_db.json of the sonic example
(tests/golden/sonic/), one field changed. The generic config updater's dry run prints the JSON patch (RFC
6902) between them; `json_patch` below stands in for it (no SONiC here), one `replace` per changed field.
The routing part is FRR's reload diff in the form the driver keeps (`_frr_diff`), as the SONiC test double
prints it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import ROOT

from gpufabric.nos.sonic.driver import _frr_diff, _patch
from gpufabric.platforms import platform
from gpufabric.platforms.disruption import Reason

SONIC = platform("sonic")
GOLDEN = ROOT / "tests" / "golden" / "sonic"
RUNNING = json.loads((GOLDEN / "cmp-leaf1a.config_db.json").read_text())
FRR = (GOLDEN / "cmp-leaf1a.frr.conf").read_text()


def json_patch(old: dict[str, Any], new: dict[str, Any]) -> str:
    ops = [
        {"op": "replace", "path": f"/{table}/{key}/{name}", "value": value}
        for table, rows in new.items()
        for key, fields in rows.items()
        for name, value in fields.items()
        if old.get(table, {}).get(key, {}).get(name) != value
    ]
    return json.dumps(ops)


def reload_test(old: str, new: str) -> str:
    """What the SONiC test double prints for `frr-reload.py --test`: the lines gone and the lines new."""
    before, after = old.splitlines(), new.splitlines()
    return "\n".join(["Lines To Delete", *[f"-{ln}" for ln in before if ln not in after],
                      "Lines To Add", *[f"+{ln}" for ln in after if ln not in before]])  # fmt: skip


def driver_diff(change: Callable[[dict[str, Any]], object] | None = None, frr: str = FRR) -> str:
    candidate = copy.deepcopy(RUNNING)
    if change is not None:
        change(candidate)
    parts = (_patch(json_patch(RUNNING, candidate)), _frr_diff(reload_test(FRR, frr)))
    return "\n".join(p for p in parts if p)


def meta(t: dict[str, Any]) -> dict[str, Any]:
    return t["DEVICE_METADATA"]["localhost"]


CHANGES: dict[str, tuple[Callable[[dict[str, Any]], object], set[Reason]]] = {
    "description": (lambda t: t["PORT"]["Ethernet0"].__setitem__("description", "host: gpu001 moved"), set()),
    "ntp": (lambda t: t["NTP_SERVER"]["172.16.0.10"].__setitem__("iburst", "off"), set()),
    "mtu": (lambda t: t["PORT"]["Ethernet0"].__setitem__("mtu", "9100"), {Reason.MTU}),
    "speed": (lambda t: t["PORT"]["Ethernet0"].__setitem__("speed", "200000"), {Reason.PORT_SPEED}),
    "buffer": (lambda t: t["BUFFER_PROFILE"]["egress_lossy_profile"].__setitem__("size", "12000"), {Reason.BUFFERS}),
    "cable length": (lambda t: t["CABLE_LENGTH"]["AZURE"].__setitem__("Ethernet0", "40m"), {Reason.BUFFERS}),
    "hwsku": (lambda t: meta(t).__setitem__("hwsku", "Mellanox-SN4700-O8C48"), {Reason.REBOOT}),
    "asn in CONFIG_DB": (lambda t: meta(t).__setitem__("bgp_asn", "4200000009"), {Reason.BGP_RESET}),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_change_of_a_rendered_switch_is_hitless_or_disruptive_for_its_reason(change):
    mutate, expected = CHANGES[change]
    diff = driver_diff(mutate)
    assert diff.strip()
    assert {d.reason for d in SONIC.disruptions(diff)} == expected, diff


def test_the_routing_part_is_read_as_on_an_frr_switch():
    described = driver_diff(frr=FRR.replace("description cmp-spine1", "description spine one", 1))
    assert described and SONIC.disruptions(described) == ()
    renumbered = driver_diff(frr=FRR.replace("router bgp 4200000001", "router bgp 4200000009"))
    assert [str(d) for d in SONIC.disruptions(renumbered)] == [
        "bgp-reset: the BGP instance is removed (its ASN changes) [- no router bgp 4200000001]"
    ]


def test_a_table_the_rules_do_not_know_is_not_taken_for_hitless():
    diff = driver_diff(lambda t: t["PORT"]["Ethernet0"].__setitem__("admin_status", "down"))
    assert [str(d) for d in SONIC.disruptions(diff)] == [
        'unclassified: not known to be hitless [[{"op": "replace", "path": "/PORT/Ethernet0/admin_status", '
        '"value": "down"}]]'
    ]
