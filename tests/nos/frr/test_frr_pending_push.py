"""The FRR driver's pending marker names the push, and a second push from another controller is refused.

`LocalSwitch` is a test double of the SSH session to an FRR switch: it runs the driver's own shell
in this machine's `sh`, with the switch's /etc/frr/ mapped to a temporary folder. The marker, the
timer process it names (a real process: its boot id, PID and start time are checked) and the
scripts are the real ones; no FRR runs here, so nothing below loads or applies a configuration.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pytest
from napalm import get_network_driver
from nornir.core import Nornir
from nornir.core.inventory import ConnectionOptions, Defaults, Groups, Host, Hosts, Inventory
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir.plugins.runners import ThreadedRunner
from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

from gpufabric.drivers.transport import Output
from gpufabric.fleet.expect import Expectation
from gpufabric.nos.frr.files import DeviceFiles
from gpufabric.push import rollout
from gpufabric.push.targets import Batch
from nornir_tasks.push import PushOptions

OTHER = "gf-20261123T101500Z-a1b2c3"


class LocalSwitch:
    """Test double of an FRR switch's SSH session (see the module's docstring); keeps every command."""

    def __init__(self, root: Path) -> None:
        self.root, self.sent = root, []

    def _local(self, text: str) -> str:
        return text.replace("/etc/frr/", f"{self.root}/etc/frr/")

    def run(self, command: str, stdin: str | None = None) -> Output:
        self.sent.append(command)
        done = subprocess.run(
            ["sh", "-c", self._local(command)],
            input=None if stdin is None else self._local(stdin),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        return Output(done.returncode, done.stdout, done.stderr)

    def close(self) -> None:
        pass


@pytest.fixture
def switch_dir(tmp_path):
    folder = tmp_path / "etc" / "frr" / "sw1"
    folder.mkdir(parents=True)
    return folder


@pytest.fixture
def timer():
    """A process standing in for another push's revert timer, ended (by its PID) after the test."""
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def _identity(pid: int) -> str:
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    start = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]  # field 22, after the name
    return f"{boot} {pid} {start}"


def driver(root: Path, **args: str):
    dev = get_network_driver("frr")(
        "192.0.2.20", "u", "p", optional_args={"transport": LocalSwitch(root), "pathspace": "sw1", **args}
    )
    dev.lldp_socket = "/nonexistent"  # nothing to ask the login session for
    dev.open()
    return dev


def test_a_pending_marker_names_the_other_push(tmp_path, switch_dir, timer):
    (switch_dir / "gpufabric.pending").write_text(f"{_identity(timer.pid)}\n{OTHER} 2026-11-23T10:15:00Z ctl-a\n")
    dev = driver(tmp_path)
    assert dev.has_pending_commit()
    assert dev.pending_push() == {"push_id": OTHER, "started": "2026-11-23T10:15:00Z", "controller": "ctl-a"}


def test_a_marker_whose_timer_is_gone_is_no_pending_push(tmp_path, switch_dir):
    gone = subprocess.Popen(["true"])
    gone.wait()
    (switch_dir / "gpufabric.pending").write_text(f"{_identity(os.getpid())}\n{OTHER} 2026-11-23T10:15:00Z ctl-a\n")
    text = (switch_dir / "gpufabric.pending").read_text().replace(f" {os.getpid()} ", f" {gone.pid} ", 1)
    (switch_dir / "gpufabric.pending").write_text(text)
    assert driver(tmp_path).pending_push() is None


def test_a_pending_commit_from_before_push_ids_is_an_unknown_push(tmp_path, switch_dir, timer):
    (switch_dir / "gpufabric.pending").write_text(f"{_identity(timer.pid)}\n")
    assert driver(tmp_path).pending_push() == {"push_id": "unknown", "started": "", "controller": ""}


def test_the_armed_timer_carries_this_push_and_a_disarm_clears_it(tmp_path, switch_dir):
    files = DeviceFiles("sw1")
    line = f"{OTHER} 2026-11-23T10:15:00Z ctl-a"
    (switch_dir / "gpufabric.revert.sh").write_text("exit 0\n")
    dev = driver(tmp_path, push_id=OTHER, push_controller="ctl-a")
    assert dev.push.line == line
    marker = switch_dir / "gpufabric.pending"
    dev._run("sh -s", files.arm_timer_script(300, dev.push.line))
    pid = int(marker.read_text().split()[1])
    try:
        assert marker.read_text().splitlines()[1] == line
        assert dev.pending_push() == {"push_id": OTHER, "started": "2026-11-23T10:15:00Z", "controller": "ctl-a"}
        dev._run("sh -s", files.disarm_script)
        assert dev.pending_push() is None and not marker.exists()
    finally:
        with contextlib.suppress(ProcessLookupError):  # the timer's own group, should the disarm not have ended it
            os.killpg(pid, signal.SIGKILL)


def test_a_second_push_from_another_controller_is_refused_before_any_change(tmp_path, switch_dir, timer):
    """Another controller's push (OTHER, from ctl-a) left its change pending on sw1: this push, reading
    every switch before changing or even reading any, refuses and names that push and its start."""
    (switch_dir / "gpufabric.pending").write_text(f"{_identity(timer.pid)}\n{OTHER} 2026-11-23T10:15:00Z ctl-a\n")
    (tmp_path / "etc" / "frr" / "sw2").mkdir()
    if CONNECTION_NAME not in ConnectionPluginRegister.available:
        ConnectionPluginRegister.register(CONNECTION_NAME, Napalm)
    hosts, sessions = Hosts(), {}
    for name in ("sw1", "sw2"):
        sessions[name] = LocalSwitch(tmp_path)
        hosts[name] = Host(name=name, hostname="192.0.2.21", username="u", password="p", platform="frr")
        args = {"transport": sessions[name], "pathspace": name, "lldp_socket": "/nonexistent"}
        hosts[name].connection_options["napalm"] = ConnectionOptions(extras={"optional_args": args})
    nr = Nornir(inventory=Inventory(hosts=hosts, groups=Groups(), defaults=Defaults()), runner=ThreadedRunner(2))
    with pytest.raises(rollout.OtherPushPendingError) as refused:
        rollout.run(
            nr,
            plan_batches=[Batch(1, "canary", ("sw2",)), Batch(2, "fd-1", ("sw1",))],
            candidates={"sw1": "hostname sw1\n", "sw2": "hostname sw2\n"},
            expects={n: Expectation(n, {}, ()) for n in ("sw1", "sw2")},
            opts=PushOptions(push_id="gf-20261123T111111Z-ffffff"),
        )
    assert f"{OTHER} (controller ctl-a, started 2026-11-23T10:15:00Z)" in str(refused.value)
    assert "on sw1" in str(refused.value)
    # Each switch was asked the one question and nothing else: no candidate folder, no diff, no commit.
    assert {n: s.sent for n, s in sessions.items()} == {n: [DeviceFiles(n).pending_push_check] for n in sessions}
