"""NVIDIA SHARP: sharp_am.cfg and NVIDIA OpenSM's option from the plan's trees and the discovered GUIDs.

What ibsim and the open-source OpenSM can show is shown here: the rest of the subnet manager's
configuration still loads in the real OpenSM 3.3.23 when SHARP is on (every option read back, none
refused), and the SHARP option is exactly what that OpenSM refuses, which is why it has a file of its own.
No aggregation tree can be shown: that needs Quantum switches and NVIDIA's sharp_am.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import INVENTORY, run

from gpufabric.ib import discovery, hardware, opensm, sharp, topology
from gpufabric.ib.design import IbDesign
from gpufabric.ib.errors import IbError
from gpufabric.ib.planner import plan_fabric
from gpufabric.intent import IntentError
from gpufabric.intent.loader import load_intent_text
from gpufabric.plan import build_plan

RECORDED = Path(__file__).parents[1] / "recorded" / "ib" / "mini.ibnetdiscover"
MINI = IbDesign("mini", su_count=2, nodes_per_su=4, rails=2, fabric_manager_ports=2, fabric_manager_ports_per_host=1)
DIR = Path("/srv/sm")
H100 = INVENTORY / "examples" / "superpod-ib.yml"


def _conf(text: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in text.splitlines() if line and not line.startswith("#"))


@pytest.fixture(scope="module")
def mini() -> tuple[Any, discovery.Discovery]:
    fabric = plan_fabric(MINI)
    return fabric, discovery.discover(fabric, topology.parse(RECORDED.read_text()))


def test_sharp_am_binds_to_the_sm_port_and_roots_its_trees_at_the_top_tier(mini: Any) -> None:
    fabric, found = mini
    files = opensm.render(fabric, found, opensm.SmSettings(sharp=True), DIR)
    am = _conf(files["sharp_am.cfg"])
    # The port sharp_am sends MADs from: the primary SM's, as ibnetdiscover found it on the simulated fabric.
    assert am["ib_port_guid"] == f"0x{found.nodes[fabric.sm.primary].port:016x}"
    assert fabric.sm.primary.startswith("ufm1 ")
    # The trees' roots: the same file OpenSM's up/down roots at, holding exactly the spines' node GUIDs.
    assert am["root_guids_file"] == "/srv/sm/root-guids.conf"
    spines = {found.nodes[n.name].node for n in fabric.role("spine")}
    assert {int(g, 16) for g in files["root-guids.conf"].split()} == spines and len(spines) == len(fabric.roots)
    # The SMs run on the fabric manager: its ports are nobody's leaves, listed by port GUID.
    assert am["ignore_sm_guids"] == "TRUE"
    assert am["ignore_host_guids_file"] == "/srv/sm/sharp-ignore-host-guids.conf"
    fm = [found.nodes[n.name].port for n in fabric.role("fabric-manager")]
    assert [int(g, 16) for g in files["sharp-ignore-host-guids.conf"].split()] == fm and len(fm) == 2
    compute = {found.nodes[n.name].port for n in fabric.role("compute")}
    assert not compute & set(fm)
    # NVIDIA OpenSM's option, in its own file; opensm.conf has nothing of SHARP.
    assert _conf(files["opensm-sharp.conf"]) == {"sharp_enabled": "2"}
    assert "sharp" not in files["opensm.conf"]


def test_the_standby_sms_aggregation_manager_binds_to_the_standby_port(mini: Any) -> None:
    fabric, found = mini
    files = opensm.render(fabric, found, opensm.SmSettings(sharp=True), DIR, role="standby")
    assert fabric.sm.standby is not None
    assert _conf(files["sharp_am.cfg"])["ib_port_guid"] == f"0x{found.nodes[fabric.sm.standby].port:016x}"


def test_without_sharp_no_sharp_file_is_written(mini: Any) -> None:
    fabric, found = mini
    plain = opensm.render(fabric, found, opensm.SmSettings(), DIR)
    assert not {"sharp_am.cfg", "opensm-sharp.conf", "sharp-ignore-host-guids.conf"} & plain.keys()
    with_sharp = opensm.render(fabric, found, opensm.SmSettings(sharp=True), DIR)
    # SHARP adds files and changes none of OpenSM's own.
    assert {k: with_sharp[k] for k in plain} == plain


def test_sms_on_compute_hosts_keep_their_adapters_in_the_trees() -> None:
    """Without fabric-manager ports the SMs run on compute hosts: sharp_am must not drop their adapters from the
    trees (NVIDIA SHARP Known Issues 3340353: only ignore_sm_guids FALSE keeps them)."""
    design = dataclasses.replace(MINI, fabric_manager_ports=0)
    fabric = plan_fabric(design)
    found = discovery.Discovery(
        "mini", {n.name: discovery.Guids(0x1000 + i, 0x2000 + i) for i, n in enumerate(fabric.nodes)}
    )
    files = sharp.render(fabric, found, DIR, fabric.sm.primary)
    am = _conf(files["sharp_am.cfg"])
    assert fabric.sm.primary.startswith("dgx001 ")
    assert am["ignore_sm_guids"] == "FALSE"
    assert "ignore_host_guids_file" not in am and "sharp-ignore-host-guids.conf" not in files
    assert am["ib_port_guid"] == f"0x{found.nodes[fabric.sm.primary].port:016x}"


def _without_sharp(monkeypatch: pytest.MonkeyPatch) -> None:
    """The QM9700 as if its ASIC had no SHARP (both models gpufabric knows have it)."""
    qm9700 = hardware.SWITCH_MODELS["QM9700"]
    monkeypatch.setitem(hardware.SWITCH_MODELS, "QM9700", dataclasses.replace(qm9700, sharp=""))


def test_a_switch_without_sharp_is_refused_by_name(mini: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fabric, found = mini
    _without_sharp(monkeypatch)
    with pytest.raises(IbError) as caught:
        opensm.render(fabric, found, opensm.SmSettings(sharp=True), DIR)
    problem = caught.value.problems[0]
    assert problem.where == "design.switch_model"
    assert "QM9700 switches have no SHARP aggregation" in problem.message and "QM8700 (SHARPv2)" in problem.fix
    # Without SHARP the same fabric renders.
    assert "opensm.conf" in opensm.render(fabric, found, opensm.SmSettings(), DIR)


def _h100(**compute: Any) -> dict[str, Any]:
    doc = yaml.safe_load(H100.read_text())
    doc["planes"]["compute"].update(compute)
    return doc


def test_the_intent_turns_sharp_on_and_a_model_without_it_is_refused_at_its_field(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plan = build_plan(load_intent_text(yaml.safe_dump(_h100(sharp=True), sort_keys=False), "ib.yml"))
    assert plan.infiniband is not None and plan.infiniband.settings.sharp is True
    off = build_plan(load_intent_text(yaml.safe_dump(_h100(sharp=False), sort_keys=False), "ib.yml"))
    assert off.infiniband is not None and off.infiniband.settings.sharp is False
    _without_sharp(monkeypatch)
    with pytest.raises(IntentError) as caught:
        build_plan(load_intent_text(yaml.safe_dump(_h100(sharp=True), sort_keys=False), "ib.yml"))
    (problem,) = caught.value.problems
    assert problem.field == "planes.compute.switch_model" and "no SHARP aggregation" in problem.message
    assert caught.value.line_of(problem.path) is not None


def test_sharp_on_an_ethernet_plane_is_refused_with_line_field_and_why(tmp_path: Path) -> None:
    doc = yaml.safe_load((INVENTORY / "fabric.yml").read_text())
    doc["planes"]["compute"]["sharp"] = True
    path = tmp_path / "fabric.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = run("gpufabric", "check", str(path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "planes.compute.sharp: 'sharp' is InfiniBand's in-network reduction" in done.stderr, done.stderr
    assert "transport: infiniband" in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.split(f"{path}:")[1].split(":")[0].isdigit()


def test_ib_configs_writes_the_sharp_files_from_the_intent(tmp_path: Path, mini: Any) -> None:
    doc = _h100(sharp=True)
    path = tmp_path / "ib.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    plan = build_plan(load_intent_text(path.read_text(), str(path)))
    assert plan.infiniband is not None
    fabric = plan.infiniband.fabric
    found = discovery.Discovery(
        fabric.design.name, {n.name: discovery.Guids(0x10000 + i, 0x20000 + i) for i, n in enumerate(fabric.nodes)}
    )
    disc = tmp_path / "discovery.json"
    disc.write_text(found.dumps())
    out = tmp_path / "sm"
    done = run("gpufabric", "ib", "configs", str(path), "--discovery", str(disc), "-o", str(out))
    assert done.returncode == 0, done.stderr
    am = _conf((out / "sharp_am.cfg").read_text())
    assert am["ib_port_guid"] == f"0x{found.nodes[fabric.sm.primary].port:016x}"
    assert am["root_guids_file"] == f"{out.absolute()}/root-guids.conf"
    assert (out / "opensm-sharp.conf").read_text().splitlines()[-1] == "sharp_enabled 2"


def _opensm() -> str:
    found = shutil.which("opensm") or ("/usr/sbin/opensm" if Path("/usr/sbin/opensm").exists() else None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("opensm is missing; scripts/test.sh installs it")
        pytest.skip("OpenSM is not installed (apt-get install opensm)")
    return found


def _load(conf: Path, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """OpenSM 3.3.23 reads `conf` and writes back the whole configuration it took (-c), then exits."""
    out = tmp_path / f"{conf.stem}.out"
    done = subprocess.run(
        [_opensm(), "-F", str(conf), "-c", str(out), "-f", str(tmp_path / "opensm.log")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr, _conf(out.read_text())


def test_the_real_opensm_loads_every_option_with_sharp_on_and_refuses_only_the_sharp_fragment(
    tmp_path: Path, mini: Any
) -> None:
    fabric, found = mini
    files = opensm.render(fabric, found, opensm.SmSettings(sharp=True), tmp_path)
    opensm.write(files, tmp_path)
    said, took = _load(tmp_path / "opensm.conf", tmp_path)
    assert "Unrecognized token" not in said, said
    ours = _conf(files["opensm.conf"])
    assert {key: took.get(key) for key in ours} == ours  # written back as taken: every value, none dropped
    assert "Loading Cached Option:routing_engine = updn" in said  # (it says so of each value off its default)
    # The fragment is NVIDIA OpenSM's: this one names its token as unknown (and would ignore it).
    said, took = _load(tmp_path / "opensm-sharp.conf", tmp_path)
    assert 'Unrecognized token: "sharp_enabled"' in said
    assert "sharp_enabled" not in took
    # Appended to opensm.conf (as NVIDIA's OpenSM takes it), everything else still loads here.
    both = tmp_path / "both.conf"
    both.write_text(files["opensm.conf"] + files["opensm-sharp.conf"])
    said, took = _load(both, tmp_path)
    assert said.count("Unrecognized token") == 1
    assert all(took[key] == value for key, value in ours.items())
