"""verify and validate hold a switch to one expectation by one comparison: a wrong value planted in a rendered
file is reported by `verify` (reading the file) and by `validate` (reading the same text as the switch's running
configuration) under the same check name, with the same expected and found values.

Each kind of value is planted where the reader found it: the comparison's passing outcome on the clean file
names the fact's file and line, and that line's last number is changed (its last word misspelt where it holds
none).
Every check the platform's running reader can judge is planted once per platform."""

from __future__ import annotations

import re
import tempfile
from functools import cache
from pathlib import Path

import pytest
import yaml

from gpufabric.config.context import LinkIndex, build
from gpufabric.nos.frr.files import SYSCTL_MARKER, join_candidate
from gpufabric.nos.sonic.candidate import join
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.verify.checks import check_device
from gpufabric.verify.expect import CHECKS, compare, expect
from gpufabric.verify.running.checks import Planned, config
from tests.conftest import INVENTORY, plan_doc
from tests.render_helpers import render_all
from tests.vendor_variants import one_platform

EXAMPLES = INVENTORY / "examples"
# One switch of each platform on a plane that carries RoCE, and a converged plane's switches (EOS leaves,
# Cumulus spines); every plane with BFD and BGP timers, so their lines are there to plant in.
SWITCHES = {
    "cumulus": (EXAMPLES / "multi-vendor.yml", None, "cmp-spine1"),
    "eos": (None, "eos", "cmp-spine1"),
    "nxos": (None, "nxos", "cmp-spine1"),
    "frr": (INVENTORY / "fabric.yml", None, "cmp-spine1"),
    "sonic": (EXAMPLES / "sonic.yml", None, "cmp-spine1"),
    "eos-carried": (EXAMPLES / "converged-inband.yml", None, "ns-leaf1a"),
    "cumulus-carried": (EXAMPLES / "converged-inband.yml", None, "ns-spine1"),
}


@cache
def _rendered(which: str) -> tuple[Plan, dict[str, str]]:
    path, only, _ = SWITCHES[which]
    doc = one_platform(only) if only else yaml.safe_load(path.read_text())
    for plane in doc["planes"].values():
        if "routing" in plane:
            plane["routing"] |= {"bfd": {"enabled": True, "interval": 250, "multiplier": 4}, "keepalive": 2, "hold": 7}
            if which in ("frr", "sonic"):  # the platforms that render BGP max-MED on startup
                plane["routing"]["max_med_on_startup"] = 300
    plan = plan_doc(doc, f"one-comparison-{which}")
    return plan, render_all(plan)


def _running(os: str, device: str, files: dict[str, str]) -> str:
    """The switch's running configuration as its driver shows it, from its files."""
    if os == "frr":  # frr.conf and the nftables ruleset; the kernel's hash policy as /proc/sys shows it
        system = yaml.safe_load(files[f"{device}.system.yaml"]) or {}
        policy = (system.get("sysctl") or {}).get("net.ipv4.fib_multipath_hash_policy")
        text = join_candidate(files[f"{device}.frr.conf"], files.get(f"{device}.nft"))
        return text if policy is None else f"{text}{SYSCTL_MARKER}\nnet.ipv4.fib_multipath_hash_policy = {policy}\n"
    if os == "sonic":
        return join(device, files)
    (only,) = [t for n, t in files.items() if n.startswith(f"{device}.")]
    return only


def _write_switch(device: str, files: dict[str, str], folder: Path) -> None:
    """The switch's rendered files into `folder`, as verify reads them."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        if name.startswith(f"{device}."):
            (folder / name).write_text(text)


def _both(plan: Plan, device: str, files: dict[str, str], folder: Path) -> tuple[set, set]:
    """(verify's findings, validate's failing results) as (check, expected, found), for the checks validate runs
    on this platform."""
    d = plan.device(device)
    ctx = build(plan, d, LinkIndex(plan))
    spec = platform(d.platform)
    _write_switch(device, files, folder)
    online = {c for c, needs in CHECKS.items() if needs <= spec.facts.running_facts}
    offline = {(f.check, f.expected, f.found) for f in check_device(plan, ctx, spec.read_files(device, folder))}
    p = Planned(device, d.platform, expect=expect(ctx, plan.planes[d.plane].host_mtu))
    live = {(r.check, r.expected, r.observed) for r in config(p, _running(d.platform, device, files)) if not r.ok}
    return {f for f in offline if f[0] in online}, live


def _plants(which: str, online_only: bool = True) -> list[tuple[str, str, int]]:
    """(check, file, line) of one fact of each check validate runs on the platform (`online_only`; else of
    each check the file's reader returns a fact for), from the clean files."""
    plan, files = _rendered(which)
    device = SWITCHES[which][2]
    d = plan.device(device)
    ctx = build(plan, d, LinkIndex(plan))
    spec = platform(d.platform)
    with_files = {n: t for n, t in files.items() if n.startswith(f"{device}.")}
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in with_files.items():
            Path(tmp, name).write_text(text)
        found = spec.read_files(device, Path(tmp))
    online = {c for c, needs in CHECKS.items() if needs <= spec.facts.running_facts}
    seen: dict[str, tuple[str, str, int]] = {}
    for o in compare(expect(ctx, plan.planes[d.plane].host_mtu), found):
        if o.ok and o.fact is not None and (o.check in online or not online_only) and o.check not in seen:
            seen[o.check] = (o.check, o.fact.file, o.fact.line)
    return sorted(seen.values())


def _plant(text: str, line: int) -> str:
    """The line's last number one more, or where it holds none its last word misspelt (a key or keyword no
    reader knows: the file still parses, the value is gone)."""
    rows = text.splitlines(keepends=True)
    row = rows[line - 1]
    number = list(re.finditer(r"\d+", row))
    if number:
        m = number[-1]
        rows[line - 1] = f"{row[: m.start()]}{int(m.group()) + 1}{row[m.end() :]}"
    else:
        m = list(re.finditer(r"[A-Za-z_]+", row))[-1]
        rows[line - 1] = f"{row[: m.end()]}x{row[m.end() :]}"
    return "".join(rows)


CASES = [(which, *plant) for which in SWITCHES for plant in _plants(which)]
EVERY_CASE = [(which, *plant) for which in SWITCHES for plant in _plants(which, online_only=False)]


def test_every_platform_has_its_running_checks_planted():
    """Each platform plants the checks its running reader can judge, the QoS map and load balancing at least."""
    planted = {(w, c) for w, c, _, _ in CASES}
    for which in ("cumulus", "eos", "nxos", "frr", "sonic"):
        assert {(which, "qos-dscp-map"), (which, "load-balancing")} <= planted, which
    for which in ("cumulus", "eos", "nxos", "frr"):  # SONiC's running reader reads CONFIG_DB, which holds no BGP
        assert {(which, "bfd"), (which, "bgp-timers")} <= planted, which
    assert ("frr", "bgp-max-med") in planted
    for which in ("eos-carried", "cumulus-carried"):
        assert {(which, c) for c in ("carried-port", "carried-bgp", "carried-class", "carried-share")} <= planted


@pytest.mark.parametrize("which", sorted(SWITCHES))
def test_a_clean_switch_passes_both_readers(which, tmp_path):
    plan, files = _rendered(which)
    device = SWITCHES[which][2]
    assert _both(plan, device, files, tmp_path) == (set(), set())


@pytest.mark.parametrize(("which", "check", "file", "line"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_a_planted_value_is_found_by_both_readers_under_one_name(which, check, file, line, tmp_path):
    plan, files = _rendered(which)
    device = SWITCHES[which][2]
    planted = dict(files)
    planted[file] = _plant(files[file], line)
    assert planted[file] != files[file]
    offline, live = _both(plan, device, planted, tmp_path)
    assert check in {c for c, _, _ in offline}, (check, offline)
    assert offline == live


def _failing_both_ways(which: str, file: str, line: int, folder: Path) -> list[tuple[list, list]]:
    """(the failing outcomes of every outcome, the outcomes asked for failing only), on the planted file, for
    what a rendered file's reader returns and for what the platform's running reader returns."""
    plan, files = _rendered(which)
    device = SWITCHES[which][2]
    planted = dict(files)
    planted[file] = _plant(files[file], line)
    _write_switch(device, planted, folder)
    d = plan.device(device)
    spec = platform(d.platform)
    want = expect(build(plan, d, LinkIndex(plan)), plan.planes[d.plane].host_mtu)
    found = spec.read_files(device, folder)
    return [
        ([o for o in compare(want, found, *read) if not o.ok], list(compare(want, found, *read, failing_only=True)))
        for read in ((), (spec.facts.running_facts,))
    ]


@pytest.mark.parametrize(("which", "check", "file", "line"), EVERY_CASE, ids=[f"{c[0]}-{c[1]}" for c in EVERY_CASE])
def test_failing_only_gives_exactly_the_failing_outcomes_of_every_outcome(which, check, file, line, tmp_path):
    """verify and push's proof ask only for the failing outcomes, and the per-item loops then build no passing
    one: the same outcomes (check, item, texts, fact, anchor), in the same order, as every outcome's failing
    ones, on a file with each kind of fact planted."""
    for failing, failing_only in _failing_both_ways(which, file, line, tmp_path):
        assert failing_only == failing


def test_the_plants_make_every_per_item_check_fail(tmp_path):
    """The checks whose passing outcomes failing_only leaves unbuilt each fail on some planted file above, so
    the equality is held where it can break."""
    failed = set()
    for n, (which, _, file, line) in enumerate(EVERY_CASE):
        failed |= {o.check for o in _failing_both_ways(which, file, line, tmp_path / str(n))[0][0]}
    per_item = {"mtu", "address", "bgp-remote-as", "bfd", "load-balancing", "qos-port"}
    assert per_item | {"carried-port", "carried-bgp", "carried-class", "carried-bfd"} <= failed
