"""BFD and BGP timers: an intent that asks for them renders them on every platform, each platform's files
pass its vendor's own model (NVIDIA's NVUE object model, Arista's pyavd, Cisco's cisco.nxos parsers, SONiC's
YANG through libyang, FRR's own parser `vtysh -C`), and values a targeted platform would not take are
refused where they are written."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from functools import cache
from typing import Any

import pytest
import yaml

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.render import render_context
from gpufabric.intent import IntentError, load_intent_text
from gpufabric.nos.cumulus import judge as nvue
from gpufabric.nos.eos import judge as avd
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from tests.conftest import INVENTORY, SONIC_YANG, plan_doc

MULTI = INVENTORY / "examples" / "multi-vendor.yml"  # cumulus compute, eos storage, nxos business
SONIC = INVENTORY / "examples" / "sonic.yml"
DEFAULT = INVENTORY / "fabric.yml"  # every switch FRR

BFD = {"enabled": True, "interval": 250, "multiplier": 4}
TIMERS = {"keepalive": 2, "hold": 7}


def _with_bfd(path: Any, bfd: dict[str, Any] | None = None, **timers: Any) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    for plane in doc["planes"].values():
        if "routing" in plane:
            plane["routing"]["bfd"] = dict(BFD if bfd is None else bfd)
            plane["routing"].update(timers or TIMERS)
    return doc


@cache
def _rendered(stem: str) -> tuple[Plan, dict[str, str]]:
    path = {"multi": MULTI, "sonic": SONIC, "default": DEFAULT}[stem]
    plan = plan_doc(_with_bfd(path), f"{stem}-bfd")
    index = LinkIndex(plan)
    files: dict[str, str] = {}
    for device in plan.devices():
        files |= render_context(build(plan, device, index))
    return plan, files


def _devices(stem: str, platform: str) -> list[Any]:
    plan, _ = _rendered(stem)
    return [d for d in plan.devices() if d.platform == platform and d.asn is not None]


# -- NVUE ----------------------------------------------------------------------------------------------


def test_nvue_documents_carry_bfd_and_timers_and_fit_every_release():
    plan, files = _rendered("multi")
    devices = _devices("multi", "cumulus")
    assert devices
    for d in devices:
        tree = yaml.safe_load(files[f"{d.name}.yaml"])
        bgp = next(s for s in tree if "set" in s)["set"]["vrf"]["default"]["router"]["bgp"]
        assert bgp["timers"] == {"keepalive": 2, "hold": 7}
        fabric = [n for n in bgp["neighbor"].values() if "bfd" in n]
        assert fabric and len(fabric) == len(bgp["neighbor"])  # a compute plane has fabric sessions only
        for n in fabric:
            assert {k: v for k, v in n["bfd"].items() if "interval" in k or "multiplier" in k} == {
                "detect-multiplier": 4,
                "min-rx-interval": 250,
                "min-tx-interval": 250,
            }
        assert nvue.check(nvue.set_tree(files[f"{d.name}.yaml"]), plan.intent.release("cumulus")) == []


CUMULUS_RELEASES = platform("cumulus").facts.releases


# The newest release in the fast tier; the older generations (seconds each, the model built per release) in the
# whole suite.
@pytest.mark.parametrize(
    "release",
    [pytest.param(r, marks=() if r == CUMULUS_RELEASES[-1] else pytest.mark.slow)
     for r in sorted({CUMULUS_RELEASES[0], "5.14", CUMULUS_RELEASES[-1]})],
)  # fmt: skip
def test_nvue_bfd_and_timers_fit_the_object_model_of_each_generation(release):
    doc = _with_bfd(MULTI)
    doc["platforms"] = {"cumulus": {"release": release}}
    plan = plan_doc(doc, f"multi-bfd-{release}")
    index = LinkIndex(plan)
    checked = 0
    for d in plan.devices():
        if d.platform == "cumulus":
            text = render_context(build(plan, d, index))[f"{d.name}.yaml"]
            assert "min-tx-interval: 250" in text
            assert ("profile: fabric" in text) == (tuple(map(int, release.split("."))) >= (5, 15))
            assert nvue.check(nvue.set_tree(text), release) == []
            checked += 1
    assert checked > 0


def test_nvue_model_refuses_a_bfd_interval_below_its_range():
    """The judge can fail: NVUE takes min-rx-interval from 50 ms on."""
    plan, files = _rendered("multi")
    d = _devices("multi", "cumulus")[0]
    text = files[f"{d.name}.yaml"].replace("min-rx-interval: 250", "min-rx-interval: 20", 1)
    assert "min-rx-interval: 20" in text
    assert nvue.check(nvue.set_tree(text), plan.intent.release("cumulus")) != []


# -- EOS -----------------------------------------------------------------------------------------------


def test_eos_configs_say_what_pyavd_renders_from_the_same_structured_config():
    plan, _ = _rendered("multi")
    index = LinkIndex(plan)
    devices = _devices("multi", "eos")
    assert devices
    for d in devices:
        ctx = build(plan, d, index)
        ours = render_context(ctx)[f"{d.name}.cfg"]
        assert "   interval 250 min-rx 250 multiplier 4 default" in ours
        assert "   timers bgp 2 7" in ours
        assert (
            len(re.findall(r"^   neighbor \S+ bfd$", ours, re.M)) == sum(n.kind == "fabric" for n in ctx.neighbors) > 0
        )
        result = avd.render(avd.structured_config(ctx))
        assert result.violations == []
        assert avd.compare(ours, result.text) == []


def test_pyavd_comparison_sees_a_missing_neighbor_bfd():
    plan, _ = _rendered("multi")
    d = _devices("multi", "eos")[0]
    ctx = build(plan, d, LinkIndex(plan))
    ours = render_context(ctx)[f"{d.name}.cfg"]
    dropped = re.sub(r"^   neighbor \S+ bfd\n", "", ours, count=1, flags=re.M)
    assert avd.compare(dropped, avd.render(avd.structured_config(ctx)).text) != []


# -- NX-OS ---------------------------------------------------------------------------------------------


def test_cisco_parsers_read_bfd_and_timers_back():
    from tests.oracles import nxos

    plan, files = _rendered("multi")
    index = LinkIndex(plan)
    devices = _devices("multi", "nxos")
    assert devices
    for d in devices:
        ctx = build(plan, d, index)
        text = files[f"{d.name}.cfg"]
        g = nxos.parsed("bgp_global", text)
        assert g["timers"] == {"bgp": {"keepalive": 2, "holdtime": 7}}
        with_bfd = {n["neighbor_address"] for n in g["neighbors"] if n.get("bfd") == {"set": True}}
        assert with_bfd == {n.address for n in ctx.neighbors if n.kind == "fabric"}
        l3 = {i["name"]: i for i in nxos.parsed("l3_interfaces", text)}
        fabric = [p.name for p in ctx.ports if p.kind == "fabric"]
        assert fabric and all(l3[p].get("redirects") is False for p in fabric)
        # no cisco.nxos resource parser reads the global timers: the line itself is the check
        assert "feature bfd" in text.splitlines()
        assert "bfd interval 250 min_rx 250 multiplier 4" in text.splitlines()


# -- FRR and SONiC -------------------------------------------------------------------------------------


def _vtysh(tmp_path: Any, name: str, text: str) -> subprocess.CompletedProcess[str]:
    f = tmp_path / name
    f.write_text(text)
    return subprocess.run(["vtysh", "-C", "-f", str(f)], capture_output=True, text=True, check=False)


@pytest.mark.parametrize("stem", ["default", pytest.param("sonic", marks=pytest.mark.slow)])
def test_frr_configs_with_bfd_pass_frr_s_own_parser(stem, tmp_path):
    if shutil.which("vtysh") is None:
        pytest.skip("vtysh (frr) is not installed")
    plan, files = _rendered(stem)
    platform = "frr" if stem == "default" else "sonic"
    devices = _devices(stem, platform)
    assert devices
    index = LinkIndex(plan)
    for d in devices:
        name = f"{d.name}.frr.conf"
        text = files[name]
        ctx = build(plan, d, index)
        assert " timers bgp 2 7" in text.splitlines()
        assert "bfd\n profile fabric\n  detect-multiplier 4\n  receive-interval 250\n  transmit-interval 250\n" in text
        assert text.count(" bfd profile fabric\n") == sum(n.kind == "fabric" for n in ctx.neighbors) > 0
        done = _vtysh(tmp_path, name, text)
        assert done.returncode == 0, f"{name}: {done.stdout}{done.stderr}"
    broken = files[f"{devices[0].name}.frr.conf"].replace("detect-multiplier 4", "detect-multiplier 1", 1)
    assert _vtysh(tmp_path, "broken.frr.conf", broken).returncode != 0  # FRR's parser can fail here


def test_sonic_config_db_with_bfd_still_conforms_to_sonic_yang():
    """SONiC's BGP BFD is FRR's bfdd in the bgp container: CONFIG_DB carries nothing of it, and stays valid."""
    from tests.nos.sonic.test_sonic_yang import _judge_available

    _judge_available()
    from gpufabric.nos.sonic.yang import validate

    _, files = _rendered("sonic")
    devices = _devices("sonic", "sonic")
    for d in devices:
        validate(SONIC_YANG, json.loads(files[f"{d.name}.config_db.json"]))
    assert devices


# -- refusals ------------------------------------------------------------------------------------------


def _refused(doc: dict[str, Any]) -> list[tuple[str, str, str, int | None]]:
    with pytest.raises(IntentError) as info:
        load_intent_text(yaml.safe_dump(doc, sort_keys=False), "bfd.yml")
    err = info.value
    return [(p.field, p.message, p.hint, err.line_of(p.path)) for p in err.problems]


def test_an_interval_nxos_would_not_take_is_refused_naming_nxos():
    doc = _with_bfd(MULTI, {"enabled": True, "interval": 1000, "multiplier": 3})
    found = _refused(doc)
    assert [f[0] for f in found] == ["planes.business.routing.bfd.interval"]
    _, message, hint, line = found[0]
    assert "nxos" in message and "50-999" in message and "eos" not in message
    assert "between 50 and 999" in hint
    assert line is not None


def test_a_multiplier_eos_would_not_take_is_refused_naming_eos():
    doc = _with_bfd(MULTI, {"enabled": True, "interval": 300, "multiplier": 2})
    found = _refused(doc)
    # Cumulus and FRR take 2; EOS from 3; NX-OS from 1
    assert [(f[0], "eos" in f[1], "cumulus" in f[1]) for f in found] == [
        ("planes.storage.routing.bfd.multiplier", True, False)
    ]


def test_an_interval_below_nvue_s_range_is_refused_naming_cumulus():
    doc = _with_bfd(MULTI, {"enabled": True, "interval": 20, "multiplier": 3})
    fields = {f[0]: f[1] for f in _refused(doc)}
    assert "cumulus" in fields["planes.compute.routing.bfd.interval"]
    assert "eos" in fields["planes.storage.routing.bfd.interval"]
    assert "nxos" in fields["planes.business.routing.bfd.interval"]


def test_frr_takes_what_its_bfdd_takes():
    doc = _with_bfd(DEFAULT, {"enabled": True, "interval": 20, "multiplier": 2})
    load_intent_text(yaml.safe_dump(doc, sort_keys=False), "bfd.yml")


def test_bfd_left_off_ignores_its_ranges():
    doc = _with_bfd(MULTI, {"enabled": False, "interval": 20, "multiplier": 2})
    load_intent_text(yaml.safe_dump(doc, sort_keys=False), "bfd.yml")


@pytest.mark.parametrize(
    ("timers", "field", "words"),
    [
        ({"keepalive": 3, "hold": 3}, "planes.compute.routing.hold", "not above keepalive"),
        ({"keepalive": 10, "hold": 9}, "planes.compute.routing.hold", "not above keepalive"),
        ({"keepalive": 3}, "planes.compute.routing.hold", "set together"),
        ({"hold": 9}, "planes.compute.routing.keepalive", "set together"),
    ],
)
def test_bad_timers_are_refused_located(timers, field, words):
    doc = yaml.safe_load(DEFAULT.read_text())
    doc["planes"]["compute"]["routing"].update(timers)
    found = _refused(doc)
    assert [f[0] for f in found] == [field]
    assert words in found[0][1]
    assert found[0][3] is not None


@pytest.mark.parametrize(
    ("key", "value"),
    [("hold", 0), ("hold", 2), ("keepalive", 0), ("hold", 3601)],
)
def test_timers_outside_every_platform_s_range_are_refused_by_the_schema(key, value):
    doc = yaml.safe_load(DEFAULT.read_text())
    doc["planes"]["compute"]["routing"].update({"keepalive": 1, "hold": 9} | {key: value})
    found = _refused(doc)
    assert [f[0] for f in found] == [f"planes.compute.routing.{key}"]


def test_without_bfd_or_timers_nothing_is_rendered():
    plan = plan_doc(yaml.safe_load(MULTI.read_text()), "multi")
    index = LinkIndex(plan)
    for d in plan.devices():
        for name, text in render_context(build(plan, d, index)).items():
            assert not re.search(r"\bbfd\b|timers bgp|^\s+timers:", text, re.M), name


# -- verify reads BFD and the timers back ------------------------------------------------------------------


def _verify(stem: str, folder: Any, edit: tuple[str, str, str] | None = None) -> list[Any]:
    from gpufabric.verify.runner import verify

    plan, files = _rendered(stem)
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        written = text
        if edit is not None and name == edit[0]:
            assert edit[1] in text, f"{edit[1]!r} not in {name}"
            written = text.replace(edit[1], edit[2], 1)
        (folder / name).write_text(written)
    return verify(plan, folder, workers=1, vendor_judges=False).findings


@pytest.mark.parametrize("stem", ["multi", "sonic", "default"])
def test_rendered_bfd_and_timers_verify_clean(stem, tmp_path):
    assert [f.as_dict() for f in _verify(stem, tmp_path / stem)] == []


def _one_fabric_key(stem: str, platform_name: str) -> tuple[str, str]:
    plan, _ = _rendered(stem)
    index = LinkIndex(plan)
    d = _devices(stem, platform_name)[0]
    return d.name, next(n.key for n in build(plan, d, index).neighbors if n.kind == "fabric")


@pytest.mark.parametrize(
    ("stem", "platform_name", "suffix", "line", "replacement"),
    [
        ("default", "frr", ".frr.conf", " neighbor {key} bfd profile fabric\n", ""),
        ("sonic", "sonic", ".frr.conf", " neighbor {key} bfd profile fabric\n", ""),
        ("multi", "eos", ".cfg", "   neighbor {key} bfd\n", ""),
        ("multi", "nxos", ".cfg", "    description {peer}\n    bfd\n", "    description {peer}\n"),
    ],
)
def test_a_session_missing_its_bfd_is_reported_by_verify(stem, platform_name, suffix, line, replacement, tmp_path):
    device, key = _one_fabric_key(stem, platform_name)
    plan, _ = _rendered(stem)
    peer = next(
        n.peer
        for n in build(plan, next(d for d in plan.devices() if d.name == device), LinkIndex(plan)).neighbors
        if n.key == key
    )
    edit = (f"{device}{suffix}", line.format(key=key, peer=peer), replacement.format(key=key, peer=peer))
    findings = _verify(stem, tmp_path / stem, edit)
    assert [(f.check, f.device, f.found) for f in findings] == [("bfd", device, "no BFD")]
    assert key in findings[0].expected and "250 ms x 4" in findings[0].expected
    assert findings[0].line >= 1


def test_nvue_bfd_timers_other_than_the_plane_s_are_reported(tmp_path):
    device, _ = _one_fabric_key("multi", "cumulus")
    findings = _verify("multi", tmp_path / "a", (f"{device}.yaml", "detect-multiplier: 4", "detect-multiplier: 5"))
    # 5.15+ keeps the timers in one profile that every fabric session names: all of them run 250 ms x 5
    assert findings and {(f.check, f.device, f.found) for f in findings} == {("bfd", device, "250 ms x 5")}


@pytest.mark.parametrize(
    ("stem", "file_of", "old", "new"),
    [
        ("default", "frr", " timers bgp 2 7\n", " timers bgp 2 9\n"),
        ("multi", "eos", "   timers bgp 2 7\n", ""),
        ("multi", "nxos", "  timers bgp 2 7\n", "  timers bgp 3 9\n"),
        ("multi", "cumulus", "hold: 7", "hold: 9"),
    ],
)
def test_wrong_or_missing_bgp_timers_are_reported_by_verify(stem, file_of, old, new, tmp_path):
    d = _devices(stem, file_of)[0]
    suffix = {"frr": ".frr.conf", "eos": ".cfg", "nxos": ".cfg", "cumulus": ".yaml"}[file_of]
    findings = _verify(stem, tmp_path / stem, (f"{d.name}{suffix}", old, new))
    assert [(f.check, f.device, f.expected) for f in findings] == [("bgp-timers", d.name, "keepalive 2, hold 7")]


# -- validate reads them out of a running configuration --------------------------------------------------


def _timers(checks, p, running: str) -> list:
    """validate's BFD and BGP timer results (the one comparison's) on a running configuration."""
    return [r for r in checks.config(p, running) if r.check in ("bfd", "bgp-timers")]


@pytest.mark.parametrize(("stem", "platform_name"), [("multi", "eos"), ("multi", "nxos"), ("multi", "cumulus")])
def test_validate_reads_bfd_and_timers_from_the_running_configuration(stem, platform_name):
    from gpufabric.validate.planned import planned
    from gpufabric.verify.running import checks

    plan, files = _rendered(stem)
    index = LinkIndex(plan)
    d = _devices(stem, platform_name)[0]
    p = planned(plan, index, [d.name], None)[d.name]
    assert p.reads_running and p.expect.bfd is not None and p.expect.bgp_timers == (2, 7)
    running = files[f"{d.name}{'.yaml' if platform_name == 'cumulus' else '.cfg'}"]
    results = _timers(checks, p, running)
    assert results and all(r.ok for r in results), [r for r in results if not r.ok]
    assert {r.check for r in results} == {"bfd", "bgp-timers"}
    assert sum(r.check == "bfd" for r in results) == sum(s.kind == "fabric" for s in p.expect.sessions) > 0
    bad = running.replace("2 7", "3 9").replace("keepalive: 2", "keepalive: 3")
    failed = [r for r in _timers(checks, p, bad) if not r.ok]
    assert [(r.check, r.observed) for r in failed] == [
        ("bgp-timers", "keepalive 3, hold 9" if platform_name != "cumulus" else "keepalive 3, hold 7")
    ]


def test_validate_reads_frr_s_running_configuration_with_its_profile_s_timers():
    from gpufabric.nos.frr.files import join_candidate
    from gpufabric.validate.planned import planned
    from gpufabric.verify.running import checks

    plan, files = _rendered("default")
    d = _devices("default", "frr")[0]
    p = planned(plan, LinkIndex(plan), [d.name], None)[d.name]
    conf = files[f"{d.name}.frr.conf"]
    results = _timers(checks, p, join_candidate(conf, None))
    assert results and all(r.ok for r in results)
    # FRR's running configuration leaves out timers equal to its profile's: 3/9 under `datacenter`
    p39 = dataclasses.replace(p, expect=dataclasses.replace(p.expect, bgp_timers=(3, 9)))
    without = join_candidate(conf.replace(" timers bgp 2 7\n", ""), None)
    assert [r.ok for r in _timers(checks, p39, without) if r.check == "bgp-timers"] == [True]
    no_bfd = join_candidate(re.sub(r"^ neighbor \S+ bfd profile fabric\n", "", conf, count=1, flags=re.M), None)
    assert [r.observed for r in _timers(checks, p, no_bfd) if not r.ok] == ["no BFD"]


def test_validate_leaves_bfd_to_verify_where_the_running_reader_sees_no_bgp():
    """SONiC's running reader takes CONFIG_DB, which holds no BGP: no result rather than a false `no BFD`."""
    from gpufabric.nos.sonic.candidate import join
    from gpufabric.validate.planned import planned
    from gpufabric.verify.running import checks

    plan, files = _rendered("sonic")
    d = _devices("sonic", "sonic")[0]
    p = planned(plan, LinkIndex(plan), [d.name], None)[d.name]
    assert p.expect.bfd is not None
    running = join(d.name, {n: t for n, t in files.items() if n.startswith(f"{d.name}.")})
    assert _timers(checks, p, running) == []
