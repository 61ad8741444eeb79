"""Lossless buffers on EOS and NX-OS: the headroom formula (gpufabric/config/headroom.py), the NX-OS
ingress queuing policy that carries its result (read back by `verify` from files and by `validate` from a
running config, a planted change caught), Cisco's parsers on the result; EOS's PFC headroom in the MMU
queue profile it applies, as Arista's AVD renders it, read back the same ways (docs/configs.md)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.headroom import headroom_bytes, lossless_buffer
from gpufabric.config.render import render_context
from gpufabric.nos.nxos.verify import nxos_facts
from gpufabric.plan.model import Plan
from gpufabric.validate.planned import planned
from gpufabric.verify.runner import verify
from gpufabric.verify.running import checks
from tests.conftest import plan_doc, set_path
from tests.oracles import nxos as cisco
from tests.render_helpers import render_into
from tests.vendor_variants import one_platform

LENGTHS = [("5m", 5), ("30m", 30), ("100m", 100)]


def _plan(platform: str, length: str = "5m") -> Plan:
    doc = set_path(one_platform(platform), ("planes", "compute", "cable_length"), length)
    return plan_doc(doc, f"all-{platform}-{length}")


def _compute(plan: Plan) -> dict[str, str]:
    """Each compute switch's configuration text."""
    index = LinkIndex(plan)
    out = {}
    for d in plan.devices():
        if d.plane == "compute":
            out[d.name] = render_context(build(plan, d, index))[f"{d.name}.cfg"]
    return out


# -- the formula -------------------------------------------------------------------------------------------


def test_headroom_follows_the_documented_formula():
    # 400 Gb/s x (2 x 5 m / 2e8 m/s + 1 us) = 400e9 x 1.05e-6 bits = 420,000 bits = 52,500 bytes; + 2 x 9216.
    assert headroom_bytes(400, 5, 9216) == 52_500 + 18_432
    # 100 Gb/s x (2 x 100 m / 2e8 m/s + 1 us) = 100e9 x 2e-6 bits = 25,000 bytes; + 2 x 9214.
    assert headroom_bytes(100, 100, 9214) == 25_000 + 18_428
    # A longer cable, a faster port or a larger frame each needs more.
    assert headroom_bytes(400, 100, 9216) > headroom_bytes(400, 30, 9216) > headroom_bytes(400, 5, 9216)
    assert headroom_bytes(800, 30, 9216) > headroom_bytes(400, 30, 9216)
    assert headroom_bytes(400, 30, 9216) > headroom_bytes(400, 30, 1500)


def test_the_buffer_is_the_fill_before_pause_plus_the_headroom():
    b = lossless_buffer(400, 30, 9216)
    assert (b.pause_threshold, b.resume_threshold) == (2 * 9216, 9216)
    assert b.buffer_size == b.pause_threshold + headroom_bytes(400, 30, 9216)
    assert b.resume_threshold < b.pause_threshold < b.buffer_size


@pytest.mark.parametrize(("speed", "metres", "mtu"), [(0, 5, 9216), (400, 0, 9216), (400, 5, 0)])
def test_the_formula_refuses_a_zero_input(speed, metres, mtu):
    with pytest.raises(ValueError):
        headroom_bytes(speed, metres, mtu)


# -- NX-OS: rendered, read back, judged by Cisco's parsers ---------------------------------------------------

_PAUSE = re.compile(r"^    pause buffer-size (\d+) pause-threshold (\d+) resume-threshold (\d+)$", re.M)


@pytest.mark.parametrize(("length", "metres"), LENGTHS)
def test_nxos_compute_switches_carry_the_formulas_pause_buffer(length, metres):
    plan = _plan("nxos", length)
    index = LinkIndex(plan)
    texts = _compute(plan)
    assert texts
    for name, text in texts.items():
        ctx = build(plan, index.devices[name], index)
        fastest = max(p.speed for p in ctx.ports if p.kind in ("fabric", "host", "peer"))
        want = lossless_buffer(fastest, metres, ctx.device.mtu)
        assert [tuple(map(int, m)) for m in _PAUSE.findall(text)] == [
            (want.buffer_size, want.pause_threshold, want.resume_threshold)
        ], name
        # the policy holds the RoCE class's ingress queue and is applied system-wide
        assert "  class type queuing c-in-q3\n" in text
        system = text[text.index("\nsystem qos\n") :].split("\n!")[0]
        assert "  service-policy type queuing input QOS_INGRESS_PORT" in system
        facts = nxos_facts(name, text, f"{name}.cfg")
        assert facts.pause_buffer[3].value == (want.buffer_size, want.pause_threshold, want.resume_threshold)


def test_a_longer_cable_class_reserves_more():
    sizes = {length: _PAUSE.findall(_compute(_plan("nxos", length))["cmp-spine1"])[0] for length, _ in LENGTHS}
    assert int(sizes["5m"][0]) < int(sizes["30m"][0]) < int(sizes["100m"][0])


def test_cisco_parsers_still_read_the_nxos_compute_switches():
    """Cisco's resource-module parsers read every compute switch with the ingress queuing policy in it (they
    model no QoS policy: the new line families are among the documented unread ones, test_oracle_nxos)."""
    texts = _compute(_plan("nxos", "100m"))
    for name in ("cmp-spine1", "cmp-su1-leaf1"):  # one of each role
        text = texts[name]
        assert "pause buffer-size" in text
        interfaces = cisco.parsed("interfaces", text)
        assert interfaces and any(i["name"].startswith("Ethernet") for i in interfaces), name
        assert cisco.parsed("bgp_global", text)["as_number"], name


@pytest.fixture(scope="module")
def nxos_folder(tmp_path_factory):
    plan = _plan("nxos", "30m")
    folder = tmp_path_factory.mktemp("nxos-30m")
    render_into(plan, folder)
    return plan, folder


def _headroom_findings(plan: Plan, folder: Path) -> list:
    return [f for f in verify(plan, folder, vendor_judges=False).findings if f.check == "qos-headroom"]


def test_verify_finds_nothing_in_rendered_nxos_files(nxos_folder):
    assert _headroom_findings(*nxos_folder) == []


@pytest.mark.parametrize(
    ("plant", "found_words"),
    [
        (lambda m: m.group(0).replace(f"buffer-size {m.group(1)}", f"buffer-size {int(m.group(1)) - 1000}"), "buffer"),
        (lambda m: m.group(0).replace(f"pause-threshold {m.group(2)}", "pause-threshold 9216"), "pause-threshold"),
        (lambda m: "", "none"),
    ],
    ids=["buffer-size", "pause-threshold", "removed"],
)
def test_verify_finds_a_planted_pause_buffer_change(nxos_folder, tmp_path, plant, found_words):
    plan, folder = nxos_folder
    copy = tmp_path / "files"
    shutil.copytree(folder, copy)
    target = copy / "cmp-su1-leaf1.cfg"
    text = target.read_text()
    m = _PAUSE.search(text)
    assert m
    target.write_text(text[: m.start()] + plant(m) + text[m.end() :])
    found = _headroom_findings(plan, copy)
    assert [(f.device, f.file) for f in found] == [("cmp-su1-leaf1", "cmp-su1-leaf1.cfg")]
    assert found_words in found[0].found and "30m" in found[0].expected
    assert found[0].line > 1


def _buffers(p, running):
    """validate's results of the lossless buffers (the one comparison's `qos-headroom`) on a running config."""
    return [r for r in checks.config(p, running) if r.check == "qos-headroom"]


def test_validate_reads_the_pause_buffer_from_a_running_config(nxos_folder):
    plan, folder = nxos_folder
    p = planned(plan, LinkIndex(plan), ["cmp-su1-leaf1"], "compute")["cmp-su1-leaf1"]
    assert p.expect.buffers.pause_buffer is not None and p.reads_running
    tc, _, pause, _ = p.expect.buffers.pause_buffer
    assert tc == 3
    running = (folder / "cmp-su1-leaf1.cfg").read_text()
    assert [r.ok for r in _buffers(p, running)] == [True]
    planted = running.replace(f"pause-threshold {pause} ", f"pause-threshold {pause + 1} ")
    assert planted != running
    results = _buffers(p, planted)
    assert [r.ok for r in results] == [False]
    assert f"pause-threshold {pause + 1}" in results[0].observed


# -- EOS: PFC no-drop on the RoCE priority and the ports' headroom in the applied MMU queue profile ---------

_HEADROOM = re.compile(r"^platform trident mmu queue profile ROCE\n    ingress headroom (\d+)$", re.M)


@pytest.mark.parametrize(("length", "metres"), LENGTHS)
def test_eos_compute_switches_carry_the_formulas_headroom_as_pyavd_renders_it(length, metres):
    from gpufabric.nos.eos import judge

    plan = _plan("eos", length)
    index = LinkIndex(plan)
    texts = _compute(plan)
    assert texts
    for name, text in texts.items():
        ctx = build(plan, index.devices[name], index)
        fastest = max(p.speed for p in ctx.ports if p.kind in ("fabric", "host", "peer"))
        assert [int(h) for h in _HEADROOM.findall(text)] == [headroom_bytes(fastest, metres, ctx.device.mtu)], name
        assert "\nplatform trident mmu queue profile ROCE apply\n" in text
        profile = text[text.index("\nqos profile ROCE\n") :].split("\n!")[0]
        assert re.findall(r"priority-flow-control priority (\d+) no-drop", profile) == ["3"], name
    # Arista's renderer, given the same facts as AVD structured config, writes the same blocks
    name, text = next(iter(texts.items()))
    arista = judge.render(judge.structured_config(build(plan, index.devices[name], index)))
    assert arista.violations == []
    assert "    ingress headroom" in arista.text
    assert judge.compare(text, arista.text) == []


def test_avds_schema_refuses_a_headroom_unit_it_does_not_know():
    from gpufabric.nos.eos import judge

    sc = {"platform": {"trident": {"mmu": {"queue_profiles": [{"name": "ROCE", "ingress": {"headroom": {}}}]}}}}
    sc["platform"]["trident"]["mmu"]["queue_profiles"][0]["ingress"]["headroom"] = {"memory": 70932, "unit": "kb"}
    assert any("headroom.unit" in v for v in judge.render(sc).violations)


@pytest.fixture(scope="module")
def eos_folder(tmp_path_factory):
    plan = _plan("eos", "100m")
    folder = tmp_path_factory.mktemp("eos-100m")
    render_into(plan, folder)
    return plan, folder


@pytest.mark.parametrize(
    ("old", "new", "found_words"),
    [
        ("ingress headroom {h}\n", "ingress headroom {less}\n", "{less} bytes"),
        ("platform trident mmu queue profile ROCE apply\n", "", "none"),
    ],
    ids=["headroom", "not-applied"],
)
def test_verify_finds_a_planted_eos_headroom_change(eos_folder, tmp_path, old, new, found_words):
    plan, folder = eos_folder
    assert _headroom_findings(plan, folder) == []
    copy = tmp_path / "files"
    shutil.copytree(folder, copy)
    target = copy / "cmp-spine1.cfg"
    text = target.read_text()
    h = int(_HEADROOM.findall(text)[0])
    old, new = old.format(h=h), new.format(less=h // 2)
    assert old in text
    target.write_text(text.replace(old, new, 1))
    found = _headroom_findings(plan, copy)
    assert [(f.device, f.file) for f in found] == [("cmp-spine1", "cmp-spine1.cfg")]
    assert found[0].found == found_words.format(less=h // 2) and "100m" in found[0].expected


def test_validate_reads_the_eos_headroom_from_a_running_config(eos_folder):
    plan, folder = eos_folder
    p = planned(plan, LinkIndex(plan), ["cmp-spine1"], "compute")["cmp-spine1"]
    headroom = p.expect.buffers.headroom
    assert headroom is not None and p.expect.buffers.pause_buffer is None and p.reads_running
    running = (folder / "cmp-spine1.cfg").read_text()
    assert [(r.ok, r.observed) for r in _buffers(p, running)] == [(True, f"{headroom} bytes")]
    planted = running.replace(f"ingress headroom {headroom}\n", "ingress headroom 64000\n")
    assert planted != running
    assert [(r.ok, r.observed) for r in _buffers(p, planted)] == [(False, "64000 bytes")]


def test_verify_finds_a_planted_eos_no_drop_priority(eos_folder, tmp_path):
    plan, folder = eos_folder
    copy = tmp_path / "files"
    shutil.copytree(folder, copy)
    target = copy / "cmp-spine1.cfg"
    text = target.read_text()
    target.write_text(text.replace("priority 3 no-drop", "priority 4 no-drop"))
    found = [f for f in verify(plan, copy, vendor_judges=False).findings if f.check == "qos-pfc"]
    assert [(f.device, f.found) for f in found] == [("cmp-spine1", "[4]")]
