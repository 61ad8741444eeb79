"""Each OS's reboot and image steps (gpufabric/nos/<os>/upgrade.py, FRR's restart.py), as its NAPALM driver
sends them, against recording test doubles of the switch: the exact commands of the vendor's procedure, the
checksum read back from its answer, and what is refused before anything is sent."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from gpufabric.drivers.answers import DEFAULT_BOUNDS
from gpufabric.drivers.images import ImageInputError, ImageStepError, Installed, Restarted, sha512_of
from gpufabric.drivers.transport import Output, slow_commands
from gpufabric.nos.cumulus.driver import CumulusDriver
from gpufabric.nos.eos.driver import GpufabricEOSDriver
from gpufabric.nos.frr.driver import FrrDriver
from gpufabric.nos.frr.restart import RESTART_SECONDS, restart_script
from gpufabric.nos.nxos.driver import GpufabricNXOSDriver
from gpufabric.nos.nxos.upgrade import not_bootable
from gpufabric.nos.sonic.driver import SonicDriver, sonic_build_version

SHA = hashlib.sha512(b"image").hexdigest()


class Shell:
    """A switch's shell as the Linux drivers reach it: every command recorded, answered by the first
    matching prefix in `answers` (else an empty success)."""

    def __init__(self, answers: dict[str, str] | None = None) -> None:
        self.answers = answers or {}
        self.sent: list[str] = []

    def run(self, command: str, stdin: str | None = None) -> Output:
        self.sent.append(command)
        for prefix, answer in self.answers.items():
            if prefix in command:
                return Output(0, answer, "")
        return Output(0, "", "")

    def close(self) -> None:
        pass


def _linux(cls: type, shell: Shell, **args: Any) -> Any:
    driver = cls("192.0.2.10", "admin", "pw", optional_args={"transport": shell, **args})
    driver.open()
    return driver


def test_sha512_is_read_only_when_the_answer_holds_exactly_one() -> None:
    assert sha512_of(f"{SHA}  /var/lib/x.bin\n") == SHA
    assert sha512_of(f"verify /sha512 (flash:x.swi) = {SHA.upper()}") == SHA
    assert sha512_of("No such file") is None and sha512_of(f"{SHA}\n{'0' * 128}") is None


def test_cumulus_follows_nvidias_optimized_image_upgrade() -> None:
    image_state = {"current": "1", "next": "1", "partition1": {"build-id": "cumulus-linux-5.9.2"},
                   "partition2": {"build-id": "cumulus-linux-5.9.2"}}  # fmt: skip
    shell = Shell(
        {"sha512sum": f"{SHA}  /var/lib/cumulus/images/cl.bin\n", "nv show system image": json.dumps(image_state)}
    )
    driver = _linux(CumulusDriver, shell, sudo=False)
    driver.stage_image("http://192.0.2.1/images/cl.bin", "cl.bin")
    assert driver.image_checksum("cl.bin") == SHA
    assert driver.install_image("cl.bin") == Installed("cumulus-linux-5.9.2")
    assert driver.reboot("warm") is False
    assert shell.sent == [
        "nv action fetch system image http://192.0.2.1/images/cl.bin",
        "sha512sum /var/lib/cumulus/images/cl.bin",
        "nv show system image -o json",
        "nv action install system image files cl.bin",
        "nv action boot-next system image other",
        "nv action reboot system mode warm",
    ]
    with pytest.raises(ValueError, match="not 'daemons'"):
        driver.reboot("daemons")


def test_a_name_or_url_a_shell_would_read_is_refused_before_anything_is_sent() -> None:
    shell = Shell()
    driver = _linux(CumulusDriver, shell, sudo=False)
    sent = list(shell.sent)
    for url, name in (("http://x/a.bin;reboot", "a.bin"), ("http://x/a.bin", "a.bin;reboot"),
                      ("file:///etc/shadow", "a.bin"), ("http://x/a b", "a.bin"), ("http://x/a", "../a")):  # fmt: skip
        with pytest.raises(ImageInputError):
            driver.stage_image(url, name)
    assert shell.sent == sent


def test_sonic_boots_the_new_image_once_and_keeps_the_previous_one_the_default() -> None:
    shell = Shell({
        "sonic-installer list": "Current: SONiC-OS-202405.1\nNext: SONiC-OS-202405.1\nAvailable:\nSONiC-OS-202405.1\n",
        "binary-version": "SONiC-OS-202411.7\n",
        "sha512sum": f"{SHA}  /host/gpufabric-images/sonic.bin\n",
    })  # fmt: skip
    driver = _linux(SonicDriver, shell)
    driver.stage_image("https://192.0.2.1/sonic.bin", "sonic.bin")
    assert driver.image_checksum("sonic.bin") == SHA
    assert driver.install_image("sonic.bin") == Installed("SONiC-OS-202405.1")
    driver.reboot("warm")
    driver.keep_image("sonic.bin")
    steps = [c for c in shell.sent if "sonic-installer" in c or "reboot" in c or "curl" in c]
    assert steps == [
        "sudo -n curl -fsS -o /host/gpufabric-images/sonic.bin https://192.0.2.1/sonic.bin",
        "sudo -n sonic-installer list",
        "sudo -n sonic-installer binary-version /host/gpufabric-images/sonic.bin",
        "sudo -n sonic-installer install -y /host/gpufabric-images/sonic.bin",
        "sudo -n sonic-installer set-default SONiC-OS-202405.1",
        "sudo -n sonic-installer set-next-boot SONiC-OS-202411.7",
        "sudo -n warm-reboot",
        "sudo -n sonic-installer binary-version /host/gpufabric-images/sonic.bin",
        "sudo -n sonic-installer set-default SONiC-OS-202411.7",
    ]
    shell.sent.clear()
    assert driver.boot_previous("SONiC-OS-202405.1") is False
    assert shell.sent == ["sudo -n sonic-installer set-default SONiC-OS-202405.1",
                          "sudo -n sonic-installer set-next-boot SONiC-OS-202405.1"]  # fmt: skip


def test_sonic_reports_its_own_release_not_its_bgp_containers_frr() -> None:
    text = "build_version: 'SONiC.202411.123456-abcdef'\ndebian_version: '12.7'\n"
    assert sonic_build_version(text) == "SONiC.202411.123456-abcdef"
    driver = _linux(SonicDriver, Shell({"sonic_version.yml": text}))
    assert driver.get_os_version() == "SONiC.202411.123456-abcdef"


def test_frr_restarts_its_daemons_in_the_labs_pathspace_and_nothing_else() -> None:
    shell = Shell()
    driver = _linux(FrrDriver, shell, pathspace="leaf1", lldp_socket="/x")
    assert driver.reboot("daemons") == Restarted(())  # back when it returns, with nothing to report
    assert shell.sent[-1] == restart_script("leaf1")
    assert "; nice -n -15 /usr/lib/frr/frrinit.sh restart leaf1 </dev/null" in restart_script("leaf1")
    with pytest.raises(ValueError, match="pathspace"):
        restart_script("leaf1; reboot")  # a pathspace is a name, never shell
    assert "renice -n -15" in restart_script("leaf1") and restart_script(None) == "systemctl restart frr"
    with pytest.raises(ValueError, match="daemons only"):
        driver.reboot("cold")
    assert not hasattr(driver, "install_image")


class BoundedShell(Shell):
    """A shell with the SSH transport's read bounds: each command's deadline recorded as it is sent."""

    def __init__(self) -> None:
        super().__init__()
        self.bounds = DEFAULT_BOUNDS
        self.deadlines: list[float] = []

    def run(self, command: str, stdin: str | None = None) -> Output:
        self.deadlines.append(self.bounds.command_seconds)
        return super().run(command, stdin)


def test_frr_gives_its_daemon_restart_a_longer_deadline_than_a_command_and_only_it() -> None:
    # A restart of every daemon has taken over a minute on a loaded machine: cut off at the usual 60 s, the
    # switch was reported unanswering and left drained while its daemons came back.
    shell = BoundedShell()
    driver = _linux(FrrDriver, shell, pathspace="leaf1", lldp_socket="/x")
    driver.reboot("daemons")
    restart = shell.sent.index(restart_script("leaf1"))
    assert shell.deadlines[restart] == RESTART_SECONDS > DEFAULT_BOUNDS.command_seconds
    assert shell.bounds is DEFAULT_BOUNDS  # put back: the next command has the usual deadline
    shell.run("true")
    assert shell.deadlines[-1] == DEFAULT_BOUNDS.command_seconds


def test_a_longer_deadline_is_put_back_when_the_command_fails_and_never_shortens_one() -> None:
    shell = BoundedShell()
    with pytest.raises(RuntimeError), slow_commands(shell, 300):
        raise RuntimeError("the restart failed")
    assert shell.bounds is DEFAULT_BOUNDS
    with slow_commands(shell, 5):  # below the usual deadline: left as it is
        assert shell.bounds.command_seconds == DEFAULT_BOUNDS.command_seconds
    recording = Shell()  # no bounds at all (a replayed recording): nothing to change
    with slow_commands(recording, 300):
        assert not hasattr(recording, "bounds")


class Eos(GpufabricEOSDriver):
    """gpufabric's EOS driver with eAPI replaced by a recording test double of its answers."""

    def __init__(self) -> None:
        super().__init__("eos1", "admin", "pw", optional_args={"push_id": "gf-20260101T000000Z-abcdef"})
        self.sent: list[str] = []

    def _run_commands(self, commands: list[str], **kwargs: Any) -> list[Any]:
        self.sent += commands
        answers: list[Any] = []
        for c in commands:
            if c.startswith("verify /sha512"):
                answers.append({"output": f"verify /sha512 (flash:EOS64-4.33.2F.swi) = {SHA}\n"})
            elif c == "show boot-config":
                answers.append({"softwareImage": "flash:/EOS64-4.32.1F.swi"})
            else:
                answers.append({"output": ""})
        return answers


def test_eos_copies_verifies_points_boot_config_and_reloads() -> None:
    eos = Eos()
    eos.stage_image("https://192.0.2.1/EOS64-4.33.2F.swi", "EOS64-4.33.2F.swi")
    assert eos.image_checksum("EOS64-4.33.2F.swi") == SHA
    assert eos.install_image("EOS64-4.33.2F.swi") == Installed("EOS64-4.32.1F.swi")
    eos.reboot("fast")
    eos.boot_previous("EOS64-4.32.1F.swi")
    assert eos.sent == [
        "copy https://192.0.2.1/EOS64-4.33.2F.swi flash:EOS64-4.33.2F.swi",
        "verify /sha512 flash:EOS64-4.33.2F.swi",
        "show boot-config",
        "configure", "boot system flash:EOS64-4.33.2F.swi", "end",
        "reload fast-boot now",
        "configure", "boot system flash:EOS64-4.32.1F.swi", "end",
    ]  # fmt: skip


IMPACT_OK = """Compatibility check is done:
Module  bootable          Impact  Install-type  Reason
------  --------  --------------  ------------  ------
     1       yes      disruptive         reset  default upgrade is not hitless
"""


class Nxos(GpufabricNXOSDriver):
    """gpufabric's NX-OS driver with NX-API replaced by a recording test double of its answers."""

    def __init__(self, impact: str = IMPACT_OK) -> None:
        super().__init__("nx1", "admin", "pw", optional_args={"push_id": "gf-20260101T000000Z-abcdef"})
        self.impact = impact
        self.sent: list[str] = []

    def _exec(self, command: str) -> str:
        self.sent.append(command)
        return self.impact if command.startswith("show install all impact") else ""

    def _send_command(self, command: str, raw_text: bool = False) -> Any:
        self.sent.append(command)
        if command.endswith("sha512sum"):
            return f"{SHA}\n"
        if command == "show version":
            return {"nxos_file_name": "bootflash:///nxos64-cs.10.3.4a.M.bin"}
        return ""


def test_nxos_checks_the_impact_then_install_all_reloads_by_itself() -> None:
    nx = Nxos()
    nx.stage_image("scp://backup@192.0.2.1/nxos64-cs.10.4.3.F.bin", "nxos64-cs.10.4.3.F.bin")
    assert nx.image_checksum("nxos64-cs.10.4.3.F.bin") == SHA
    assert nx.install_image("nxos64-cs.10.4.3.F.bin") == Installed("nxos64-cs.10.3.4a.M.bin", reboots=True)
    assert nx.sent == [
        "copy scp://backup@192.0.2.1/nxos64-cs.10.4.3.F.bin bootflash:nxos64-cs.10.4.3.F.bin vrf management",
        "show file bootflash:nxos64-cs.10.4.3.F.bin sha512sum",
        "show version",
        "show install all impact nxos bootflash:nxos64-cs.10.4.3.F.bin",
        "install all nxos bootflash:nxos64-cs.10.4.3.F.bin non-interruptive",
    ]


def test_nxos_installs_nothing_when_a_module_would_not_boot_the_image() -> None:
    nx = Nxos(IMPACT_OK.replace("1       yes", "1        no"))
    with pytest.raises(ImageStepError, match="would not boot on module"):
        nx.install_image("nxos64-cs.10.4.3.F.bin")
    assert not [c for c in nx.sent if c.startswith("install all")]
    assert not_bootable("nothing like a table") == ["(no module row in the impact table)"]
