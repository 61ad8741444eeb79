"""What a push loads onto a drained switch (Platform.keep_drain), judged by the vendor's own model.

Cumulus: the planned NVUE document with the maintenance unit kept enabled, judged by NVIDIA's object model of
every pinned release (nvueschema): from 5.13 the merged document is accepted and holds the unit, the rest of
it untouched; before 5.13 (the maintenance action, no configuration) the document is left as it is.
"""

from __future__ import annotations

import pytest
import yaml

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.nos.cumulus import judge as nvue
from gpufabric.nos.cumulus.drain import maintenance_units
from gpufabric.platforms import platform
from gpufabric.platforms.spec import DrainSpec
from tests.conftest import INVENTORY, plan_doc

RELEASES = platform("cumulus").facts.releases
ENDS = {RELEASES[0], "5.12", "5.13", "5.15", RELEASES[-1]}


def _leaf(release: str) -> str:
    doc = yaml.safe_load((INVENTORY / "examples" / "multi-vendor.yml").read_text())
    doc["platforms"] = {**(doc.get("platforms") or {}), "cumulus": {"release": release}}
    plan = plan_doc(doc, "multi-vendor.yml")
    leaf = next(d for d in plan.devices() if d.platform == "cumulus" and d.role == "leaf")
    return render_device(plan, leaf, LinkIndex(plan)).files[f"{leaf.name}.yaml"]


@pytest.mark.parametrize("release", [pytest.param(r, marks=() if r in ENDS else pytest.mark.slow) for r in RELEASES])
def test_a_drained_cumulus_switch_s_candidate_keeps_its_unit_in_nvidias_model(release: str) -> None:
    planned = _leaf(release)
    kept = platform("cumulus").keep_drain(planned, DrainSpec(release))
    assert nvue.check(nvue.set_tree(kept), release) == []
    if not maintenance_units(release):
        assert kept == planned  # the action is no configuration: nothing to keep in the document
        return
    tree, before = nvue.set_tree(kept), nvue.set_tree(planned)
    assert tree.pop("maintenance") == {"unit": {"all-protocols": {"mode": "enabled"}}}
    assert tree == before  # nothing else of the plan changes
    assert platform("cumulus").keep_drain(kept, DrainSpec(release)) == kept  # kept once, whoever asks again
    broken = kept.replace("mode: enabled", "mode: on")
    assert nvue.check(nvue.set_tree(broken), release), "the model must refuse a wrong mode"


def test_a_candidate_that_sets_maintenance_itself_is_refused() -> None:
    planned = _leaf("5.14")
    other = planned.replace(
        "- set:\n", "- set:\n    maintenance:\n      unit:\n        all-protocols:\n          mode: disabled\n", 1
    )
    with pytest.raises(ValueError, match="configures NVUE maintenance itself"):
        platform("cumulus").keep_drain(other, DrainSpec("5.14"))


def test_a_drained_sonic_switch_s_config_db_passes_sonic_s_own_yang_models() -> None:
    """SONiC: the rendered config_db.json with TSA's row kept, parsed strictly by libyang against SONiC's
    models (sonic-bgp-device-global.yang holds `BGP_DEVICE_GLOBAL/STATE/tsa_enabled`); a wrong value fails."""
    import json
    import os

    from gpufabric.nos.sonic.candidate import split
    from gpufabric.nos.sonic.yang import ConfigDbError, validate
    from tests.conftest import SONIC_YANG

    try:
        import libyang  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("CI must have the libyang Python binding: scripts/test.sh installs it")
        pytest.skip("not installed: the libyang Python binding")
    if not (SONIC_YANG / "sonic-bgp-device-global.yang").is_file():
        pytest.skip(f"SONiC's YANG models are not in {SONIC_YANG}")
    plan = plan_doc(yaml.safe_load((INVENTORY / "examples" / "sonic.yml").read_text()), "sonic.yml")
    index = LinkIndex(plan)
    device = next(d for d in plan.devices() if d.platform == "sonic" and d.role == "spine")
    files = render_device(plan, device, index).files
    sonic = platform("sonic")
    kept = sonic.keep_drain(sonic.candidate(device.name, files), DrainSpec("202411"))
    doc = json.loads(split(kept)[0])
    assert doc["BGP_DEVICE_GLOBAL"] == {"STATE": {"tsa_enabled": "true"}}
    validate(SONIC_YANG, doc)
    doc["BGP_DEVICE_GLOBAL"]["STATE"]["tsa_enabled"] = "yes"
    with pytest.raises(ConfigDbError):
        validate(SONIC_YANG, doc)


def test_a_drained_eos_switch_s_candidate_keeps_the_block_avd_renders() -> None:
    """EOS: the rendered configuration with the drain kept holds the `maintenance` block Arista's AVD renders
    for `maintenance.units[{name: System, quiesce: true}]`, and every other block as planned."""
    from gpufabric.nos.eos import judge as avd

    plan = plan_doc(yaml.safe_load((INVENTORY / "examples" / "multi-vendor.yml").read_text()), "multi-vendor.yml")
    device = next(d for d in plan.devices() if d.platform == "eos")
    eos = platform("eos")
    planned = eos.candidate(device.name, render_device(plan, device, LinkIndex(plan)).files)
    kept = eos.keep_drain(planned, DrainSpec("4.32"))
    rendered = avd.render({"hostname": device.name, "maintenance": {"units": [{"name": "System", "quiesce": True}]}})
    assert rendered.violations == []
    ours, before = avd.blocks(kept), avd.blocks(planned)
    assert ours.pop("maintenance") == avd.blocks(rendered.text)["maintenance"]
    assert ours == before
    assert eos.keep_drain(kept, DrainSpec("4.32")) == kept
    with pytest.raises(ValueError, match="configures EOS maintenance itself"):
        eos.keep_drain(kept.replace("      quiesce", "      no quiesce"), DrainSpec("4.32"))
