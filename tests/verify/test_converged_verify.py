"""verify and validate read a converged plane's carried planes back: from the rendered files, from a running
configuration, and from NAPALM's BGP answer keyed by VRF. Each check is shown failing on a planted change."""

from __future__ import annotations

import re

import pytest
import yaml

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.render import render_context
from gpufabric.nos.cumulus.verify import nvue_facts
from gpufabric.nos.eos.verify import eos_facts
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.verify.checks import check_device
from gpufabric.verify.expect import expect
from gpufabric.verify.running.checks import Planned, config
from gpufabric.verify.running.converged import carried_sessions
from tests.conftest import INVENTORY, example_plan

INBAND = INVENTORY / "examples" / "converged-inband.yml"  # EOS leaves, Cumulus spines
STORAGE = INVENTORY / "examples" / "converged-north-south.yml"  # Cumulus leaves, EOS spines


def _rendered(plan: Plan, role: str, os: str) -> tuple[object, str]:
    device = next(d for d in plan.planes["business"].devices if d.role == role and d.platform == os)
    ctx = build(plan, device, LinkIndex(plan))
    files = render_context(ctx)
    return ctx, next(iter(files.values()))


def _facts(os: str, name: str, text: str):  # type: ignore[no-untyped-def]
    return nvue_facts(name, text, f"{name}.yaml") if os == "cumulus" else eos_facts(name, text, f"{name}.cfg")


def _carried_findings(plan: Plan, ctx, os: str, text: str) -> list[str]:  # type: ignore[no-untyped-def]
    found = check_device(plan, ctx, _facts(os, ctx.device.name, text))
    return [f"{f.check}: {f.expected} / {f.found}" for f in found]


CASES = [(INBAND, "leaf", "eos"), (INBAND, "spine", "cumulus"), (STORAGE, "leaf", "cumulus"), (STORAGE, "spine", "eos")]


@pytest.mark.parametrize(("path", "role", "os"), CASES, ids=lambda v: getattr(v, "stem", v))
def test_rendered_files_read_back_as_planned(path, role, os):
    plan = example_plan(path)
    ctx, text = _rendered(plan, role, os)
    facts = _facts(os, ctx.device.name, text)
    assert ctx.converged is not None
    planned = {s.name for v in ctx.converged.vrfs for s in v.ports}
    assert set(facts.subinterfaces) == planned and planned
    assert len(facts.vrf_neighbors) == sum(len(v.neighbors) for v in ctx.converged.vrfs) > 0
    assert _carried_findings(plan, ctx, os, text) == []


def _plant(os: str, text: str) -> str:
    """Tag 20 becomes 21 on the first storage subinterface, and the storage class's share 50 becomes 45."""
    if os == "eos":
        text = text.replace("encapsulation dot1q vlan 20", "encapsulation dot1q vlan 21", 1)
        return re.sub(r"(tx-queue 3\n\s+bandwidth guaranteed percent )50", r"\g<1>45", text)
    text = text.replace("vlan: 20", "vlan: 21", 1)
    return re.sub(r"('3':\n\s+mode: dwrr\n\s+bw-percent: )50", r"\g<1>45", text)


@pytest.mark.parametrize("os", ["eos", "cumulus"])
def test_verify_finds_a_wrong_tag_and_a_wrong_share(os):
    plan = example_plan(INBAND)
    ctx, text = _rendered(plan, "leaf" if os == "eos" else "spine", os)
    planted = _plant(os, text)
    assert planted != text
    found = _carried_findings(plan, ctx, os, planted)
    assert any(f.startswith("carried-port:") and "vlan 20" in f and "vlan 21" in f for f in found), found
    assert any(f.startswith("carried-share:") and "50%" in f and "45%" in f for f in found), found


def test_verify_finds_a_missing_vrf_session_and_an_unplanned_subinterface():
    plan = example_plan(INBAND)
    ctx, text = _rendered(plan, "leaf", "eos")
    session = re.search(r"^      neighbor (\S+) remote-as \d+\n", text, re.M)
    assert session is not None
    planted = text.replace(session.group(0), "", 1)
    planted += "interface Ethernet60/1.99\n   encapsulation dot1q vlan 99\n   vrf STORAGE\n!\n"
    found = _carried_findings(plan, ctx, "eos", planted)
    assert any(f.startswith("carried-bgp:") and session.group(1) in f and "missing" in f for f in found), found
    assert any(f.startswith("carried-port:") and "Ethernet60/1.99" in f for f in found), found


def _running(os: str, text: str) -> str:
    """What the switch shows as its running configuration: EOS the text; NVUE its tree (`nv config show`)."""
    if os == "eos":
        return text
    return yaml.safe_dump(yaml.safe_load(text)[1]["set"], sort_keys=False)


@pytest.mark.parametrize("os", ["eos", "cumulus"])
def test_validate_reads_the_running_configuration(os):
    plan = example_plan(INBAND)
    ctx, text = _rendered(plan, "leaf" if os == "eos" else "spine", os)
    platform(os)  # registered
    want = expect(ctx, plan.planes[ctx.device.plane].host_mtu)
    p = Planned(ctx.device.name, os, expect=want)
    results = [r for r in config(p, _running(os, text)) if r.check.startswith("carried-")]
    counts = {c: sum(r.check == c for r in results) for c in ("carried-port", "carried-bgp", "carried-share")}
    shares = sum(c.percent is not None for c in want.carried_classes)
    assert counts == {
        "carried-port": len(want.carried_ports),
        "carried-bgp": len(want.carried_sessions),
        "carried-share": shares,
    }
    assert want.carried_ports and want.carried_sessions and shares
    assert all(r.ok for r in results), [r for r in results if not r.ok]
    bad = [r for r in config(p, _running(os, _plant(os, text))) if not r.ok]
    assert {r.check for r in bad} == {"carried-port", "carried-share"}


def test_validate_judges_each_vrf_session_from_napalms_answer():
    plan = example_plan(INBAND)
    ctx, _ = _rendered(plan, "leaf", "eos")
    want = expect(ctx, plan.planes[ctx.device.plane].host_mtu).carried_sessions
    assert want
    answer: dict[str, dict[str, dict[str, dict[str, object]]]] = {"global": {"peers": {}}}
    for vrf, s in want:
        answer.setdefault(vrf, {"peers": {}})["peers"][s.key] = {"is_up": True, "remote_as": s.remote_asn}
    assert all(r.ok for r in carried_sessions(ctx.device.name, want, answer))
    vrf, first = want[0]
    answer[vrf]["peers"][first.key]["is_up"] = False
    del answer["INBAND"]
    failed = [r for r in carried_sessions(ctx.device.name, want, answer) if not r.ok]
    assert failed[0].observed.startswith("down")
    assert {r.observed for r in failed[1:]} == {"absent"}
    assert len(failed) == 1 + sum(1 for v, _ in want if v == "INBAND")


@pytest.mark.parametrize("role", ["leaf", "spine"])
def test_nxos_files_read_back_as_planned_and_a_wrong_tag_is_found(role):
    from gpufabric.nos.nxos.verify import nxos_facts
    from tests.vendor_variants import converged

    plan = converged("nxos")["converged-nxos"]
    device = next(d for d in plan.planes["business"].devices if d.role == role)
    ctx = build(plan, device, LinkIndex(plan))
    text = render_context(ctx)[f"{device.name}.cfg"]
    assert [f for f in check_device(plan, ctx, nxos_facts(device.name, text, "x.cfg"))] == []
    planted = text.replace("encapsulation dot1q 30", "encapsulation dot1q 31", 1).replace(
        "bandwidth remaining percent 10", "bandwidth remaining percent 15", 1
    )
    found = {f.check for f in check_device(plan, ctx, nxos_facts(device.name, planted, "x.cfg"))}
    assert found == {"carried-port", "carried-share"}


def _frr_folder(tmp_path, role: str):  # type: ignore[no-untyped-def]
    from tests.vendor_variants import converged

    plan = converged("frr")["converged-frr"]
    device = next(d for d in plan.planes["business"].devices if d.role == role)
    ctx = build(plan, device, LinkIndex(plan))
    for name, text in render_context(ctx).items():
        (tmp_path / name).write_text(text)
    return plan, ctx


@pytest.mark.parametrize("role", ["leaf", "spine"])
def test_frr_files_pass_vtysh_and_nft_and_read_back_as_planned(tmp_path, role):
    import shutil
    import subprocess

    from gpufabric.nos.frr.verify import read_frr

    plan, ctx = _frr_folder(tmp_path, role)
    name = ctx.device.name
    if shutil.which("vtysh") is not None:
        conf = str(tmp_path / f"{name}.frr.conf")
        done = subprocess.run(["vtysh", "-C", "-f", conf], check=False, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    facts = read_frr(name, tmp_path)
    assert ctx.converged is not None
    assert set(facts.subinterfaces) == {s.name for v in ctx.converged.vrfs for s in v.ports}
    assert facts.dscp_map[16].value == facts.dscp_map[18].value == 2
    assert list(check_device(plan, ctx, facts)) == []
    interfaces = tmp_path / f"{name}.interfaces"
    interfaces.write_text(interfaces.read_text().replace("    vrf INBAND\n", "    vrf STORAGE\n", 1))
    conf = tmp_path / f"{name}.frr.conf"
    conf.write_text(
        re.sub(
            r"(router bgp \d+ vrf STORAGE\n(?: .*\n)*?) neighbor \S+ remote-as \d+\n", r"\1", conf.read_text(), count=1
        )
    )
    found = [f"{f.check}: {f.expected} / {f.found}" for f in check_device(plan, ctx, read_frr(name, tmp_path))]
    assert any(f.startswith("carried-port:") and "vrf INBAND" in f and "vrf STORAGE" in f for f in found), found
    assert any(f.startswith("carried-bgp:") and "missing" in f for f in found), found


def test_sonic_config_db_passes_sonic_yang_and_reads_back_as_planned():
    import json

    from gpufabric.nos.sonic.verify import configdb_facts
    from tests.vendor_variants import converged

    yang = pytest.importorskip("libyang")
    del yang
    from gpufabric.nos.sonic.yang import ConfigDbError, validate
    from tests.conftest import SONIC_YANG

    if not (SONIC_YANG / "sonic-vlan-sub-interface.yang").is_file():
        pytest.skip(f"SONiC's YANG models are not in {SONIC_YANG}")
    plan = converged("sonic")["converged-sonic"]
    index = LinkIndex(plan)
    for role in ("leaf", "spine"):
        device = next(d for d in plan.planes["business"].devices if d.role == role)
        ctx = build(plan, device, index)
        files = render_context(ctx)
        text = files[f"{device.name}.config_db.json"]
        doc = json.loads(text)
        validate(SONIC_YANG, doc)
        assert set(doc["VRF"]) == {"Vrf_STORAGE", "Vrf_INBAND"}
        facts = configdb_facts(device.name, text, "x.json")
        from gpufabric.nos.frr.verify import bgp_facts
        from gpufabric.verify.cli_text import parse

        bgp_facts(facts, parse(files[f"{device.name}.frr.conf"].splitlines(), "ios"), "x.frr.conf")
        assert facts.shares[2].value == 10 and facts.shares[3].value == 50 and facts.shares[0].value == 40
        assert list(check_device(plan, ctx, facts)) == []
    # the models refuse a subinterface in a VRF that does not exist
    sub = next(k for k in doc["VLAN_SUB_INTERFACE"] if "|" not in k)
    doc["VLAN_SUB_INTERFACE"][sub]["vrf_name"] = "Vrf_NONE"
    with pytest.raises(ConfigDbError):
        validate(SONIC_YANG, doc)


@pytest.mark.parametrize("release", ["5.11", "5.14", "5.15", "5.18"])
def test_nvue_carried_planes_fit_each_release_and_a_misplaced_vrf_is_refused(release):
    from gpufabric.nos.cumulus import judge as nvue
    from tests.conftest import plan_doc

    doc = yaml.safe_load(STORAGE.read_text()) | {"platforms": {"cumulus": {"release": release}}}
    plan = plan_doc(doc, f"converged-{release}")
    _, text = _rendered(plan, "leaf", "cumulus")
    assert "vrf: STORAGE" in text
    assert nvue.check(nvue.set_tree(text), release) == []
    # the VRF where the other generation keeps it: under `ipv4` from 5.15, on the interface before
    if release >= "5.15":
        planted = re.sub(r"\n( +)vrf: STORAGE\n\1ipv4:\n", r"\n\1ipv4:\n\1  vrf: STORAGE\n", text, count=1)
    else:
        planted = re.sub(r"\n( +)ip:\n\1  vrf: STORAGE\n", r"\n\1vrf: STORAGE\n\1ip:\n", text, count=1)
    assert planted != text
    assert nvue.check(nvue.set_tree(planted), release) != []
