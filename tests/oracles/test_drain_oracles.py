"""Each platform's drain, judged by its vendor's own model where one exists.

Cumulus: the `nv set maintenance unit ...` commands as NVUE document trees, judged by NVIDIA's object
model of each release (nvueschema): accepted from 5.13, refused by 5.12 (which has the maintenance
action instead). EOS: Arista's AVD renders the same `maintenance` block from `maintenance.units[]`.
NX-OS: Cisco's own Ansible module for GIR (cisco.nxos nxos_gir) sends the same commands. FRR: FRR's
own parser (`vtysh -C`) reads a rendered spine with the drain, and with the drain then the undrain.
SONiC: TSC's status words as sonic-mgmt reads them here; SONiC's own TSA, TSB and TSC scripts run in
test_sonic_tsa.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from types import SimpleNamespace

import pytest

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.nos.cumulus import judge as nvue
from gpufabric.nos.cumulus.dialect import RELEASES
from gpufabric.nos.cumulus.drain import maintenance_units, set_tree
from gpufabric.nos.eos import judge as avd
from gpufabric.nos.eos.drain import quiesced
from gpufabric.nos.nxos.drain import in_maintenance
from gpufabric.nos.sonic.drain import in_maintenance as tsc_maintenance
from gpufabric.platforms import platform
from gpufabric.platforms.spec import DRAIN_POLICY, DRAIN_PREPEND, DrainSpec
from tests.conftest import INVENTORY, example_plan


def _nv_sets(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("nv set ")]


@pytest.mark.parametrize("release", RELEASES)
def test_cumulus_drain_is_the_release_s_own_mechanism(release):
    steps = platform("cumulus").drain_steps(DrainSpec(release))
    if maintenance_units(release):
        assert steps.mechanism == "maintenance unit all-protocols"
        sets = _nv_sets(steps.drain) + _nv_sets(steps.undrain)
        assert sets == [
            "nv set maintenance unit all-protocols mode enabled",
            "nv set maintenance unit all-protocols mode disabled",
        ]
        for command in sets:  # NVIDIA's model of this very release accepts each command's tree
            assert nvue.check(set_tree(command), release) == [], command
    else:
        assert steps.drain == "nv action enable system maintenance mode\n"
        assert steps.undrain == "nv action disable system maintenance mode\n"


@pytest.mark.slow  # NVIDIA's model built for three releases: seconds; in the whole suite
def test_the_maintenance_unit_is_refused_before_5_13_and_a_wrong_value_is_caught():
    tree = set_tree("nv set maintenance unit all-protocols mode enabled")
    assert nvue.check(tree, "5.13") == []
    for old in ("5.11", "5.12"):
        found = nvue.check(tree, old)
        assert found and any("maintenance" in f.path for f in found), (old, found)
    wrong = set_tree("nv set maintenance unit all-protocols mode on")
    assert nvue.check(wrong, "5.14"), "the model must refuse `mode on`"


def test_eos_drain_is_what_avd_renders_for_a_quiesced_unit():
    steps = platform("eos").drain_steps(DrainSpec("4.32"))
    for quiesce, ours in ((True, steps.drain), (False, steps.undrain)):
        result = avd.render({"hostname": "x", "maintenance": {"units": [{"name": "System", "quiesce": quiesce}]}})
        assert result.violations == []
        assert avd.blocks(ours)["maintenance"] == avd.blocks(result.text)["maintenance"], result.text
        assert quiesced(ours) is quiesce
    broken = avd.render({"hostname": "x", "maintenance": {"units": [{"name": "System", "quiesce": "yes"}]}})
    assert broken.violations  # AVD's schema holds the unit's fields to their types


@pytest.mark.parametrize(("drain", "mode"), [(True, "normal"), (False, "maintenance")])
def test_nxos_gir_commands_are_cisco_s_own(drain, mode):
    from ansible_collections.cisco.nxos.plugins.modules import nxos_gir

    params = dict.fromkeys(
        (
            "system_mode_maintenance_dont_generate_profile",
            "system_mode_maintenance_timeout",
            "system_mode_maintenance_shutdown",
            "system_mode_maintenance_on_reload_reset_reason",
        )
    )
    module = SimpleNamespace(params={**params, "system_mode_maintenance": drain})
    cisco = nxos_gir.get_commands(module, "present", mode)
    steps = platform("nxos").drain_steps(DrainSpec("10.4"))
    assert (steps.drain if drain else steps.undrain).splitlines() == cisco
    assert in_maintenance("System Mode: Maintenance\n") and not in_maintenance("System Mode: Normal\n")


def test_sonic_drain_is_tsa_and_tsc_is_read_as_sonic_mgmt_reads_it():
    steps = platform("sonic").drain_steps(DrainSpec("202411"))
    assert steps.drain.splitlines()[0] == "TSA" and steps.undrain.splitlines()[0] == "TSB"
    assert tsc_maintenance("System Mode: Maintenance") is True
    assert tsc_maintenance("System Mode: Normal") is False
    assert tsc_maintenance("System Mode: Not consistent") is None


def _spine() -> tuple[str, int, tuple[str, ...]]:
    plan = example_plan(INVENTORY / "fabric.yml")
    spine = next(d for d in plan.devices() if d.role == "spine" and d.platform == "frr")
    text = render_device(plan, spine, LinkIndex(plan)).files[f"{spine.name}.frr.conf"]
    neighbors = tuple(re.findall(r"^ neighbor (\S+) interface remote-as", text, re.MULTILINE))
    assert spine.asn is not None and neighbors
    return text, spine.asn, neighbors


def _vtysh_check(tmp_path, text: str) -> subprocess.CompletedProcess[str]:
    f = tmp_path / "candidate.frr.conf"
    f.write_text(text)
    return subprocess.run(["vtysh", "-C", "-f", str(f)], capture_output=True, text=True, check=False)


@pytest.mark.skipif(shutil.which("vtysh") is None, reason="vtysh (frr) is not installed")
def test_frr_drain_and_undrain_pass_frr_s_own_parser(tmp_path):
    text, asn, neighbors = _spine()
    steps = platform("frr").drain_steps(DrainSpec("", asn, neighbors))
    assert f"set as-path prepend {' '.join([str(asn)] * DRAIN_PREPEND)}" in steps.drain
    assert all(f"neighbor {n} route-map {DRAIN_POLICY} out" in steps.drain for n in neighbors)
    body = text.replace("\nend\n", "\n")
    for candidate in (body + steps.drain, body + steps.drain + steps.undrain):
        done = _vtysh_check(tmp_path, candidate)
        assert done.returncode == 0, done.stdout + done.stderr
    planted = body + steps.drain.replace("set as-path prepend", "set as-path prepnd")
    assert _vtysh_check(tmp_path, planted).returncode != 0


def test_frr_drain_refuses_a_neighbour_name_that_is_not_one():
    with pytest.raises(ValueError, match="not an interface name"):
        platform("frr").drain_steps(DrainSpec("", 65000, ("swp1\nno router bgp 65000",)))
    with pytest.raises(ValueError, match="ASN"):
        platform("frr").drain_steps(DrainSpec("", None, ("swp1",)))
