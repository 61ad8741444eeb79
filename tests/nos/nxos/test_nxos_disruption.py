"""Which changes of a Cisco NX-OS switch are disruptive, read from a rollback patch of real configurations.

The running and candidate configurations are cmp-su1-leaf1's, rendered for the multi-vendor example with
every role on NX-OS (RoCE QoS with its network-qos policy, breakouts), one of them changed. The driver's
diff is NX-OS's `show diff rollback-patch`: the commands that would run, under their parent commands
(shown unmarked), removals in the `no` form. `rollback_patch` below stands in for the switch (no NX-OS
here): what it prints is that form, built from the two texts.
"""

from __future__ import annotations

from functools import cache

import pytest
from vendor_variants import one_platform

from gpufabric.platforms import platform
from gpufabric.platforms.disruption import Reason
from tests.conftest import plan_doc
from tests.render_helpers import render_all

NXOS = platform("nxos")


@cache
def running() -> str:
    return render_all(plan_doc(one_platform("nxos"), "all-nxos"))["cmp-su1-leaf1.cfg"]


def _entries(text: str) -> list[tuple[tuple[str, ...], str]]:
    """(parents, command) of each command line, parents by indentation."""
    out: list[tuple[tuple[str, ...], str]] = []
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("!"):
            continue
        depth = len(line) - len(line.lstrip(" "))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        out.append((tuple(s for _, s in stack), line.strip()))
        stack.append((depth, line.strip()))
    return out


def rollback_patch(old: str, new: str) -> str:
    before, after = _entries(old), _entries(new)
    gone, came = [e for e in before if e not in after], [e for e in after if e not in before]
    lines: list[str] = []
    shown: tuple[str, ...] = ()
    for parents, command, removal in [(p, c, True) for p, c in gone] + [(p, c, False) for p, c in came]:
        if removal and any((parents[:i], parents[i]) in gone for i in range(len(parents))):
            continue  # its parent goes: the parent's `no` covers it
        if parents != shown:
            common = next((i for i in range(min(len(parents), len(shown))) if parents[i] != shown[i]), None)
            start = min(len(parents), len(shown)) if common is None else common
            lines += ["  " * i + parents[i] for i in range(start, len(parents))]
            shown = parents
        lines.append("  " * len(parents) + ("no " if removal else "") + command)
    return "\n".join(lines)


def changed(old: str, new: str) -> str:
    text = running()
    assert old in text, old
    return rollback_patch(text, text.replace(old, new, 1))


CHANGES = {
    "description": ("  description host: gpu001 ens1np0", "  description host: gpu001 (moved)", set()),
    "neighbor description": ("    description cmp-spine1", "    description spine one", set()),
    "mtu": ("interface Ethernet1/1/1\n  description host: gpu001 ens1np0\n  mtu 9216",
            "interface Ethernet1/1/1\n  description host: gpu001 ens1np0\n  mtu 9000", {Reason.MTU}),
    "breakout": ("interface breakout module 1 port 1 map 400g-2x", "interface breakout module 1 port 1 map 200g-4x",
                 {Reason.PORT_SPEED}),
    "asn": ("router bgp 4200000001", "router bgp 4200000009", {Reason.BGP_RESET}),
    "router-id": ("  router-id 10.0.0.3", "  router-id 10.0.0.99", {Reason.BGP_RESET}),
    "buffer": ("pause buffer-size 89364", "pause buffer-size 99000", {Reason.BUFFERS}),
    "ntp": ("ntp server ", "ntp server 172.16.0.99 use-vrf management\nntp server ", set()),
}  # fmt: skip


@pytest.mark.parametrize("change", list(CHANGES))
def test_each_change_of_a_rendered_switch_is_hitless_or_disruptive_for_its_reason(change):
    old, new, expected = CHANGES[change]
    diff = changed(old, new)
    assert diff.strip()
    assert {d.reason for d in NXOS.disruptions(diff)} == expected, diff


def test_the_stand_in_prints_the_rollback_patch_form():
    assert changed("  router-id 10.0.0.3", "  router-id 10.0.0.99").splitlines() == [
        "router bgp 4200000001",
        "  no router-id 10.0.0.3",
        "  router-id 10.0.0.99",
    ]


def test_a_tcam_carving_needs_a_reload():
    diff = "hardware access-list tcam region ing-racl 1536"
    assert [d.reason for d in NXOS.disruptions(diff)] == [Reason.REBOOT]
