"""Lossless headroom: a data plane's `cable_length` class reaches the switches that size PFC headroom from
it (Cumulus `qos pfc ... cable-length`, SONiC's dynamic buffer model `CABLE_LENGTH`), each held to its
vendor's model."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.render import render_context
from gpufabric.intent import IntentError, load_intent_text
from gpufabric.nos.cumulus import judge as nvue
from gpufabric.plan.model import Plan
from tests.conftest import INVENTORY, SONIC_YANG, plan_doc, set_path

SUPERPOD = INVENTORY / "examples" / "superpod-1su.yml"
SONIC = INVENTORY / "examples" / "sonic.yml"


def _plan(path, length: str | None = None, release: str | None = None) -> Plan:
    doc = yaml.safe_load(path.read_text())
    if length is not None:
        doc = set_path(doc, ("planes", "compute", "cable_length"), length)
    else:  # the default class (5m): the example's own class and the lengths that need it left out
        for key in ("cable_length", "lengths"):
            doc["planes"]["compute"].pop(key, None)
    if release is not None:
        doc["platforms"] = {"cumulus": {"release": release}}
    return plan_doc(doc, path.name)


def _compute_files(plan: Plan) -> dict[str, dict[str, str]]:
    index = LinkIndex(plan)
    return {d.name: render_context(build(plan, d, index)) for d in plan.devices() if d.plane == "compute"}


# NVIDIA's model takes seconds per release: the fast tier keeps three of the cases.
@pytest.mark.parametrize(
    ("release", "length", "metres"),
    [
        pytest.param("5.14", None, 5, marks=pytest.mark.slow),
        pytest.param("5.14", "30m", 30, marks=pytest.mark.slow),
        ("5.14", "100m", 100),
        pytest.param("5.15", None, 5, marks=pytest.mark.slow),
        ("5.15", "30m", 30),
        ("5.15", "100m", 100),
    ],
)
def test_cumulus_pfc_carries_the_cable_length_nvidias_model_accepts(length, metres, release):
    plan = _plan(SUPERPOD, length, release)
    for name, files in _compute_files(plan).items():
        tree = nvue.set_tree(files[f"{name}.yaml"])
        assert tree["qos"]["pfc"]["default-global"]["cable-length"] == metres
        assert nvue.check(tree, release) == [], name


def test_nvidias_model_refuses_a_cable_length_out_of_its_range():
    tree = nvue.set_tree(_compute_files(_plan(SUPERPOD))["cmp-su1-leaf1"]["cmp-su1-leaf1.yaml"])
    tree["qos"]["pfc"]["default-global"]["cable-length"] = 0
    assert any("cable-length" in f.path for f in nvue.check(tree, "5.14"))


def _yang_pattern() -> re.Pattern[str]:
    """The `length` leaf's pattern in SONiC's own YANG model of CABLE_LENGTH (YANG patterns are anchored)."""
    path = SONIC_YANG / "sonic-cable-length.yang"
    if not path.is_file():
        pytest.skip(f"SONiC's YANG models are not in {SONIC_YANG}")
    text = path.read_text()
    leaf = text[text.index("leaf length") :]
    return re.compile(re.search(r"pattern '([^']+)'", leaf).group(1))


@pytest.mark.parametrize(("length", "written"), [(None, "5m"), ("100m", "100m")])
def test_sonic_cable_length_table_follows_the_plane(length, written):
    pattern = _yang_pattern()
    plan = _plan(SONIC, length)
    checked = 0
    for name, files in _compute_files(plan).items():
        db = json.loads(next(t for f, t in files.items() if f.endswith(".json")))
        if "CABLE_LENGTH" not in db:
            continue
        lengths = set(db["CABLE_LENGTH"]["AZURE"].values())
        assert lengths == {written}, name
        assert all(pattern.fullmatch(v) for v in lengths)
        checked += 1
    assert checked


def test_a_length_outside_the_classes_is_refused():
    doc = set_path(yaml.safe_load(SUPERPOD.read_text()), ("planes", "compute", "cable_length"), "50m")
    with pytest.raises(IntentError) as info:
        load_intent_text(yaml.safe_dump(doc, sort_keys=False), "superpod.yml")
    assert any(p.path[:3] == ("planes", "compute", "cable_length") for p in info.value.problems)


def test_verify_finds_a_cable_length_changed_in_a_rendered_file(tmp_path):
    from gpufabric.verify.runner import verify
    from tests.render_helpers import render_into

    plan = _plan(SUPERPOD, "30m", "5.14")
    render_into(plan, tmp_path)
    assert [f for f in verify(plan, tmp_path, vendor_judges=False).findings if f.check == "qos-cable-length"] == []
    target = tmp_path / "cmp-su1-leaf1.yaml"
    text = target.read_text()
    assert "cable-length: 30\n" in text
    target.write_text(text.replace("cable-length: 30\n", "cable-length: 5\n"))
    found = [f for f in verify(plan, tmp_path, vendor_judges=False).findings if f.check == "qos-cable-length"]
    assert [(f.device, f.file, f.found) for f in found] == [("cmp-su1-leaf1", "cmp-su1-leaf1.yaml", "5")]
    assert found[0].line > 1


def test_verify_finds_a_sonic_port_with_another_cable_length(tmp_path):
    from gpufabric.verify.runner import verify
    from tests.render_helpers import render_into

    plan = _plan(SONIC, "100m")
    files = render_into(plan, tmp_path)
    assert [f for f in verify(plan, tmp_path, vendor_judges=False).findings if f.check == "qos-cable-length"] == []
    name = next(n for n, t in files.items() if n.endswith(".json") and '"CABLE_LENGTH"' in t)
    target = tmp_path / name
    target.write_text(target.read_text().replace('"100m"', '"5m"', 1))
    found = [f for f in verify(plan, tmp_path, vendor_judges=False).findings if f.check == "qos-cable-length"]
    assert len(found) == 1 and found[0].found == "5" and found[0].file == name


def test_validate_reads_the_cable_length_from_a_running_cumulus_config(tmp_path):
    """`nornir validate` reads the NVUE running config (the same reader as `verify`): the plane's class passes,
    a switch left at another length fails."""
    from gpufabric.config.context import LinkIndex
    from gpufabric.validate.planned import planned
    from gpufabric.verify.running import checks
    from tests.render_helpers import render_into

    plan = _plan(SUPERPOD, "100m", "5.14")
    files = render_into(plan, tmp_path)
    p = planned(plan, LinkIndex(plan), ["cmp-su1-leaf1"], "compute")["cmp-su1-leaf1"]
    assert p.expect.buffers.cable_metres == 100 and p.expect.buffers.pause_buffer is None and p.reads_running
    running = files["cmp-su1-leaf1.yaml"]
    cable = [(r.ok, r.observed) for r in checks.config(p, running) if r.check == "qos-cable-length"]
    assert cable and set(cable) == {(True, "100")}
    planted = running.replace("cable-length: 100\n", "cable-length: 5\n")
    assert planted != running
    cable = [(r.ok, r.observed) for r in checks.config(p, planted) if r.check == "qos-cable-length"]
    assert set(cable) == {(False, "5")}
