"""validate's release check: every switch runs the release the intent pins for its platform. Each driver
reports what it runs (NAPALM's os_version, or the driver's one-command reader), each platform reads its
release train out of that text, and the check compares them per switch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from napalm import get_network_driver

from gpufabric.drivers.recording import ReplayTransport, load
from gpufabric.intent import load_intent
from gpufabric.platforms import platform
from gpufabric.verify.running import checks
from gpufabric.verify.running.checks import Planned
from nornir_tasks.validate import os_version

RECORDED = Path(__file__).parents[1] / "recorded"


@pytest.mark.parametrize(
    ("name", "shown", "release"),
    [
        ("cumulus", "Cumulus Linux 5.14.0", "5.14"),
        ("cumulus", "Cumulus Linux 5.11.3", "5.11"),
        ("eos", "4.33.1F-38149128.4331F", "4.33"),  # EOS `show version` version field
        ("eos", "4.32.0.1F", "4.32"),
        ("nxos", "10.4(3)", "10.4"),  # NX-OS sys_ver_str
        ("nxos", "10.3(4a)", "10.3"),
        ("sonic", "SONiC.202411.123456-abcdef", "202411"),
        ("sonic", "202505.1", "202505"),
        ("frr", "8.4.4", "8.4"),
        ("frr", "10.2.1", "10.2"),
        ("cumulus", "Cumulus Linux", None),
        ("sonic", "SONiC.master.0-dirty", None),
    ],
)
def test_each_platform_reads_its_release_train_out_of_what_the_driver_reports(name, shown, release) -> None:
    assert platform(name).running_release(shown) == release


def _switch(kind: str) -> Any:
    dev = get_network_driver(kind)(
        "192.0.2.10",
        "admin",
        "pw",
        optional_args={"transport": ReplayTransport(load(RECORDED / kind / "cmp-spine1.yml"))},
    )
    dev.open()
    return dev


def test_recorded_switches_report_what_they_run_in_one_command() -> None:
    cumulus, frr = _switch("cumulus"), _switch("frr")
    assert os_version(cumulus) == "Cumulus Linux 5.14.0" == cumulus.get_facts()["os_version"]
    assert os_version(frr) == "8.4.4" == frr.get_facts()["os_version"]


def _release(planned: Planned, shown: str) -> checks.CheckResult:
    (only,) = checks.release(planned, shown, platform(planned.platform).running_release(shown))
    return only


def test_the_check_passes_on_the_pinned_release_and_names_what_runs_otherwise() -> None:
    ok = _release(Planned("leaf1", "cumulus", release="5.14"), "Cumulus Linux 5.14.0")
    assert (ok.check, ok.ok, ok.expected, ok.observed) == (
        "release",
        True,
        "release 5.14",
        "release 5.14 (Cumulus Linux 5.14.0)",
    )
    old = _release(Planned("leaf1", "cumulus", release="5.14"), "Cumulus Linux 5.11.3")
    assert not old.ok and old.observed == "release 5.11 (Cumulus Linux 5.11.3)"
    unread = _release(Planned("sw", "eos", release="4.33"), "")
    assert not unread.ok and unread.observed == "no release in 'nothing'"
    assert list(checks.release(Planned("sw", "eos"), "4.33.1F", "4.33")) == []  # no pin asked for: no result


def test_validate_holds_each_switch_to_the_intents_pin_or_the_platforms_default(tmp_path: Path) -> None:
    from gpufabric.config.context import LinkIndex
    from gpufabric.config.secrets import PasswordHasher
    from gpufabric.plan import build_plan
    from gpufabric.validate.planned import planned

    example = Path(__file__).parents[2] / "inventory" / "examples" / "multi-vendor.yml"
    text = example.read_text()
    pinned = tmp_path / "fabric.yml"
    pinned.write_text(text.replace("platforms:", "platforms:\n  eos: {release: '4.34'}", 1) if "platforms:" in text
                      else text + "\nplatforms:\n  eos: {release: '4.34'}\n")  # fmt: skip
    plan = build_plan(load_intent(str(pinned)))
    index = LinkIndex(plan, PasswordHasher(plan.intent.fabric.name, {"GPUFABRIC_SWITCH_PASSWORD": "unused"}, None))
    names = [d.name for d in plan.devices()]
    held = planned(plan, index, names, None)
    by_platform = {held[n].platform: held[n].release for n in names}
    assert by_platform["eos"] == "4.34"
    assert by_platform["cumulus"] == platform("cumulus").facts.default_release
    assert by_platform["nxos"] == platform("nxos").facts.default_release
