"""Carried planes on every platform, judged by each vendor's model and read back by `verify`: the in-band
example with its leaves and spines on one platform, with storage lossless (the RoCE class) and, on a plane
without RoCE, every carried plane lossy (classes of their own, no PFC)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.render import render_context
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.verify.checks import check_device
from tests.conftest import INVENTORY, SONIC_YANG, plan_doc

PLATFORMS = ["cumulus", "eos", "nxos", "sonic", "frr"]


def _plan(os: str, lossless: bool, unnumbered: bool = False) -> Plan:
    doc = yaml.safe_load((INVENTORY / "examples" / "converged-inband.yml").read_text())
    business = doc["planes"]["business"]
    if unnumbered:  # BGP unnumbered in every VRF too (RFC 5549 over each subinterface's link-local address)
        business["routing"]["addressing"] = "unnumbered"
        del business["addressing"]["p2p"]
        for carried in business["carries"].values():
            del carried["p2p"]
    if not lossless:  # no RoCE on the fabric: storage becomes a lossy class of its own
        business["carries_roce"] = False
        del business["qos"]
        business["carries"]["storage"] |= {"traffic": "lossy", "priority": 4, "dscp": [10, 12]}
    if lossless:  # the plane's BFD and BGP timers, which every carried plane's sessions run with too
        business["routing"] |= {"bfd": {"enabled": True, "interval": 300, "multiplier": 3}, "keepalive": 3, "hold": 9}
    for role in ("leaf", "spine"):
        business["switches"][role]["platform"] = os
    if os == "sonic":  # SKUs gpufabric knows for SONiC
        business["switches"]["leaf"] |= {"model": "SN4700", "ports": 32, "port_speed": "400G"}
        business["switches"]["spine"] |= {
            "model": "SN5600",
            "ports": 64,
            "port_speed": "800G",
            "downlink_speed": "400G",
        }
    return plan_doc(doc, f"converged-{os}-{'lossless' if lossless else 'lossy'}{'-unnumbered' if unnumbered else ''}")


def _judge(os: str, ctx: Any, files: dict[str, str], tmp: Path) -> list[str]:
    """What the platform's vendor model finds wrong in a switch's files (empty: it takes them)."""
    name = ctx.device.name
    if os == "cumulus":
        from gpufabric.nos.cumulus import judge as nvue

        return [str(f) for f in nvue.check(nvue.set_tree(files[f"{name}.yaml"]), ctx.release)]
    if os == "eos":
        from gpufabric.nos.eos import judge as avd

        result = avd.render(avd.structured_config(ctx))
        return result.violations + avd.compare(files[f"{name}.cfg"], result.text)
    if os == "nxos":
        from tests.oracles.test_oracle_nxos import _problems

        return _problems(ctx, files[f"{name}.cfg"])
    if os == "sonic":
        pytest.importorskip("libyang")
        if not (SONIC_YANG / "sonic-vlan-sub-interface.yang").is_file():
            pytest.skip(f"SONiC's YANG models are not in {SONIC_YANG}")
        from gpufabric.nos.sonic.yang import validate

        validate(SONIC_YANG, json.loads(files[f"{name}.config_db.json"]))
        return []
    found = []
    if shutil.which("vtysh") is not None:
        conf = tmp / f"{name}.frr.conf"
        done = subprocess.run(["vtysh", "-C", "-f", str(conf)], check=False, capture_output=True, text=True)
        found += [done.stdout + done.stderr] if done.returncode else []
    if os == "frr" and shutil.which("nft") is not None:  # the classes and the business filter, by nftables' parser
        done = subprocess.run(
            ["nft", "-c", "-f", str(tmp / f"{name}.nft")], check=False, capture_output=True, text=True
        )
        found += [done.stdout + done.stderr] if done.returncode else []
    return found


CASES = [(os, lossless, False) for os in PLATFORMS for lossless in (True, False)]
CASES += [(os, True, True) for os in ("cumulus", "sonic", "frr")]  # the platforms that peer unnumbered


# Lossy planes and NX-OS in the whole suite only (Cisco's parsers take seconds a case; NX-OS's own oracle tests
# stay fast); the fast tier keeps the other platforms' lossless and unnumbered cases.
@pytest.mark.parametrize(
    ("os", "lossless", "unnumbered"),
    [pytest.param(*case, marks=() if case[1] and case[0] != "nxos" else pytest.mark.slow) for case in CASES],
    ids=[f"{os}-{'lossless' if ll else 'lossy'}{'-unnumbered' if un else ''}" for os, ll, un in CASES],
)
def test_every_platform_renders_carried_planes_its_model_takes_and_verify_reads_back(
    os, lossless, unnumbered, tmp_path
):
    plan = _plan(os, lossless, unnumbered)
    index = LinkIndex(plan)
    judged = 0
    for device in plan.planes["business"].devices:
        if device.platform != os or device.role == "border":  # the borders (Cumulus) hold no carried plane
            continue
        ctx = build(plan, device, index)
        assert ctx.converged is not None
        files = render_context(ctx)
        for file, text in files.items():
            (tmp_path / file).write_text(text)
        assert _judge(os, ctx, files, tmp_path) == [], device.name
        if os == "nxos":  # PFC on the fabric ports only where a class is lossless
            assert ("priority-flow-control mode on" in files[f"{device.name}.cfg"]) == lossless, device.name
        facts = platform(os).read_files(device.name, tmp_path)
        assert [f"{f.check}: {f.expected} / {f.found}" for f in check_device(plan, ctx, facts)] == []
        sessions = {f"{v.vrf} {n.key}" for v in ctx.converged.vrfs for n in v.neighbors}
        if lossless:  # read back from the text: each VRF session's BFD and each VRF's timers, as the plane's
            assert {k: f.value for k, f in facts.vrf_bfd.items()} == dict.fromkeys(sessions, (300, 3))
            assert {k: f.value for k, f in facts.vrf_timers.items()} == {v.vrf: (3, 9) for v in ctx.converged.vrfs}
        else:
            assert facts.vrf_bfd == {} and facts.vrf_timers == {}
        assert len(facts.subinterfaces) == sum(len(v.ports) for v in ctx.converged.vrfs) > 0
        classes = {c.name: c.priority for c in ctx.converged.classes}
        assert classes["storage"] == (3 if lossless else 4) and classes["inband"] == 2
        assert facts.dscp_map[16].value == 2 and (lossless or facts.dscp_map[10].value == 4)
        if unnumbered:  # every fabric session of a VRF by interface, none by address
            fabric = [n for v in ctx.converged.vrfs for n in v.neighbors]
            assert fabric and all(n.interface and n.address is None for n in fabric)
        judged += 1
    assert judged == 6  # 4 leaves and 2 spines


def test_a_carried_session_without_the_plane_s_bfd_or_timers_is_a_finding(tmp_path):
    """verify holds each carried plane's sessions to the plane's BFD and BGP timers: a VRF instance whose
    `timers bgp` line, or one neighbour's BFD, went missing is found there."""
    plan = _plan("frr", lossless=True)
    device = next(d for d in plan.planes["business"].devices if d.platform == "frr" and d.role == "spine")
    ctx = build(plan, device, LinkIndex(plan))
    files = render_context(ctx)
    vrf = ctx.converged.vrfs[0]
    n = vrf.neighbors[0]
    conf = f"{device.name}.frr.conf"
    head = f"router bgp {device.asn} vrf {vrf.vrf}\n"
    before, block = files[conf].split(head, 1)
    block, after = block.split("\nexit\n", 1)
    block = block.replace(" timers bgp 3 9\n", "").replace(f" neighbor {n.key} bfd profile fabric\n", "")
    files[conf] = before + head + block + "\nexit\n" + after
    for file, text in files.items():
        (tmp_path / file).write_text(text)
    found = {(f.check, f.expected) for f in check_device(plan, ctx, platform("frr").read_files(device.name, tmp_path))}
    assert found == {
        ("carried-bfd", f"vrf {vrf.vrf} {n.key} ({n.peer}) BFD 300 ms x 3"),
        ("carried-timers", f"vrf {vrf.vrf}: keepalive 3, hold 9"),
    }
