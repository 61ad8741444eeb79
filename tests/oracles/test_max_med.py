"""BGP max-MED on startup (`routing.max_med_on_startup`): a rebooted switch advertises its routes with the highest
MED until they have settled. Rendered where the vendor's model proves the line (FRR's own parser `vtysh -C`
judges FRR's and SONiC's frr.conf; SONiC's CONFIG_DB carries nothing of it and stays valid against SONiC YANG),
refused with the platforms named where it does not (NVUE's object model, AVD's EOS schema and Cisco's NX-OS BGP
parser have no such setting), and read back by verify and validate through the one comparison."""

from __future__ import annotations

import json
import shutil
import subprocess
from functools import cache
from typing import Any

import pytest
import yaml

from gpufabric.config.context import LinkIndex, build
from gpufabric.intent import IntentError, load_intent_text
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.verify.checks import check_device
from gpufabric.verify.expect import expect
from gpufabric.verify.running.checks import Planned, config
from tests.conftest import INVENTORY, SONIC_YANG, plan_doc
from tests.render_helpers import render_all

SOURCES = {"frr": INVENTORY / "fabric.yml", "sonic": INVENTORY / "examples" / "sonic.yml"}
MULTI = INVENTORY / "examples" / "multi-vendor.yml"  # cumulus compute, eos storage, nxos business
LINE = " bgp max-med on-startup 300\n"


def _doc(path: Any, seconds: int | None = 300) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    for plane in doc["planes"].values():
        if "routing" in plane:
            plane["routing"]["max_med_on_startup"] = seconds
    return doc


@cache
def _rendered(os: str) -> tuple[Plan, dict[str, str]]:
    plan = plan_doc(_doc(SOURCES[os]), f"max-med-{os}")
    return plan, render_all(plan)


def _routed(plan: Plan, os: str) -> list[Any]:
    return [d for d in plan.devices() if d.platform == os and d.asn is not None]


def _vtysh(tmp_path: Any, text: str) -> subprocess.CompletedProcess[str]:
    f = tmp_path / "frr.conf"
    f.write_text(text)
    return subprocess.run(["vtysh", "-C", "-f", str(f)], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("os", ["frr", "sonic"])
def test_every_bgp_switch_renders_max_med_and_frr_s_parser_takes_it(os, tmp_path):
    if shutil.which("vtysh") is None:
        pytest.skip("vtysh (frr) is not installed")
    plan, files = _rendered(os)
    devices = _routed(plan, os)
    assert devices
    for d in devices:
        text = files[f"{d.name}.frr.conf"]
        assert text.count(LINE) == 1, d.name
        done = _vtysh(tmp_path, text)
        assert done.returncode == 0, f"{d.name}: {done.stdout}{done.stderr}"
    text = files[f"{devices[0].name}.frr.conf"]
    # FRR's parser does fail here: a misspelt keyword, and a period below FRR's 5 s
    for wrong in (LINE.replace("on-startup", "on-startp"), LINE.replace("300", "3")):
        assert _vtysh(tmp_path, text.replace(LINE, wrong)).returncode != 0, wrong


def test_without_the_field_nothing_is_rendered():
    plan = plan_doc(_doc(SOURCES["frr"], None), "max-med-none")
    assert not any("max-med" in t for t in render_all(plan).values())


def test_sonic_config_db_stays_valid_against_sonic_yang():
    """The setting lives in FRR's frr.conf only: CONFIG_DB is the same as without it, and valid."""
    from tests.nos.sonic.test_sonic_yang import _judge_available

    _judge_available()
    from gpufabric.nos.sonic.yang import validate

    _, files = _rendered("sonic")
    without = render_all(plan_doc(_doc(SOURCES["sonic"], None), "max-med-sonic-none"))
    names = [n for n in files if n.endswith(".config_db.json")]
    assert names and all(files[n] == without[n] for n in names)
    for name in names:
        validate(SONIC_YANG, json.loads(files[name]))


def test_a_plane_with_a_platform_that_renders_none_is_refused_by_name():
    with pytest.raises(IntentError) as raised:
        load_intent_text(yaml.safe_dump(_doc(MULTI), sort_keys=False), "multi.yml")
    refused = [(p.field, p.message, p.hint) for p in raised.value.problems if "max_med_on_startup" in p.field]
    # one a plane: compute (cumulus), storage (eos), business (nxos), each named with the platforms that do
    assert sorted(m.split(" switches")[0] for _, m, _ in refused) == ["cumulus", "eos", "nxos"]
    assert all("(frr, sonic)" in hint for _, _, hint in refused)


@pytest.mark.parametrize(("os", "file_of"), [("frr", ".frr.conf"), ("sonic", ".frr.conf")])
def test_verify_and_validate_read_it_back_through_the_one_comparison(os, file_of, tmp_path):
    plan, files = _rendered(os)
    d = _routed(plan, os)[0]
    ctx = build(plan, d, LinkIndex(plan))
    spec = platform(os)
    for name, text in files.items():
        if name.startswith(f"{d.name}."):
            (tmp_path / name).write_text(text.replace(LINE, " bgp max-med on-startup 30\n"))
    found = [f for f in check_device(plan, ctx, spec.read_files(d.name, tmp_path)) if f.check == "bgp-max-med"]
    assert [(f.expected, f.found) for f in found] == [("max-med on-startup 300 s", "max-med on-startup 30 s")]
    assert found[0].file == f"{d.name}{file_of}" and found[0].line > 1
    if os == "frr":  # validate reads FRR's running configuration; SONiC's running reader takes CONFIG_DB only
        p = Planned(d.name, os, expect=expect(ctx, plan.planes[d.plane].host_mtu))
        running = files[f"{d.name}.frr.conf"]
        assert [(r.ok, r.observed) for r in config(p, running) if r.check == "bgp-max-med"] == [
            (True, "max-med on-startup 300 s")
        ]
        missing = [r for r in config(p, running.replace(LINE, "")) if r.check == "bgp-max-med"]
        assert [(r.ok, r.observed) for r in missing] == [(False, "no max-MED on startup")]
