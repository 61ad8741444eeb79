"""Which changes of an Arista EOS switch are disruptive, read from the session diff of real configurations.

The running and candidate configurations are cmp-su1-leaf1's, rendered for the multi-vendor example with
every role on EOS (RoCE QoS, lossless buffers, split ports), one of them changed. EOS's `show
session-config diffs` is a unified diff of the running configuration against the session's; difflib's
unified diff of the two texts stands in for it (the same form: `-`/`+` lines, context indented by one).
"""

from __future__ import annotations

import difflib
from functools import cache

import pytest
from vendor_variants import one_platform

from gpufabric.platforms import platform
from gpufabric.platforms.disruption import Reason
from tests.conftest import plan_doc
from tests.render_helpers import render_all

EOS = platform("eos")


@cache
def running() -> str:
    return render_all(plan_doc(one_platform("eos"), "all-eos"))["cmp-su1-leaf1.cfg"]


def session_diff(old: str, new: str) -> str:
    return "\n".join(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), "system:/running-config", "session:/gf-session-config", lineterm=""
        )
    )


def changed(old: str, new: str) -> str:
    text = running()
    assert old in text, old
    return session_diff(text, text.replace(old, new, 1))


CHANGES = {
    "description": ("   description host: gpu001 ens1np0", "   description host: gpu001 (moved)", set()),
    "neighbor description": ("   neighbor 10.20.0.0 description cmp-spine1", "   neighbor 10.20.0.0 description s1",
                             set()),
    "mtu": ("interface Ethernet1/1\n   description host: gpu001 ens1np0\n   mtu 9214",
            "interface Ethernet1/1\n   description host: gpu001 ens1np0\n   mtu 9000", {Reason.MTU}),
    "speed": ("interface Ethernet1/1\n   description host: gpu001 ens1np0\n   mtu 9214\n   speed 400g-4",
              "interface Ethernet1/1\n   description host: gpu001 ens1np0\n   mtu 9214\n   speed 200g-2",
              {Reason.PORT_SPEED}),
    "asn": ("router bgp 4200000001", "router bgp 4200000009", {Reason.BGP_RESET}),
    "router-id": ("   router-id 10.0.0.3", "   router-id 10.0.0.99", {Reason.BGP_RESET}),
    "remote-as": ("   neighbor 10.20.0.0 remote-as 4200000000", "   neighbor 10.20.0.0 remote-as 65000",
                  {Reason.BGP_RESET}),
    "buffer": ("    ingress headroom 70928", "    ingress headroom 90000", {Reason.BUFFERS}),
    "ecn": ("minimum-threshold 150 kbytes", "minimum-threshold 200 kbytes", {Reason.BUFFERS}),
}  # fmt: skip


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_change_of_a_rendered_switch_is_hitless_or_disruptive_for_its_reason(change):
    old, new, expected = CHANGES[change]
    diff = changed(old, new)
    assert diff.strip()
    assert {d.reason for d in EOS.disruptions(diff)} == expected, diff


def test_a_new_neighbor_resets_nothing():
    text = running()
    extra = "   neighbor 10.20.0.0 remote-as 4200000000\n"
    grown = text.replace(extra, extra + "   neighbor 10.20.0.254 remote-as 4200000000\n", 1)
    assert grown != text and EOS.disruptions(session_diff(text, grown)) == ()


def test_a_new_port_is_hitless_though_it_gets_an_mtu():
    text = running()
    port = "interface Ethernet1/1\n"
    grown = text.replace(port, "interface Ethernet9/1\n   description new\n   mtu 9214\n!\n" + port, 1)
    diff = session_diff(text, grown)
    assert "+   mtu 9214" in diff and EOS.disruptions(diff) == ()


def test_a_first_bgp_configuration_is_hitless():
    text = running()
    start = text.index("router bgp ")
    end = text.index("\n!", start)
    without_bgp = text[:start] + text[end + 3 :]
    diff = session_diff(without_bgp, text)
    assert "+router bgp 4200000001" in diff and EOS.disruptions(diff) == ()
    # The other way, BGP goes: every session with it.
    gone = EOS.disruptions(session_diff(text, without_bgp))
    assert {d.reason for d in gone} == {Reason.BGP_RESET}
    assert str(gone[0]) == "bgp-reset: the BGP instance is removed (its ASN changes) [-router bgp 4200000001]"
