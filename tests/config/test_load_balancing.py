"""A data plane's `load_balancing`: adaptive routing where the platform has it (Cumulus NVUE, EOS dynamic load
balancing), refused where it has not, the Linux kernel's ECMP hash on FRR switches; each rendered setting
is held to its vendor's model, read back by `verify`, and a planted change is found."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.render import render_context
from gpufabric.intent import IntentError, load_intent_text
from gpufabric.nos.cumulus import judge as nvue
from gpufabric.nos.eos import judge as avd
from gpufabric.nos.frr import system as frr_system
from gpufabric.nos.frr.files import SYSCTL_MARKER
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.validate.planned import planned
from gpufabric.verify.runner import verify
from gpufabric.verify.running import checks
from tests.conftest import INVENTORY, default_doc, plan_doc, set_path
from tests.render_helpers import render_into
from tests.vendor_variants import one_platform

SUPERPOD = INVENTORY / "examples" / "superpod-1su.yml"
# The releases at either end of each NVUE generation (5.15 renamed `enable: on` to `state: enabled`).
RELEASES = sorted({platform("cumulus").facts.releases[0], "5.14", "5.15", platform("cumulus").facts.releases[-1]})


def _adaptive(doc: dict, release: str | None = None) -> dict:
    doc = set_path(doc, ("planes", "compute", "load_balancing"), "adaptive")
    if release is not None:
        doc["platforms"] = {"cumulus": {"release": release}}
    return doc


def _superpod(release: str | None = None, adaptive: bool = True) -> Plan:
    doc = yaml.safe_load(SUPERPOD.read_text())
    return plan_doc(_adaptive(doc, release) if adaptive else doc, f"superpod-{release}")


def _files(plan: Plan, plane: str = "compute") -> dict[str, dict[str, str]]:
    index = LinkIndex(plan)
    return {d.name: render_context(build(plan, d, index)) for d in plan.devices() if d.plane == plane}


def test_the_default_is_ecmp_and_changes_nothing():
    """The default keeps a per-flow hash: adaptive routing reorders packets, which only NICs built for it
    absorb, so it is never switched on unasked."""
    plan = _superpod(adaptive=False)
    assert plan.planes["compute"].load_balancing == "ecmp"
    for files in _files(plan).values():
        assert all("adaptive-routing" not in text for text in files.values())


# NVIDIA's model takes seconds per release: the fast tier keeps 5.15's case.
@pytest.mark.parametrize("release", [r if r == "5.15" else pytest.param(r, marks=pytest.mark.slow) for r in RELEASES])
def test_cumulus_adaptive_routing_fits_nvidias_model(release):
    plan = _superpod(release)
    checked = 0
    for name, files in _files(plan).items():
        text = files[f"{name}.yaml"]
        tree = nvue.set_tree(text)
        assert nvue.check(tree, release) == [], name
        on = {"state": "enabled"} if release >= "5.15" else {"enable": "on"}
        assert tree["router"]["adaptive-routing"] == on
        fabric = {p for p, spec in tree["interface"].items() if str(spec.get("description", "")).startswith("fabric")}
        assert fabric
        for port in fabric:
            assert tree["interface"][port]["router"]["adaptive-routing"] == on, (name, port)
        checked += 1
    assert checked


def test_nvidias_model_refuses_the_other_generations_spelling():
    """The judge reads this subtree: 5.15's `state` is not a key of 5.14's adaptive-routing object."""
    tree = nvue.set_tree(_files(_superpod("5.15"))["cmp-su1-leaf1"]["cmp-su1-leaf1.yaml"])
    paths = {f.path for f in nvue.check(tree, "5.14")}
    assert any("adaptive-routing" in p for p in paths), paths


def test_eos_dynamic_load_balancing_is_what_pyavd_renders():
    plan = plan_doc(_adaptive(one_platform("eos")), "all-eos-adaptive")
    index = LinkIndex(plan)
    checked = 0
    for device in plan.devices():
        if device.plane != "compute":
            continue
        ctx = build(plan, device, index)
        ours = render_context(ctx)[f"{device.name}.cfg"]
        assert "\nip hardware fib load-balance distribution dynamic\n" in ours
        result = avd.render(avd.structured_config(ctx))
        assert result.violations == []
        assert avd.compare(ours, result.text) == []
        # Without the line, Arista's renderer and ours part: the comparison sees this block.
        assert avd.compare(ours.replace("ip hardware fib load-balance distribution dynamic\n", ""), result.text)
        checked += 1
    assert checked


@pytest.mark.parametrize("other", ["nxos", "frr", "sonic"])
def test_adaptive_is_refused_where_the_platform_has_none(other):
    doc = default_doc()
    for role in ("leaf", "spine"):
        doc = set_path(doc, ("planes", "compute", "switches", role, "platform"), other)
    doc = set_path(doc, ("planes", "compute", "routing", "addressing"), "p2p31")
    doc = set_path(doc, ("planes", "compute", "addressing", "p2p"), "10.20.0.0/24")
    doc = set_path(doc, ("planes", "compute", "load_balancing"), "adaptive")
    with pytest.raises(IntentError) as info:
        load_intent_text(yaml.safe_dump(doc, sort_keys=False), "fabric.yml")
    found = [p for p in info.value.problems if p.path == ("planes", "compute", "load_balancing")]
    assert found and other in found[0].message
    assert info.value.line_of(found[0].path) is not None  # located in the file


def test_an_unknown_choice_is_refused_by_the_schema():
    doc = set_path(default_doc(), ("planes", "compute", "load_balancing"), "random")
    with pytest.raises(IntentError) as info:
        load_intent_text(yaml.safe_dump(doc, sort_keys=False), "fabric.yml")
    assert any(p.path[:3] == ("planes", "compute", "load_balancing") for p in info.value.problems)


def test_frr_switches_hash_ecmp_over_l4_ports():
    plan = plan_doc(default_doc())
    for name, files in _files(plan).items():
        settings = frr_system.parse(files[f"{name}.system.yaml"])
        assert settings.sysctl == {"net.ipv4.fib_multipath_hash_policy": 1}
        script = frr_system.apply_script(settings)
        assert "echo 1 > /proc/sys/net/ipv4/fib_multipath_hash_policy" in script
        assert "net.ipv4.fib_multipath_hash_policy = 1" in script  # in /etc/sysctl.d, for the next boot


def test_a_sysctl_gpufabric_does_not_manage_is_refused():
    with pytest.raises(ValueError, match=r"kernel\.core_pattern"):
        frr_system.parse("hostname: x\ntimezone: UTC\nsysctl:\n  kernel.core_pattern: 1\n")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    out = {}
    for name, plan in (
        ("cumulus", _superpod("5.14")),
        ("eos", plan_doc(_adaptive(one_platform("eos")), "all-eos-adaptive")),
        ("frr", plan_doc(default_doc())),
    ):
        folder = tmp_path_factory.mktemp(name)
        render_into(plan, folder)
        out[name] = (plan, folder)
    return out


def _planted(folders, which: str, file: str, old: str, new: str, tmp_path: Path) -> list:
    plan, folder = folders[which]
    copy = tmp_path / which
    shutil.copytree(folder, copy)
    text = (copy / file).read_text()
    assert old in text
    (copy / file).write_text(text.replace(old, new, 1))
    return [f for f in verify(plan, copy, vendor_judges=False).findings if f.check == "load-balancing"]


@pytest.mark.parametrize("which", ["cumulus", "eos", "frr"])
def test_rendered_load_balancing_verifies_clean(folders, which):
    plan, folder = folders[which]
    assert [f for f in verify(plan, folder, vendor_judges=False).findings if f.check == "load-balancing"] == []


PLANTED = [
    # (fabric, file, old, new, device, expected words)
    (
        "cumulus",
        "cmp-su1-leaf1.yaml",
        "        router:\n          adaptive-routing:\n            enable: 'on'\n",
        "",
        "cmp-su1-leaf1",
        "adaptive routing on",
    ),
    ("eos", "cmp-spine1.cfg", "ip hardware fib load-balance distribution dynamic\n", "", "cmp-spine1", "routing on"),
    (
        "frr",
        "cmp-spine1.system.yaml",
        "net.ipv4.fib_multipath_hash_policy: 1",
        "net.ipv4.fib_multipath_hash_policy: 0",
        "cmp-spine1",
        "1",  # the sysctl's value, as validate reports it of a running switch
    ),
]


@pytest.mark.parametrize(("which", "file", "old", "new", "device", "words"), PLANTED, ids=[p[0] for p in PLANTED])
def test_a_planted_change_is_found_at_its_line(folders, tmp_path, which, file, old, new, device, words):
    found = _planted(folders, which, file, old, new, tmp_path)
    assert found, "the planted change went unseen"
    assert {f.device for f in found} == {device}
    assert all(f.file == file and f.line >= 1 for f in found)
    assert any(words in f.expected for f in found)


def test_adaptive_routing_on_an_ecmp_plane_is_found(folders, tmp_path):
    """The other direction: a Cumulus leaf of an `ecmp` plane with adaptive routing switched on."""
    plan = _superpod("5.14", adaptive=False)
    folder = tmp_path / "ecmp"
    render_into(plan, folder)
    target = folder / "cmp-su1-leaf1.yaml"
    text = target.read_text()
    planted = "\n    router:\n      adaptive-routing:\n        enable: 'on'\n"
    target.write_text(text.replace("\n    router:\n", planted, 1))
    found = [f for f in verify(plan, folder, vendor_judges=False).findings if f.check == "load-balancing"]
    assert [(f.device, f.found) for f in found] == [("cmp-su1-leaf1", "on")]


def _balancing(p, running: str, item: str) -> list:
    """validate's load-balancing results for `item` (the one comparison's) on a running configuration."""
    return [r for r in checks.config(p, running) if r.check == "load-balancing" and r.item == item]


def _frr_running(policy: int | None) -> str:
    conf = "frr version 8.4\nrouter bgp 65000\n!\nend\n"
    return conf if policy is None else f"{conf}{SYSCTL_MARKER}\nnet.ipv4.fib_multipath_hash_policy = {policy}\n"


@pytest.mark.parametrize(("policy", "ok"), [(1, True), (0, False), (None, False)])
def test_validate_reads_the_running_hash_policy(folders, policy, ok):
    plan, _ = folders["frr"]
    p = planned(plan, LinkIndex(plan), ["cmp-spine1"], "compute")["cmp-spine1"]
    assert p.expect.balancing.multipath_hash == 1 and p.reads_running
    results = _balancing(p, _frr_running(policy), "net.ipv4.fib_multipath_hash_policy")
    assert [r.ok for r in results] == [ok]


def test_validate_reads_adaptive_routing_from_a_running_eos_config(folders):
    plan, folder = folders["eos"]
    p = planned(plan, LinkIndex(plan), ["cmp-spine1"], "compute")["cmp-spine1"]
    assert p.expect.balancing.adaptive is True
    running = (folder / "cmp-spine1.cfg").read_text()
    assert [r.ok for r in _balancing(p, running, "adaptive routing")] == [True]
    planted = running.replace("ip hardware fib load-balance distribution dynamic\n", "")
    assert [r.ok for r in _balancing(p, planted, "adaptive routing")] == [False]


# -- RoCE-aware ECMP hashing: the five-tuple, the UDP source port a queue pair gets above all ---------------


@pytest.mark.slow  # NVIDIA's model built for every release: seconds; in the whole suite
def test_cumulus_roce_planes_hash_over_the_five_tuple_in_each_generation_s_spelling():
    for release in ("5.14", "5.15"):
        doc = yaml.safe_load(SUPERPOD.read_text())
        doc["platforms"] = {"cumulus": {"release": release}}
        plan = plan_doc(doc, f"superpod-ecmp-{release}")
        value = "enabled" if release >= "5.15" else "on"
        for name, files in _files(plan).items():
            tree = nvue.set_tree(files[f"{name}.yaml"])
            assert tree["system"]["forwarding"]["ecmp-hash"] == {
                "source-ip": value, "destination-ip": value, "ip-protocol": value,
                "source-port": value, "destination-port": value,
            }, name  # fmt: skip
            assert nvue.check(tree, release) == [], name
    for name, files in _files(_superpod("5.14"), "oob").items():  # no RoCE there: the switch's default
        assert "ecmp-hash" not in files[f"{name}.yaml"]


def test_nvidias_model_refuses_a_hash_field_it_does_not_have():
    plan = _superpod("5.14", adaptive=False)
    name, files = next(iter(_files(plan).items()))
    tree = nvue.set_tree(files[f"{name}.yaml"].replace("source-port: 'on'", "udp-source-port: 'on'"))
    assert nvue.check(tree, "5.14") != []


def test_a_cumulus_leaf_without_the_hash_is_found_by_verify(folders, tmp_path):
    planted = "      forwarding:\n        ecmp-hash:\n"
    _plan, folder = folders["cumulus"]
    text = (folder / "cmp-su1-leaf1.yaml").read_text()
    assert planted in text
    end = "destination-port: 'on'\n"
    block = text[text.index(planted) : text.index(end, text.index(planted)) + len(end)]
    found = _planted(folders, "cumulus", "cmp-su1-leaf1.yaml", block, "", tmp_path)
    assert [(f.device, f.found) for f in found] == [("cmp-su1-leaf1", "the platform's default")]
    assert "l4-src-port" in found[0].expected


def test_validate_reads_the_running_hash_fields_of_a_cumulus_switch(folders):
    plan, folder = folders["cumulus"]
    p = planned(plan, LinkIndex(plan), ["cmp-su1-leaf1"], "compute")["cmp-su1-leaf1"]
    fields = ("src-ip", "dst-ip", "ip-protocol", "l4-src-port", "l4-dst-port")
    assert p.expect.balancing.hash_fields == fields and p.reads_running
    running = (folder / "cmp-su1-leaf1.yaml").read_text()
    hashing = _balancing(p, running, "ECMP hash fields")
    assert [r.ok for r in hashing] == [True]
    planted = running.replace("          source-port: 'on'\n", "          source-port: 'off'\n", 1)
    hashing = _balancing(p, planted, "ECMP hash fields")
    assert [r.ok for r in hashing] == [False] and "l4-src-port" not in hashing[0].observed


def test_sonic_roce_planes_hash_over_the_five_tuple_and_verify_finds_it_missing(tmp_path):
    import json

    plan = plan_doc(yaml.safe_load((INVENTORY / "examples" / "sonic.yml").read_text()), "sonic-hash")
    folder = tmp_path / "sonic"
    render_into(plan, folder)
    leaf = next(d.name for d in plan.devices() if d.plane == "compute" and d.role == "leaf")
    path = folder / f"{leaf}.config_db.json"
    db = json.loads(path.read_text())
    assert db["SWITCH_HASH"] == {
        "GLOBAL": {"ecmp_hash": ["SRC_IP", "DST_IP", "IP_PROTOCOL", "L4_SRC_PORT", "L4_DST_PORT"]}
    }
    assert [f for f in verify(plan, folder, vendor_judges=False).findings if f.check == "load-balancing"] == []
    db["SWITCH_HASH"]["GLOBAL"]["ecmp_hash"] = ["SRC_IP", "DST_IP"]  # addresses only: every QP on one path
    path.write_text(json.dumps(db, indent=4))
    found = [f for f in verify(plan, folder, vendor_judges=False).findings if f.check == "load-balancing"]
    assert [(f.device, f.found) for f in found] == [(leaf, "src-ip, dst-ip")]


# -- EOS and NX-OS: the queue-pair hash on SAND switches, the L4 hash on Nexus ------------------------------

SAND = "7280CR3-32P4"


def _eos_compute(model: str, release: str | None = None, balancing: str = "ecmp") -> dict:
    doc = one_platform("eos")
    plane = doc["planes"]["compute"]
    plane["load_balancing"] = balancing
    for role in plane["switches"].values():
        role["model"] = model
    if release is not None:
        doc["platforms"] = {"eos": {"release": release}}
    return doc


def test_eos_sand_switches_hash_roce_on_the_destination_queue_pair_as_pyavd_renders_it():
    plan = plan_doc(_eos_compute(SAND), "all-eos-sand")
    index = LinkIndex(plan)
    checked = 0
    for device in plan.devices():
        if device.plane != "compute":
            continue
        ctx = build(plan, device, index)
        assert platform("eos").load_balancing(ctx).hash_fields == ("bth-dest-qp",)
        ours = render_context(ctx)[f"{device.name}.cfg"]
        assert "      fields udp dst-port 4791\n         payload bytes 5-7\n" in ours
        sc = avd.structured_config(ctx)
        assert sc["load_balance"]["policies"]["sand_profiles"] == [
            {"name": "ROCE", "fields": {"udp": {"dst_port": 4791, "payload_bytes": "5-7"}}}
        ]
        result = avd.render(sc)
        assert result.violations == []
        assert avd.compare(ours, result.text) == []
        # Another byte range in our text and pyavd's part: the comparison reads the profile.
        assert avd.compare(ours.replace("payload bytes 5-7", "payload bytes 4-7"), result.text)
        checked += 1
    assert checked


def test_pyavd_s_schema_refuses_a_port_beyond_udp():
    plan = plan_doc(_eos_compute(SAND), "all-eos-sand")
    device = next(d for d in plan.devices() if d.plane == "compute")
    sc = avd.structured_config(build(plan, device, LinkIndex(plan)))
    sc["load_balance"]["policies"]["sand_profiles"][0]["fields"]["udp"]["dst_port"] = 70000
    assert any("dst_port" in v for v in avd.render(sc).violations)


STRATA = "7060X5-64S"
UDF = "port-channel load-balance trident udf eth-type IPv4 ip-protocol udp header outer l4 offset {} mask 0xff\n"


def test_eos_strata_switches_hash_roce_on_the_destination_queue_pair_as_pyavd_renders_it():
    """A Strata (Tomahawk) compute plane on `ecmp`: the destination QP's three bytes, outer-L4 offsets 13-15
    of IPv4 UDP (8 bytes of UDP header, then the BTH's bytes 5-7), one user-defined hash field each, as
    AVD's port_channel.load_balance_trident_udf renders them; no sand profile."""
    plan = plan_doc(_eos_compute(STRATA), "all-eos-strata")
    index = LinkIndex(plan)
    checked = 0
    for device in plan.devices():
        if device.plane != "compute":
            continue
        ctx = build(plan, device, index)
        assert platform("eos").load_balancing(ctx).hash_fields == ("bth-dest-qp",)
        ours = render_context(ctx)[f"{device.name}.cfg"]
        assert all(UDF.format(o) in ours for o in (13, 14, 15))
        assert "load-balance sand profile" not in ours
        sc = avd.structured_config(ctx)
        assert sc["port_channel"]["load_balance_trident_udf"] == [
            {"eth_type": "ipv4", "ip_protocol": "udp", "header": "outer_l4", "offset": o, "mask": "0xff"}
            for o in (13, 14, 15)
        ]
        assert "load_balance" not in sc
        result = avd.render(sc)
        assert result.violations == []
        assert avd.compare(ours, result.text) == []
        # Another byte in our text and pyavd's part: the comparison reads each field.
        shifted = ours.replace(UDF.format(15), UDF.format(16))
        assert set(avd.compare(shifted, result.text)) == {
            f"only gpufabric: {UDF.format(16).strip()}",
            f"only pyavd: {UDF.format(15).strip()}",
        }
        checked += 1
    assert checked


def test_pyavd_s_schema_refuses_an_offset_beyond_its_range():
    plan = plan_doc(_eos_compute(STRATA), "all-eos-strata")
    device = next(d for d in plan.devices() if d.plane == "compute")
    sc = avd.structured_config(build(plan, device, LinkIndex(plan)))
    sc["port_channel"]["load_balance_trident_udf"][0]["offset"] = 65
    assert any("offset" in v for v in avd.render(sc).violations)


def test_eos_strata_switches_of_other_roce_planes_hash_by_queue_pair_too():
    """The multi-vendor example's EOS storage plane (7060X5, Strata) carries RoCE: the same user-defined
    fields, no sand profile (that is SAND's)."""
    plan = plan_doc(yaml.safe_load((INVENTORY / "examples" / "multi-vendor.yml").read_text()), "mv")
    files = _files(plan, "storage")
    assert files
    for name, f in files.items():
        text = f[f"{name}.cfg"]
        assert all(UDF.format(o) in text for o in (13, 14, 15)), name
        assert "load-balance sand profile" not in text, name


@pytest.mark.parametrize(
    ("model", "release", "words"),
    [("7170-64C", None, "neither a Strata"), (SAND, "4.32", "EOS 4.32 has no UDP payload hash")],
)
def test_an_eos_compute_plane_without_a_provable_hash_is_refused_at_the_model(model, release, words):
    text = yaml.safe_dump(_eos_compute(model, release), sort_keys=False)
    with pytest.raises(IntentError) as info:
        load_intent_text(text, "fabric.yml")
    found = [p for p in info.value.problems if p.path[:2] == ("planes", "compute") and p.path[-1] == "model"]
    assert {p.path[3] for p in found} >= {"leaf", "spine"}
    assert all(words in p.message for p in found)
    assert all(info.value.line_of(p.path) is not None for p in found)
    # Dynamic load balancing is the way out on other hardware, a release with the hash on SAND.
    load_intent_text(yaml.safe_dump(_eos_compute(model, release, "adaptive"), sort_keys=False), "fabric.yml")
    if release is not None:
        load_intent_text(yaml.safe_dump(_eos_compute(model, "4.33"), sort_keys=False), "fabric.yml")


def test_nxos_roce_planes_hash_over_addresses_and_l4_ports():
    plan = plan_doc(one_platform("nxos"), "all-nxos")
    line = "\nip load-sharing address source-destination port source-destination\n"
    for plane in ("compute", "storage"):  # the planes that carry RoCE
        files = _files(plan, plane)
        assert files
        for name, f in files.items():
            assert line in f[f"{name}.cfg"], name
    for name, f in _files(plan, "business").items():  # no RoCE: the switch's default
        assert "ip load-sharing" not in f[f"{name}.cfg"], name


# -- reading the EOS and NX-OS hashes back: verify on the rendered file, validate on a running config --------

SAND_LINE = "         payload bytes 5-7\n"
NXOS_LINE = "ip load-sharing address source-destination port source-destination\n"


@pytest.fixture(scope="module")
def hashed(tmp_path_factory):
    out = {}
    for name, plan in (
        ("eos", plan_doc(_eos_compute(SAND), "all-eos-sand")),
        ("eos-strata", plan_doc(_eos_compute(STRATA), "all-eos-strata")),
        ("nxos", plan_doc(one_platform("nxos"), "all-nxos")),
    ):
        folder = tmp_path_factory.mktemp(name)
        render_into(plan, folder)
        out[name] = (plan, folder)
    return out


@pytest.mark.parametrize("which", ["eos", "eos-strata", "nxos"])
def test_the_rendered_hash_verifies_clean(hashed, which):
    plan, folder = hashed[which]
    assert [f for f in verify(plan, folder, vendor_judges=False).findings if f.check == "load-balancing"] == []


@pytest.mark.parametrize(
    ("which", "old", "new", "found"),
    [
        ("eos", SAND_LINE, "         payload bytes 0-3\n", "the platform's default"),
        ("eos", "port-channel load-balance sand profile ROCE\n", "", "the platform's default"),
        ("eos-strata", UDF.format(14), UDF.format(14).replace("0xff", "0x0f"), "the platform's default"),
        ("eos-strata", UDF.format(15), "", "the platform's default"),
        ("nxos", NXOS_LINE, "ip load-sharing address source-destination\n", "the platform's default"),
    ],
    ids=["eos-bytes", "eos-unapplied", "eos-strata-half-byte", "eos-strata-byte-missing", "nxos-addresses-only"],
)
def test_a_hash_changed_in_the_file_is_found_at_its_line(hashed, tmp_path, which, old, new, found):
    plan, folder = hashed[which]
    device = "cmp-spine1"
    copy = tmp_path / which
    shutil.copytree(folder, copy)
    path = copy / f"{device}.cfg"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    findings = [f for f in verify(plan, copy, vendor_judges=False).findings if f.check == "load-balancing"]
    assert [(f.device, f.found) for f in findings] == [(device, found)]
    assert findings[0].file == f"{device}.cfg" and findings[0].line >= 1


@pytest.mark.parametrize(
    ("which", "old", "new"), [("eos", SAND_LINE, ""), ("eos-strata", UDF.format(13), ""), ("nxos", NXOS_LINE, "")]
)
def test_validate_reads_the_hash_from_a_running_config(hashed, which, old, new):
    plan, folder = hashed[which]
    p = planned(plan, LinkIndex(plan), ["cmp-spine1"], "compute")["cmp-spine1"]
    assert p.expect.balancing.hash_fields and p.reads_running
    running = (folder / "cmp-spine1.cfg").read_text()
    hashing = _balancing(p, running, "ECMP hash fields")
    assert [r.ok for r in hashing] == [True]
    hashing = _balancing(p, running.replace(old, new, 1), "ECMP hash fields")
    assert [r.ok for r in hashing] == [False]
