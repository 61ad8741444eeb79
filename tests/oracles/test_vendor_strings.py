"""Vendor strings that rest on a document: each is one named constant in the code, with its document cited
beside it. Here a misspelling is planted in each (monkeypatch) and the test shows what catches it: a vendor's
model or code (NVIDIA's NVUE object model, Cisco's nxos_gir module, the official Kubernetes client's model of a
node and, where the tests are given SONiC's trees, sonic-utilities' sonic-installer and sonic-buildimage's
traffic-shift scripts), or a vendor's tool (Slurm's scontrol, whose parser refuses a wrong keyword or state
before it asks slurmctld anything). Where nothing here can catch it, the test shows that too (the model or tool
at hand takes the misspelling as it takes the right word), and docs/not-shown.md must list the constant under
"Vendor strings no model checks": only a switch, a subnet manager or a cluster of that vendor would tell. A
constant caught only where a SONiC tree is given stays listed, its row saying so.

No test here compares a constant with a copy of its own literal: the judge is always someone else's code.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpufabric.nos.cumulus import drain as cumulus_drain
from gpufabric.nos.eos import drain as eos_drain
from gpufabric.nos.nxos import drain as nxos_drain
from gpufabric.nos.sonic import drain as sonic_drain
from gpufabric.nos.sonic import upgrade as sonic_upgrade
from gpufabric.platforms import platform
from gpufabric.platforms.spec import DrainSpec
from gpufabric.scheduler import kubernetes, slurm
from gpufabric.scheduler.model import Mark, SchedulerError
from tests.conftest import ROOT

NOT_SHOWN = ROOT / "docs" / "not-shown.md"
SECTION = "## Vendor strings no model checks"


def _listed() -> str:
    text = NOT_SHOWN.read_text()
    assert SECTION in text, f"{NOT_SHOWN} has no section {SECTION!r}"
    return text.split(SECTION, 1)[1].split("\n## ", 1)[0]


def _documented(module: object, name: str) -> None:
    """Nothing here catches this constant: docs/not-shown.md lists it by its module and name."""
    dotted = f"`{module.__name__}.{name}`"
    assert dotted in _listed(), f"{dotted} is checked by no model here: list it in {NOT_SHOWN} under {SECTION!r}"


# -- NVIDIA Cumulus Linux: NVUE's object model judges the unit's mode, not its name ---------------------------


def _nvue_verdicts(release: str) -> list[object]:
    from gpufabric.nos.cumulus import judge as nvue

    steps = platform("cumulus").drain_steps(DrainSpec(release))
    sets = [line for line in (steps.drain + steps.undrain).splitlines() if line.startswith("nv set ")]
    assert sets, steps
    return [f for command in sets for f in nvue.check(cumulus_drain.set_tree(command), release)]


def test_nvue_model_catches_a_misspelt_maintenance_mode(monkeypatch):
    pytest.importorskip("nvueschema", reason="NVIDIA's NVUE model (the vendor extra) is not installed")
    assert _nvue_verdicts("5.14") == []
    monkeypatch.setattr(cumulus_drain, "MODE_ENABLED", "enable")
    assert _nvue_verdicts("5.14"), "NVIDIA's model must refuse `mode enable`"
    monkeypatch.undo()
    monkeypatch.setattr(cumulus_drain, "MODE_DISABLED", "disable")
    assert _nvue_verdicts("5.14"), "NVIDIA's model must refuse `mode disable`"


def test_nvue_model_takes_any_maintenance_unit_name_so_only_the_document_pins_it(monkeypatch):
    pytest.importorskip("nvueschema", reason="NVIDIA's NVUE model (the vendor extra) is not installed")
    monkeypatch.setattr(cumulus_drain, "UNIT", "all-protocol")
    steps = platform("cumulus").drain_steps(DrainSpec("5.14"))
    assert "nv set maintenance unit all-protocol mode" in steps.drain  # the planted name reaches the switch
    assert _nvue_verdicts("5.14") == []  # and NVIDIA's model of the release takes it: units are a map by name
    _documented(cumulus_drain, "UNIT")


@pytest.mark.parametrize(
    ("name", "planted"),
    [
        ("ACTION_ENABLE", "nv action enable system maintenace mode"),
        ("ACTION_DISABLE", "nv action disable system maintenace mode"),
    ],
)
def test_the_maintenance_action_before_5_13_is_no_configuration_no_model_describes(monkeypatch, name, planted):
    monkeypatch.setattr(cumulus_drain, name, planted)
    steps = platform("cumulus").drain_steps(DrainSpec("5.12"))
    assert planted in steps.drain + steps.undrain  # an action is sent as written; NVUE's model has no actions
    _documented(cumulus_drain, name)


@pytest.mark.parametrize(
    ("name", "planted"), [("SHOW", "nv show maintenence"), ("SHOW_BEFORE_UNITS", "nv show system maintenence")]
)
def test_the_maintenance_show_commands_are_a_switch_s_to_refuse(monkeypatch, name, planted):
    """A show command is no configuration either; only a switch would answer a misspelt one with an error."""
    from gpufabric.nos.cumulus import driver

    monkeypatch.setattr(cumulus_drain, name, planted)
    asked: dict[str, str] = {}

    def read_many(_transport: object, commands: dict[str, str]) -> dict[str, str]:
        asked.update(commands)
        return {"mark": "", "show": ""}

    monkeypatch.setattr(driver, "read_many", read_many)
    release = "5.14" if name == "SHOW" else "5.12"
    switch = SimpleNamespace(transport=object(), DRAINED=driver.CumulusDriver.DRAINED, _release=lambda: release)
    driver.CumulusDriver.maintenance_status(switch)  # type: ignore[arg-type]
    assert asked["show"] == planted
    _documented(cumulus_drain, name)


def test_the_unit_state_word_is_read_from_a_switch_s_answer(monkeypatch):
    from gpufabric.nos.cumulus.driver import _unit_in_maintenance

    answer = "Unit            State\n--------------  -----------\nall-protocols   maintenance\n"
    assert _unit_in_maintenance(answer) is True
    monkeypatch.setattr(cumulus_drain, "STATE_IN_MAINTENANCE", "maintenence")
    assert _unit_in_maintenance(answer) is False  # read wrong, and nothing but a switch's answer would say so
    _documented(cumulus_drain, "STATE_IN_MAINTENANCE")


# -- Arista EOS: AVD renders any unit name ---------------------------------------------------------------------


def test_avd_renders_any_maintenance_unit_name_so_only_the_document_pins_it(monkeypatch):
    from gpufabric.nos.eos import judge as avd

    monkeypatch.setattr(eos_drain, "UNIT", "Sytem")
    steps = platform("eos").drain_steps(DrainSpec("4.32"))
    result = avd.render({"hostname": "x", "maintenance": {"units": [{"name": "Sytem", "quiesce": True}]}})
    assert result.violations == []  # AVD's schema takes the name as free text
    assert avd.blocks(steps.drain)["maintenance"] == avd.blocks(result.text)["maintenance"]
    _documented(eos_drain, "UNIT")


# -- Cisco NX-OS: Cisco's own GIR module --------------------------------------------------------------------------


def _cisco_gir(drain: bool) -> list[str]:
    from ansible_collections.cisco.nxos.plugins.modules import nxos_gir

    keys = ("system_mode_maintenance_dont_generate_profile", "system_mode_maintenance_timeout",
            "system_mode_maintenance_shutdown", "system_mode_maintenance_on_reload_reset_reason")  # fmt: skip
    module = SimpleNamespace(params={**dict.fromkeys(keys), "system_mode_maintenance": drain})
    return list(nxos_gir.get_commands(module, "present", "normal" if drain else "maintenance"))


def _ours(drain: bool) -> list[str]:
    steps = platform("nxos").drain_steps(DrainSpec("10.4"))
    return (steps.drain if drain else steps.undrain).splitlines()


@pytest.mark.parametrize(
    ("name", "planted"),
    [
        ("NO_QUESTIONS", "terminal dont-aks"),
        ("ENTER", "system mode maintenace"),
        ("LEAVE", "no system mode maintenace"),
    ],
)
def test_cisco_s_gir_module_catches_a_misspelt_gir_command(monkeypatch, name, planted):
    assert _ours(True) == _cisco_gir(True) and _ours(False) == _cisco_gir(False)
    monkeypatch.setattr(nxos_drain, name, planted)
    assert _ours(True) != _cisco_gir(True) or _ours(False) != _cisco_gir(False)


def test_cisco_s_gir_module_catches_a_misspelt_status_command(monkeypatch):
    """Cisco's module reads the mode with a command of its own: the one our driver sends must be that one."""
    from ansible_collections.cisco.nxos.plugins.modules import nxos_gir

    from gpufabric.nos.nxos import driver

    asked: list[str] = []
    monkeypatch.setattr(
        nxos_gir, "run_commands", lambda _m, cmds: [asked.append(c["command"]) or "System Mode: Normal" for c in cmds]
    )
    assert nxos_gir.get_system_mode(SimpleNamespace()) == "normal"
    assert driver.GIR_STATUS is nxos_drain.STATUS and asked == [nxos_drain.STATUS]
    monkeypatch.setattr(nxos_drain, "STATUS", "show sytem mode")
    assert asked != [nxos_drain.STATUS]


# -- SONiC: its own scripts, where a sonic-buildimage tree is given -------------------------------------------------


@pytest.mark.parametrize(("name", "planted"), [("TSA", "TSa"), ("TSB", "TSb"), ("STATUS", "TSc")])
def test_sonic_s_traffic_shift_script_names_need_sonic_s_tree(monkeypatch, name, planted):
    """SONiC's own TSA/TSB/TSC run in test_sonic_tsa.py, and the next test judges their names, when the
    sonic-buildimage tree is given; without it the names as commands are a SONiC switch's to refuse: nothing here
    runs a SONiC shell."""
    monkeypatch.setattr(sonic_drain, name, planted)
    steps = platform("sonic").drain_steps(DrainSpec("202411"))
    assert planted in steps.drain + steps.undrain or name == "STATUS"
    _documented(sonic_drain, name)


# The bgp container's scripts that a SONiC image installs on the host, each as /usr/bin/<name> (sonic-buildimage
# rules/docker-fpm-frr.mk, `_BASE_IMAGE_FILES += TSA:/usr/bin/TSA` and the others). The drain's other commands are
# other SONiC packages' (sonic-utilities' `config`, sonic-swss-common's `sonic-db-cli`), not judged here.
HOST_SCRIPTS = "dockers/docker-fpm-frr/base_image_files"
OTHER_TOOLS = frozenset({"config", "sonic-db-cli"})


def _host_scripts() -> Path:
    """The sonic-buildimage tree's host copies of the traffic-shift scripts, or the test is skipped."""
    from tests.sonic_ts_scripts import BUILDIMAGE

    folder = BUILDIMAGE / HOST_SCRIPTS
    if not folder.is_dir():
        pytest.skip(f"{folder} is not there: GPUFABRIC_SONIC_BUILDIMAGE names a sonic-buildimage tree")
    return folder


def _ts_sent() -> list[str]:
    """The traffic-shift commands gpufabric sends: each drain and undrain line's command, and the driver's status."""
    from gpufabric.nos.sonic.driver import SonicDriver

    steps = platform("sonic").drain_steps(DrainSpec("202411"))
    sent = [line.split()[0] for line in (steps.drain + steps.undrain).splitlines() if line.strip()]
    answer = SimpleNamespace(rc=1, stdout="")
    switch = SimpleNamespace(root="", _held=lambda: None, _try=lambda command: sent.append(command) or answer)
    SonicDriver.maintenance_status(switch)  # type: ignore[arg-type]
    return [word for word in sent if word not in OTHER_TOOLS]


@pytest.mark.parametrize(("name", "planted"), [("TSA", "TSa"), ("TSB", "TSb"), ("STATUS", "TSc")])
def test_sonic_s_tree_installs_each_traffic_shift_command_and_no_misspelt_one(monkeypatch, name, planted):
    from gpufabric.nos.sonic import driver

    scripts = _host_scripts()
    sent = _ts_sent()
    assert sent and all((scripts / word).is_file() for word in sent), sent
    for module in (sonic_drain, driver):  # the driver holds its own binding of STATUS
        if hasattr(module, name):
            monkeypatch.setattr(module, name, planted)
    sent = _ts_sent()
    assert planted in sent and not (scripts / planted).exists(), sent  # SONiC's image has no such command


# -- Slurm: scontrol's own parser -------------------------------------------------------------------------------


@pytest.fixture
def slurm_conf(tmp_path: Path) -> Path:
    """A slurm.conf whose controller is a loopback port nothing listens on: scontrol parses the command line
    first and only then tries to reach slurmctld, so `Unable to contact slurm controller` means it took the
    command, and anything said before that is its refusal."""
    if shutil.which("scontrol") is None:
        if os.environ.get("CI"):
            pytest.fail("scontrol is missing; scripts/test.sh installs slurm-client")
        pytest.skip("scontrol is not installed (apt-get install slurm-client)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        f"ClusterName=facts\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={port}\n"
        "NodeName=gpu01 CPUs=1 State=UNKNOWN\nPartitionName=all Nodes=gpu01 Default=YES\n"
    )
    return conf


def _scontrol_says(conf: Path, drain: bool) -> str:
    """What gpufabric's Slurm drain (or resume) ran into, with the whole answer of the real scontrol it ran (the
    error gpufabric raises carries the last line only)."""
    answers: list[str] = []

    def runner(args: Sequence[str]) -> subprocess.CompletedProcess[bytes]:
        done = cluster._run(args)  # the real command, as gpufabric runs it (its answer as bytes, bounded)
        answers.append((done.stdout + done.stderr).decode(errors="replace"))
        return done

    cluster = slurm.Slurm(conf, runner)
    try:
        if drain:
            cluster.take_out("gpu01", Mark("gf-20260101-000000-abcd", "leaf1"))
        else:  # put_back reads sinfo before it resumes; the resume command itself is what scontrol must parse
            cluster._call(*slurm.SCONTROL_UPDATE, f"{slurm.NODE_NAME}=gpu01", f"{slurm.STATE}={slurm.STATE_RESUME}")
    except SchedulerError as exc:
        return " ".join([str(exc), *answers])
    raise AssertionError("no slurmctld listens, so scontrol cannot have succeeded")


TAKEN = "Unable to contact slurm controller"


@pytest.mark.slow  # runs a whole tool (the fast tier's budget): the whole suite runs it
@pytest.mark.parametrize("drain", [True, False], ids=["drain", "resume"])
def test_scontrol_takes_the_drain_and_resume_commands_as_written(slurm_conf, drain):
    assert TAKEN in _scontrol_says(slurm_conf, drain)


@pytest.mark.parametrize(
    ("name", "planted", "drain", "refusal"),
    [
        ("SCONTROL_UPDATE", ("scontrol", "updte"), True, "invalid keyword: updte"),
        ("SCONTROL_UPDATE", ("scontrl", "update"), True, "scontrl is not installed"),
        ("NODE_NAME", "NodeNme", True, "No valid entity in update command"),
        ("STATE", "Stae", True, "Update of this parameter is not supported: Stae=DRAIN"),
        ("REASON", "Reasn", True, "Update of this parameter is not supported: Reasn="),
        ("STATE_DRAIN", "DRIAN", True, "Invalid input: State=DRIAN"),
        ("STATE_RESUME", "RESUEM", False, "Invalid input: State=RESUEM"),
    ],
)
def test_scontrol_refuses_each_misspelt_word_of_the_drain(monkeypatch, slurm_conf, name, planted, drain, refusal):
    monkeypatch.setattr(slurm, name, planted)
    said = _scontrol_says(slurm_conf, drain)
    assert TAKEN not in said and refusal in said, said


# -- NVIDIA SHARP: the open-source OpenSM refuses the option whatever its spelling ----------------------------------


def _opensm_on(fragment: str, tmp_path: Path) -> str:
    found = shutil.which("opensm") or ("/usr/sbin/opensm" if Path("/usr/sbin/opensm").exists() else None)
    if found is None:
        pytest.skip("OpenSM is not installed (apt-get install opensm)")
    conf = tmp_path / "opensm-sharp.conf"
    conf.write_text(fragment)
    done = subprocess.run([found, "-F", str(conf), "-c", str(tmp_path / "out.conf"), "-f", str(tmp_path / "sm.log")],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    return done.stdout + done.stderr


def _fragment() -> str:
    from gpufabric.ib import names, sharp

    return " ".join(names.option(sharp.SHARP_OPTION, sharp.SHARP_ENABLED)) + "\n"


@pytest.mark.parametrize(("name", "planted"), [("SHARP_OPTION", "sharp_enable"), ("SHARP_ENABLED", 3)])
def test_the_open_source_opensm_cannot_tell_nvidia_s_sharp_option_right_from_wrong(
    monkeypatch, tmp_path, name, planted
):
    from gpufabric.ib import sharp

    right = _opensm_on(_fragment(), tmp_path)
    monkeypatch.setattr(sharp, name, planted)
    wrong = _opensm_on(_fragment(), tmp_path)
    assert "Unrecognized token" in right and "Unrecognized token" in wrong  # the same verdict for both
    _documented(sharp, name)


@pytest.mark.parametrize("name", ["AM_PORT_GUID", "AM_ROOT_GUIDS", "AM_IGNORE_SMS", "AM_IGNORE_HOSTS"])
def test_sharp_am_keys_need_nvidia_s_sharp_am(name):
    """sharp_am does not install here: its keys are documented, not shown."""
    from gpufabric.ib import sharp

    _documented(sharp, name)


# -- Kubernetes: the official client's model of a Node ---------------------------------------------------------


def _node_model() -> Any:
    """kubernetes.client: its models are generated from the API server's OpenAPI document (the test extra has it)."""
    try:
        from kubernetes import client
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("the official Kubernetes client is missing; the test extra installs kubernetes")
        pytest.skip("the official Kubernetes client is not installed (the kubernetes and test extras have it)")
    return client


def _cluster(node: dict[str, Any]) -> tuple[kubernetes.Kubernetes, list[Any]]:
    """gpufabric's Kubernetes side with its HTTP exchange standing in for an API server that holds `node`: a GET
    answers the node, a PATCH is kept (the patch body, what an API server would apply, is what is judged)."""
    patches: list[Any] = []

    def request(method: str, path: str, body: Any = None, content_type: str = "") -> kubernetes.Answer:
        if method == "PATCH":
            patches.append(body)
        return kubernetes.Answer(200, body if method == "PATCH" else copy.deepcopy(node))

    cluster = kubernetes.Kubernetes(None, ())
    cluster._request = request  # type: ignore[method-assign]
    return cluster, patches


MARK = Mark("gf-20260101-000000-abcd", "leaf1")


def _node(client: Any, cordoned: bool) -> dict[str, Any]:
    """A node as the client's model writes it (sanitize_for_serialization: the JSON an API server sends)."""
    meta = client.V1ObjectMeta(name="gpu01", resource_version="7",
                               annotations={kubernetes.ANNOTATION: MARK.text} if cordoned else None)  # fmt: skip
    node = client.V1Node(metadata=meta, spec=client.V1NodeSpec(unschedulable=cordoned))
    return client.ApiClient().sanitize_for_serialization(node)  # type: ignore[no-any-return]


def _spec(client: Any, patch: dict[str, Any]) -> Any:
    """A patch's spec as the client's NodeSpec model takes it: its fields are those `V1NodeSpec.attribute_map`
    names, and it forbids any other (pydantic's ValidationError, returned here to be looked at)."""
    try:
        return client.V1NodeSpec.model_validate(patch["spec"])
    except ValueError as exc:
        return exc


def _cordon_judged(client: Any) -> tuple[Any, Any]:
    """gpufabric's cordon patch and its uncordon patch, each judged by the client's model; the uncordon is made on
    a node the client's model wrote, cordoned with gpufabric's mark (None when gpufabric does not see the cordon
    there, and so leaves the node cordoned)."""
    cluster, patches = _cluster(_node(client, cordoned=False))
    cluster.take_out("gpu01", MARK)
    cordon = _spec(client, patches[-1])
    cluster, patches = _cluster(_node(client, cordoned=True))
    return cordon, _spec(client, patches[-1]) if cluster.put_back("gpu01", MARK) else None


def test_the_kubernetes_client_s_node_model_takes_the_cordon_as_gpufabric_writes_and_reads_it():
    client = _node_model()
    assert kubernetes.UNSCHEDULABLE in client.V1NodeSpec.attribute_map
    cordon, uncordon = _cordon_judged(client)
    assert isinstance(cordon, client.V1NodeSpec) and cordon.unschedulable is True, cordon
    assert isinstance(uncordon, client.V1NodeSpec) and uncordon.unschedulable is None, uncordon
    assert f"`{kubernetes.__name__}.UNSCHEDULABLE`" not in _listed()  # checked here: not among the unchecked


def test_the_kubernetes_client_s_node_model_catches_a_misspelt_cordon_field(monkeypatch):
    client = _node_model()
    monkeypatch.setattr(kubernetes, "UNSCHEDULABLE", "unschedulabel")
    cordon, uncordon = _cordon_judged(client)
    assert "unschedulabel" in str(cordon) and "Extra inputs are not permitted" in str(cordon), cordon
    assert uncordon is None  # the uncordon reads the client's `unschedulable: true` as no cordon, and sends nothing


# -- Upgrades: Cisco's own install module for NX-OS; sonic-utilities' own code for SONiC, where its tree is given

IMAGE, URL = "image-2.bin", "https://images.example.net/image-2.bin"


class _Sent(list[str]):
    """The commands a driver's upgrade steps sent, in order (the transport stands in for the switch)."""

    def run(self, command: str, stdin: str | None = None) -> str:
        self.append(command)
        if "json" in command:  # NVUE's `nv show ... -o json`
            return "{}"
        if command.endswith(".bin") and " -y " not in command:  # sonic-installer's binary version of the file
            return "image-2\n"
        return "Current: image-1\n"  # sonic-installer's list

    def attempt(self, command: str, stdin: str | None = None) -> object:
        self.append(command)
        return SimpleNamespace(rc=0, stdout="", stderr="")

    def eapi(self, commands: list[str], encoding: str = "json") -> list[object]:
        self.extend(commands)
        return [{"softwareImage": "flash:image-1.swi"} if encoding == "json" else {"output": ""} for _ in commands]

    def nxapi(self, command: str) -> str:
        self.append(command)
        return "Module  Bootable  Impact\n1       yes       non-disruptive\n" if command.startswith("show") else ""


def _nxos_sent() -> _Sent:
    from gpufabric.nos.nxos.upgrade import NxosUpgrade

    sent = _Sent()
    switch = NxosUpgrade.__new__(NxosUpgrade)
    switch.hostname, switch._exec = "sw1", sent.nxapi
    switch._install(IMAGE)
    return sent


def _cisco_install(kind: str) -> str:
    from ansible_collections.cisco.nxos.plugins.modules import nxos_install_os

    commands = nxos_install_os.build_install_cmd_set("no", f"bootflash:{IMAGE}", None, kind)
    assert commands[0] == "terminal dont-ask"
    return " ".join(commands[1].split())


def test_cisco_s_install_module_builds_the_same_install_commands():
    impact, install = _nxos_sent()
    assert impact == _cisco_install("impact")
    assert install.startswith(_cisco_install("install") + " ")  # then gpufabric's no-prompt keyword


@pytest.mark.parametrize(
    ("name", "planted"), [("IMPACT", "show install all impcat nxos"), ("INSTALL_ALL", "install al nxos")]
)
def test_cisco_s_install_module_catches_a_misspelt_install_command(monkeypatch, name, planted):
    from gpufabric.nos.nxos import upgrade

    monkeypatch.setattr(upgrade, name, planted)
    impact, install = _nxos_sent()
    assert impact != _cisco_install("impact") or not install.startswith(_cisco_install("install") + " ")


def _cumulus(steps: str) -> _Sent:
    from gpufabric.nos.cumulus.upgrade import CumulusUpgrade

    sent = _Sent()
    switch = CumulusUpgrade.__new__(CumulusUpgrade)
    switch._run, switch._try, switch.hostname = sent.run, sent.attempt, "sw1"  # type: ignore[method-assign]
    {"stage": lambda: switch.stage_image(URL, IMAGE), "install": lambda: switch.install_image(IMAGE),
     "reboot": lambda: switch.reboot("warm"), "back": lambda: switch.boot_previous("image-1")}[steps]()  # fmt: skip
    return sent


def _eos(steps: str) -> _Sent:
    from gpufabric.nos.eos.upgrade import EosUpgrade

    sent = _Sent()
    switch = EosUpgrade.__new__(EosUpgrade)
    switch._run_commands, switch.hostname = sent.eapi, "sw1"  # type: ignore[method-assign]
    {"stage": lambda: switch.stage_image(URL, IMAGE), "checksum": lambda: _quietly(switch.image_checksum, IMAGE),
     "install": lambda: switch.install_image(IMAGE), "reboot": lambda: switch.reboot("fast")}[steps]()  # fmt: skip
    return sent


def _nxos(steps: str) -> _Sent:
    from gpufabric.nos.nxos.upgrade import NxosUpgrade

    sent = _Sent()
    switch = NxosUpgrade.__new__(NxosUpgrade)
    switch._exec, switch.hostname = sent.nxapi, "sw1"  # type: ignore[method-assign]
    switch._send_command = lambda command, raw_text=False: sent.nxapi(command)  # type: ignore[method-assign]
    {"stage": lambda: switch.stage_image(URL, IMAGE), "checksum": lambda: _quietly(switch.image_checksum, IMAGE),
     "install": lambda: switch._install(IMAGE), "reboot": lambda: switch.reboot("cold")}[steps]()  # fmt: skip
    return sent


def _sonic(steps: str) -> _Sent:
    from gpufabric.nos.sonic.upgrade import SonicUpgrade

    sent = _Sent()
    switch = SonicUpgrade.__new__(SonicUpgrade)
    switch._run, switch._try, switch.hostname = sent.run, sent.attempt, "sw1"  # type: ignore[method-assign]
    {"install": lambda: switch.install_image(IMAGE), "reboot": lambda: switch.reboot("warm"),
     "list": switch.running_image}[steps]()  # fmt: skip
    return sent


def _quietly(step: object, *args: str) -> None:
    """A checksum step whose answer holds no checksum raises after sending: the command is what is looked at."""
    from gpufabric.drivers.images import ImageStepError

    with contextlib.suppress(ImageStepError):
        step(*args)  # type: ignore[operator]


UPGRADE_WORDS = [
    ("cumulus", "FETCH", "nv action fetch sytem image", _cumulus, "stage"),
    ("cumulus", "INSTALL", "nv action install sytem image files", _cumulus, "install"),
    ("cumulus", "BOOT_OTHER", "nv action boot-next sytem image other", _cumulus, "back"),
    ("cumulus", "REBOOT", "nv action reboot sytem mode", _cumulus, "reboot"),
    ("cumulus", "SHOW_IMAGE", "nv show sytem image -o json", _cumulus, "install"),
    ("eos", "COPY", "cpy", _eos, "stage"),
    ("eos", "VERIFY_SHA512", "verify /sha521", _eos, "checksum"),
    ("eos", "BOOT_SYSTEM", "boot sytem", _eos, "install"),
    ("eos", "SHOW_BOOT", "show boot-confg", _eos, "install"),
    ("eos", "RELOADS", {"fast": "reload fast-bot now", "cold": "reload now"}, _eos, "reboot"),
    ("nxos", "COPY", "cpy", _nxos, "stage"),
    ("nxos", "VRF", "vrf managment", _nxos, "stage"),
    ("nxos", "SHA512", "sha521sum", _nxos, "checksum"),
    ("nxos", "NO_PROMPT", "non-interuptive", _nxos, "install"),
    ("nxos", "RELOAD", "relaod", _nxos, "reboot"),
    ("sonic", "INSTALLER", "sonic-instaler", _sonic, "install"),
    ("sonic", "INSTALL", "instal -y", _sonic, "install"),
    ("sonic", "SET_DEFAULT", "set-defualt", _sonic, "install"),
    ("sonic", "SET_NEXT_BOOT", "set-next-bot", _sonic, "install"),
    ("sonic", "BINARY_VERSION", "binary-verison", _sonic, "install"),
    ("sonic", "LIST", "lst", _sonic, "list"),
    ("sonic", "REBOOTS", {"warm": "warm-rebot", "fast": "fast-reboot", "cold": "reboot"}, _sonic, "reboot"),
]


@pytest.mark.parametrize(("os_name", "name", "planted", "driver", "steps"), UPGRADE_WORDS,
                         ids=[f"{o}.{n}" for o, n, *_ in UPGRADE_WORDS])  # fmt: skip
def test_upgrade_words_no_model_here_checks_are_sent_as_written_and_listed(
    monkeypatch, os_name, name, planted, driver, steps
):
    import importlib

    module = importlib.import_module(f"gpufabric.nos.{os_name}.upgrade")
    right = getattr(module, name)
    word = planted if isinstance(planted, str) else next(v for k, v in planted.items() if v != right[k])
    monkeypatch.setattr(module, name, planted)
    sent = " | ".join(driver(steps))
    assert word in sent, sent  # the planted word goes to the switch: only the switch would refuse it
    _documented(module, name)


# -- SONiC's upgrade words: sonic-utilities' own CLI, where its tree is given -------------------------------------
#
# sonic-utilities' setup.py says which commands a SONiC image installs (its console_scripts and scripts), and
# sonic_installer/main.py is `sonic-installer`: a click group whose subcommands and options parse a command line
# before anything runs. Each command gpufabric's SONiC upgrade steps send is looked up in setup.py and, for
# sonic-installer, parsed by that click group (resolved and its options and arguments taken, never invoked), in a
# subprocess with tests/sonic_factory.py's stand-ins for the modules that exist only on a switch, and three more
# for modules the installer imports and this parse never uses: M2Crypto (Arista's image signatures),
# lazy_object_proxy, sonic_py_common.general. sonic-utilities pins click below 8.2; click here is newer, whose
# command resolution and option parsing are the same for these commands.

SONIC_UTILITIES_NEEDED = ("setup.py", "sonic_installer/main.py", "sonic_installer/aliases.ini",
                          "utilities_common/cli.py")  # fmt: skip


def _sonic_utilities() -> Path:
    """The sonic-utilities tree (tests/sonic_factory.py finds it), or the test is skipped naming what is missing."""
    from tests.sonic_factory import UTILITIES, tree_or_skip

    what = "sonic-utilities' sonic-installer is"
    return tree_or_skip(UTILITIES, SONIC_UTILITIES_NEEDED, what, "GPUFABRIC_SONIC_UTILITIES")


def _installed_commands(tree: Path) -> dict[str, str]:
    """The commands sonic-utilities' setup.py installs: a console script's name to its `module:object`, a
    script's name to its path in the tree (read from setup.py's own `setup(...)` call, not run)."""
    import ast

    module = ast.parse((tree / "setup.py").read_text())
    call = next(n for n in ast.walk(module) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "setup")
    given = {k.arg: k.value for k in call.keywords}
    commands = {Path(path).name: path for path in ast.literal_eval(given["scripts"])}
    for line in ast.literal_eval(given["entry_points"])["console_scripts"]:
        name, _, target = line.partition("=")
        commands[name.strip()] = target.strip()
    return commands


# Each line is (its click command's `module:object`, its arguments); the answer, after a blank line (a prompt may
# come first), is one [verdict, said] a line: `taken` and the subcommand's own name, `abbreviated` and the name
# the group's AliasedGroup expanded it to (sonic-installer takes any unique prefix), or `refused` and click's
# message.
_SONIC_CLI = r"""
import importlib, json, sys
import click
out = []
for target, argv in json.loads(sys.argv[1]):
    module, _, name = target.partition(":")
    group = getattr(importlib.import_module(module), name)
    ctx = click.Context(group, info_name=name)
    try:
        _, command, rest = group.resolve_command(ctx, argv)
        command.make_context(command.name, rest, parent=ctx).close()
        out.append(["taken" if command.name == argv[0] else "abbreviated", command.name])
    except click.ClickException as exc:
        out.append(["refused", exc.format_message()])
    except click.Abort:
        out.append(["refused", "it asked for a confirmation (-y) and no one gave it"])
print()
print(json.dumps(out))
"""

_SONIC_STANDINS = {
    "M2Crypto/__init__.py": "X509 = None  # Arista's image signatures (sonic_installer.bootloader.aboot): unused\n",
    "lazy_object_proxy.py": "class Proxy:\n    def __init__(self, factory):\n        self.factory = factory\n",
    "sonic_py_common/general.py": "def getstatusoutput_noshell_pipe(*a, **k):\n    raise RuntimeError('stand-in')\n",
}


def _sonic_cli(tree: Path, folder: Path, lines: list[tuple[str, list[str]]]) -> list[tuple[str, str]]:
    """sonic-utilities' click commands' verdicts on each line, in one subprocess."""
    from tests.sonic_factory import standins

    standins(folder)
    for name, text in _SONIC_STANDINS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(tree)])}
    done = subprocess.run([sys.executable, "-c", _SONIC_CLI, json.dumps(lines)], capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [(verdict, said) for verdict, said in json.loads(done.stdout.splitlines()[-1])]


def _sonic_sent() -> list[str]:
    """Every command gpufabric's SONiC upgrade steps send: the install, the list, and each reboot."""
    from gpufabric.nos.sonic.upgrade import SonicUpgrade

    sent = [*_sonic("install"), *_sonic("list")]
    for mode in ("warm", "fast", "cold"):
        reboots = _Sent()
        switch = SonicUpgrade.__new__(SonicUpgrade)
        switch._run, switch._try, switch.hostname = reboots.run, reboots.attempt, "sw1"  # type: ignore[method-assign]
        switch.reboot(mode)
        sent.extend(reboots)
    return sent


NO_COMMAND, NO_SUBCOMMAND = "refused: sonic-utilities installs no command", "refused: No such command"
SONIC_PLANTS = {  # id: (constant, planted, sonic-utilities' verdict on the command that holds it)
    "INSTALLER": ("INSTALLER", "sonic-instaler", f"{NO_COMMAND} 'sonic-instaler'"),
    "INSTALL": ("INSTALL", "isntall -y", f"{NO_SUBCOMMAND} 'isntall'"),
    "INSTALL-option": ("INSTALL", "install --yse", "refused: No such option '--yse'"),
    "INSTALL-no-yes": ("INSTALL", "install", "refused: it asked for a confirmation (-y) and no one gave it"),
    "INSTALL-prefix": ("INSTALL", "instal -y", "abbreviated: install"),  # taken only as a prefix of `install`
    "SET_DEFAULT": ("SET_DEFAULT", "set-defualt", f"{NO_SUBCOMMAND} 'set-defualt'"),
    "SET_NEXT_BOOT": ("SET_NEXT_BOOT", "set-next-bot", f"{NO_SUBCOMMAND} 'set-next-bot'"),
    "BINARY_VERSION": ("BINARY_VERSION", "binary-verison", f"{NO_SUBCOMMAND} 'binary-verison'"),
    "LIST": ("LIST", "lst", f"{NO_SUBCOMMAND} 'lst'"),
    "REBOOTS-warm": ("REBOOTS", {**sonic_upgrade.REBOOTS, "warm": "warm-rebot"}, f"{NO_COMMAND} 'warm-rebot'"),
    "REBOOTS-fast": ("REBOOTS", {**sonic_upgrade.REBOOTS, "fast": "fastreboot"}, f"{NO_COMMAND} 'fastreboot'"),
    "REBOOTS-cold": ("REBOOTS", {**sonic_upgrade.REBOOTS, "cold": "rebot"}, f"{NO_COMMAND} 'rebot'"),
}


@pytest.fixture(scope="module")
def sonic_utilities_verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[str, str, str]]]:
    """Per plant (and `right`, nothing planted): each command sent, with sonic-utilities' verdict and words. All
    are judged in one subprocess: importing sonic-installer takes a second."""
    tree = _sonic_utilities()
    installed = _installed_commands(tree)
    sent = {"right": _sonic_sent()}
    for plant, (name, planted, _) in SONIC_PLANTS.items():
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sonic_upgrade, name, planted)
            sent[plant] = _sonic_sent()
    verdicts: dict[str, tuple[str, str]] = {}
    parsed: list[tuple[str, list[str]]] = []
    for command in {c for commands in sent.values() for c in commands}:
        words = shlex.split(command.removeprefix(sonic_upgrade.SonicUpgrade.root))
        target = installed.get(words[0])
        if target is None:
            verdicts[command] = ("refused", f"sonic-utilities installs no command {words[0]!r}")
        elif ":" not in target:  # one of setup.py's scripts: its name is the whole word
            verdicts[command] = ("taken" if len(words) == 1 else "refused", words[0])
        else:
            parsed.append((target, words[1:]))
            verdicts[command] = ("parsed", "")
    lines = [c for c, (v, _) in verdicts.items() if v == "parsed"]
    verdicts.update(zip(lines, _sonic_cli(tree, tmp_path_factory.mktemp("sonic-utilities"), parsed), strict=True))
    return {key: [(c, *verdicts[c]) for c in commands] for key, commands in sent.items()}


def test_sonic_utilities_takes_every_upgrade_command_gpufabric_sends(sonic_utilities_verdicts):
    right = sonic_utilities_verdicts["right"]
    assert right and all(verdict == "taken" for _, verdict, _ in right), right


@pytest.mark.parametrize("plant", SONIC_PLANTS)
def test_sonic_utilities_refuses_each_misspelt_upgrade_word(sonic_utilities_verdicts, plant):
    not_taken = [(c, f"{v}: {said}") for c, v, said in sonic_utilities_verdicts[plant] if v != "taken"]
    assert not_taken and all(said.startswith(SONIC_PLANTS[plant][2]) for _, said in not_taken), not_taken
