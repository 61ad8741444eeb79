"""Every EOS configuration gpufabric renders says what Arista's own renderer says, block by block.

The planned facts of each EOS switch are written as AVD structured config (tests/oracles/avd.py),
validated by pyavd's schema and rendered by pyavd's eos_cli_config_gen templates; gpufabric's text
must hold the same blocks with the same lines (order aside). Differences that remain on purpose
are listed in ACCEPTED with the reason, and in docs/configs.md.
"""

from __future__ import annotations

import re
import sys

import pytest

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.render import render_context
from gpufabric.nos.eos import judge as avd
from gpufabric.plan.model import Plan
from tests.conftest import ALL_INTENTS, example_plan
from tests.vendor_variants import variants

# No difference is accepted today; an entry would name the block and the Arista document behind it.
ACCEPTED: set[str] = set()


def _plans() -> dict[str, Plan]:
    # Planned once per test process, shared with the other files' per-example tests (conftest).
    plans = {p.stem: example_plan(p) for p in ALL_INTENTS if "32k" not in p.name}
    plans = {k: v for k, v in plans.items() if any(d.platform == "eos" for d in v.devices())}
    return plans | variants("eos")


PLANS = _plans()


# The all-EOS variants take seconds each in pyavd: the fast tier keeps the shipped examples.
@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n.startswith("all-eos") else n for n in sorted(PLANS)]
)
def test_every_eos_config_says_what_pyavd_renders(name):
    plan = PLANS[name]
    index = LinkIndex(plan)
    problems: dict[str, list[str]] = {}
    checked = 0
    for device in plan.devices():
        if device.platform != "eos":
            continue
        ctx = build(plan, device, index)
        ours = render_context(ctx)[f"{device.name}.cfg"]
        result = avd.render(avd.structured_config(ctx))
        found = result.violations + [d for d in avd.compare(ours, result.text) if d not in ACCEPTED]
        if found:
            problems[device.name] = found
        checked += 1
    assert checked > 0
    assert problems == {}


def test_every_role_is_covered():
    roles = {d.role for plan in PLANS.values() for d in plan.devices() if d.platform == "eos"}
    assert roles == {"leaf", "spine", "border", "mgmt"}


def test_pyavd_schema_refuses_a_planted_wrong_value():
    plan = PLANS["multi-vendor"]
    device = next(d for d in plan.devices() if d.platform == "eos")
    sc = avd.structured_config(build(plan, device, LinkIndex(plan)))
    sc["ethernet_interfaces"][0]["mtu"] = "jumbo"
    sc["router_bgp"]["neighbors"][0]["remote_ass"] = "1"
    violations = avd.render(sc).violations
    assert any("mtu" in v for v in violations)
    assert any("remote_ass" in v for v in violations)


def test_comparison_catches_a_planted_difference():
    plan = PLANS["multi-vendor"]
    device = next(d for d in plan.devices() if d.platform == "eos")
    ctx = build(plan, device, LinkIndex(plan))
    ours = render_context(ctx)[f"{device.name}.cfg"]
    arista = avd.render(avd.structured_config(ctx)).text
    planted = ours.replace("   mtu 9214\n", "   mtu 9000\n", 1).replace("qos trust dscp", "qos trust cos")
    diffs = avd.compare(planted, arista)
    assert any("mtu 9000" in d for d in diffs)
    assert any("qos profile ROCE" in d and "qos trust cos" in d for d in diffs)
    assert avd.compare(ours, arista) == []


def test_the_lane_table_is_arista_s_not_the_renderer_s():
    """The oracle's `speed` comes from its own table of Arista's forms, never from gpufabric's code; each
    entry takes lanes x lane rate = the port's rate, all 8 lanes of the cage, and is a value AVD accepts."""
    import inspect

    assert "gpufabric.platforms" not in inspect.getsource(avd)
    for (cage, ways), speed in avd.ARISTA_BREAKOUT.items():
        rate, lanes = speed.split("g-")
        assert int(rate) * ways == cage
        assert int(lanes) * ways == 8
        assert int(rate) // int(lanes) == cage // 8  # one lane rate per cage: 50G on 400G, 100G on 800G
    sc = {
        "ethernet_interfaces": [
            {"name": f"Ethernet{i}/1", "speed": s} for i, s in enumerate(avd.ARISTA_BREAKOUT.values(), 1)
        ]
    }
    assert avd.render(sc).violations == []


def test_a_wrong_lane_count_in_the_renderer_is_caught(monkeypatch):
    """Mutation check: gpufabric's EOS lane count made wrong (16 lanes to a cage: `100g-4`, a value AVD's
    schema accepts) must differ from Arista's `100g-2` on a 400G cage split four ways. An oracle that
    asked gpufabric for the form would follow the mutation and see no difference."""
    from gpufabric.nos import eos

    plan = PLANS["multi-vendor"]
    index = LinkIndex(plan)
    ctxs = [build(plan, d, index) for d in plan.devices() if d.platform == "eos"]
    ctx = next(c for c in ctxs if any(p.split == 4 and p.speed == 100 for p in c.ports))
    assert avd.compare(render_context(ctx)[f"{ctx.device.name}.cfg"], avd.render(avd.structured_config(ctx)).text) == []
    monkeypatch.setattr(eos, "CAGE_LANES", 16)
    mutated = render_context(ctx)[f"{ctx.device.name}.cfg"]
    assert "   speed 100g-4\n" in mutated
    arista = avd.render(avd.structured_config(ctx)).text
    assert "   speed 100g-2\n" in arista
    diffs = avd.compare(mutated, arista)
    assert diffs
    assert all("speed 100g-4" in d and "speed 100g-2" in d for d in diffs)


def test_the_templates_loaded_once_render_what_get_device_config_renders(monkeypatch):
    """The judge keeps one pyavd Templar per process (get_device_config loads every template again at each
    call): the text is pyavd's own, switch by switch; and a pyavd without that Templar gets
    get_device_config itself."""
    from pyavd import get_device_config, validate_structured_config

    plan = PLANS["multi-vendor"]
    index = LinkIndex(plan)
    for device in (d for d in plan.devices() if d.platform == "eos"):
        sc = avd.structured_config(build(plan, device, index))
        assert avd.render(sc).text == get_device_config(validate_structured_config(sc).validated_data), device.name
    assert avd._device_config() is not get_device_config  # this pyavd has the Templar: the cached path ran
    avd._device_config.cache_clear()
    monkeypatch.setitem(sys.modules, "pyavd.templater", None)  # an import of it fails
    try:
        assert avd._device_config() is get_device_config
    finally:
        avd._device_config.cache_clear()


def _dscp_lines(text: str) -> list[tuple[list[int], int]]:
    return [
        ([int(d) for d in m[1].split()], int(m[2]))
        for m in re.finditer(r"^qos map dscp ([\d ]+) to traffic-class (\d+)$", text, re.M)
    ]


def test_every_dscp_is_mapped_on_every_eos_switch_with_a_qos_profile():
    """No DSCP is left to EOS's own map, which on Strata switches sends unmarked traffic (DSCP 0-7) to traffic
    class 1: each of 0-63 is mapped once, the plan's to their classes, every other one to the default class's
    tx-queue 0, at most eight to a line; and pyavd renders the same lines from AVD's qos.map.dscp."""
    checked = 0
    for name in ("multi-vendor", "converged-north-south", "all-eos-originate"):
        plan = PLANS[name]
        index = LinkIndex(plan)
        for device in (d for d in plan.devices() if d.platform == "eos"):
            ctx = build(plan, device, index)
            if ctx.qos is None and ctx.converged is None:
                continue
            text = render_context(ctx)[f"{device.name}.cfg"]
            named = dict(ctx.converged.dscp_map()) if ctx.converged else {}
            if ctx.qos is not None:
                named |= {ctx.qos.roce_dscp: ctx.qos.roce_priority, ctx.qos.cnp_dscp: ctx.qos.cnp_priority}
            lines = _dscp_lines(text)
            mapped = [d for dscps, _ in lines for d in dscps]
            assert sorted(mapped) == list(range(64)), device.name
            assert all(len(dscps) <= 8 for dscps, _ in lines)
            assert {d: tc for dscps, tc in lines for d in dscps} == {d: named.get(d, 0) for d in range(64)}
            assert "   tx-queue 0\n" in text or ctx.converged is None  # the default class's guarantee is on 0
            assert sorted(_dscp_lines(avd.render(avd.structured_config(ctx)).text)) == sorted(lines)
            checked += 1
    assert checked > 0


def test_a_dscp_left_to_the_platform_map_is_caught():
    plan = PLANS["multi-vendor"]
    device = next(d for d in plan.devices() if d.platform == "eos")
    ctx = build(plan, device, LinkIndex(plan))
    ours = render_context(ctx)[f"{device.name}.cfg"]
    planted = ours.replace("qos map dscp 0 1 2 3 4 5 6 7 to traffic-class 0\n", "", 1)
    assert planted != ours
    diffs = avd.compare(planted, avd.render(avd.structured_config(ctx)).text)
    assert diffs == ["only pyavd: qos map dscp 0 1 2 3 4 5 6 7 to traffic-class 0"]
