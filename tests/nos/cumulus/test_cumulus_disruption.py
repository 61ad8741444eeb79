"""Which changes of a Cumulus Linux switch are disruptive, read from NVUE's diff of real documents.

The applied and candidate documents are cmp-su1-leaf1's rendered NVUE document of the multi-vendor
example (tests/golden/multi-vendor/), one of them changed; the diff is the `nv set` / `nv unset` form of
`nv config diff -o commands`, as the driver's `tree_diff` computes it from the two trees.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from conftest import ROOT

from gpufabric.nos.cumulus import nvue
from gpufabric.platforms import platform
from gpufabric.platforms.disruption import Reason

CUMULUS = platform("cumulus")
APPLIED = nvue.set_tree((ROOT / "tests" / "golden" / "multi-vendor" / "cmp-su1-leaf1.yaml").read_text())


def diff(change: Callable[[dict[str, Any]], object]) -> str:
    candidate = copy.deepcopy(APPLIED)
    change(candidate)
    return nvue.tree_diff(APPLIED, candidate)


def port(tree: dict[str, Any]) -> dict[str, Any]:
    return tree["interface"]["swp1s0"]


CHANGES: dict[str, tuple[Callable[[dict[str, Any]], object], set[Reason]]] = {
    "description": (lambda t: port(t).__setitem__("description", "host: gpu001 moved"), set()),
    "ecn threshold": (
        lambda t: t["qos"]["congestion-control"]["default-global"]["traffic-class"]["3"].__setitem__(
            "min-threshold", 200000
        ),
        set(),  # NVIDIA: a QoS reload that touches no buffer does not disturb forwarding
    ),
    "ntp": (lambda t: t["service"]["ntp"]["mgmt"]["server"].__setitem__("172.16.0.11", {}), set()),
    "management address": (lambda t: t["interface"]["eth0"]["ip"]["address"].clear(), set()),
    "mtu": (lambda t: port(t)["link"].__setitem__("mtu", 9000), {Reason.MTU}),
    "asn": (lambda t: t["router"]["bgp"].__setitem__("autonomous-system", 4200000099), {Reason.BGP_RESET}),
    "router-id": (lambda t: t["router"]["bgp"].__setitem__("router-id", "10.0.0.99"), {Reason.BGP_RESET}),
    "buffer": (lambda t: t["qos"]["pfc"]["default-global"].__setitem__("cable-length", 50), {Reason.BUFFERS}),
    "lossy roce": (lambda t: t["qos"]["roce"].__setitem__("mode", "lossy"), {Reason.BUFFERS}),
    "breakout": (lambda t: t["interface"]["swp1"]["link"].__setitem__("breakout", "4x"), {Reason.PORT_SPEED}),
    "neighbor removed": (
        lambda t: t["vrf"]["default"]["router"]["bgp"]["neighbor"].pop("swp5s0"),
        {Reason.BGP_RESET},
    ),
    "port address removed": (lambda t: port(t)["ip"]["address"].clear(), {Reason.UNCLASSIFIED}),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_change_of_a_rendered_switch_is_hitless_or_disruptive_for_its_reason(change):
    mutate, expected = CHANGES[change]
    text = diff(mutate)
    assert text.strip(), "the change must show in NVUE's diff"
    assert {d.reason for d in CUMULUS.disruptions(text)} == expected, text


def test_the_detail_names_the_nvue_command():
    found = CUMULUS.disruptions(diff(CHANGES["buffer"][0]))
    assert [str(d) for d in found] == [
        "buffers: buffers, PFC or link pause change: switchd reprograms the ASIC's buffers "
        "[nv set qos pfc default-global cable-length 50]"
    ]


def test_enabling_bgp_is_a_first_configuration_and_hitless():
    """A switch whose applied configuration has no BGP routes no fabric traffic: its first push drains nothing,
    though it sets an ASN, MTUs and buffers (the fleet simulator's switches start that way)."""
    full = nvue.tree_diff({}, APPLIED)
    assert "nv set router bgp enable on" in full and "link mtu 9216" in full
    assert CUMULUS.disruptions(full) == ()
    # Without the enable line the same commands are an ASN, MTU, breakout and buffer change.
    rest = {d.reason for d in CUMULUS.disruptions(full.replace("nv set router bgp enable on\n", ""))}
    assert rest == {Reason.BGP_RESET, Reason.MTU, Reason.PORT_SPEED, Reason.BUFFERS}
