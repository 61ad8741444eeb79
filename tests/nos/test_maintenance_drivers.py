"""The Cumulus and SONiC drivers' drain, undrain and maintenance status, in a local shell standing in for
the switch, with stand-ins for NVUE's `nv` and SONiC's TSA/TSB/TSC/config that keep what they are asked
and answer as NVIDIA's NVUE reference and sonic-mgmt show them. The marker scripts are the drivers' own.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from gpufabric.drivers.maintenance import DrainHeldError
from gpufabric.drivers.registry import network_driver
from gpufabric.drivers.transport import Output

PUSH = "gf-20261125T140000Z-abc123"
OTHER = "gf-20261125T130000Z-def456"

FAKE_NV = r"""#!/bin/sh
echo "nv $*" >> "$GF_FAKE_STATE/log"
case "$*" in
  "config apply --confirm-status") exit 1 ;;
  "config detach") rm -f "$GF_FAKE_STATE/pending" ;;
  "set maintenance unit all-protocols mode enabled") echo maintenance > "$GF_FAKE_STATE/pending" ;;
  "set maintenance unit all-protocols mode disabled") echo production > "$GF_FAKE_STATE/pending" ;;
  "unset maintenance unit all-protocols") echo production > "$GF_FAKE_STATE/pending" ;;
  "config apply -y") [ -f "$GF_FAKE_STATE/pending" ] && mv "$GF_FAKE_STATE/pending" "$GF_FAKE_STATE/mode" ;;
  "action enable system maintenance mode") echo maintenance > "$GF_FAKE_STATE/mode" ;;
  "action disable system maintenance mode") echo production > "$GF_FAKE_STATE/mode" ;;
  "show maintenance")
    printf 'Maintenance Info\n==============\nUnit            State\n-------------   ----------\n'
    mode=$(cat "$GF_FAKE_STATE/mode" 2>/dev/null || echo production)
    printf 'all-protocols   %s\nall-interfaces  production\n' "$mode" ;;
  "show system maintenance") printf 'mode  %s\n' "$(cat "$GF_FAKE_STATE/mode" 2>/dev/null || echo production)" ;;
  *) echo "unknown: $*" >&2; exit 1 ;;
esac
"""

FAKE_SONIC = {
    "TSA": 'echo TSA >> "$GF_FAKE_STATE/log"; echo maintenance > "$GF_FAKE_STATE/mode"',
    "TSB": 'echo TSB >> "$GF_FAKE_STATE/log"; echo normal > "$GF_FAKE_STATE/mode"',
    "TSC": 'if [ "$(cat "$GF_FAKE_STATE/mode" 2>/dev/null)" = maintenance ]; then echo "System Mode: Maintenance"; '
    'else echo "System Mode: Normal"; fi',
    "config": 'echo "config $*" >> "$GF_FAKE_STATE/log"',
    "sonic-db-cli": 'echo "sonic-db-cli $*" >> "$GF_FAKE_STATE/log"; echo 1',
}


class LocalSwitch:
    def __init__(self, root: Path, bin_dir: Path, state: Path) -> None:
        self.root = root
        self.env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "GF_FAKE_STATE": str(state), "HOME": str(root / "home")}

    def _local(self, text: str) -> str:
        return text.replace("/etc/sonic/", f"{self.root}/etc/sonic/")

    def run(self, command: str, stdin: str | None = None) -> Output:
        done = subprocess.run(["sh", "-c", self._local(command)], input=None if stdin is None else self._local(stdin),
                              capture_output=True, text=True, timeout=30, check=False, env=self.env,
                              cwd=self.root / "home")  # fmt: skip
        return Output(done.returncode, done.stdout, done.stderr)

    def close(self) -> None:
        pass


def _switch(tmp_path: Path, scripts: dict[str, str]) -> tuple[LocalSwitch, Path]:
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    for d in (bin_dir, state, tmp_path / "home", tmp_path / "etc" / "sonic"):
        d.mkdir(parents=True)
    for name, body in scripts.items():
        (bin_dir / name).write_text(body if body.startswith("#!") else f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return LocalSwitch(tmp_path, bin_dir, state), state


def _driver(name: str, transport: LocalSwitch, **args: object):
    dev = network_driver(name)("192.0.2.30", "cumulus", "pw", optional_args={"transport": transport, **args})
    dev.open()
    return dev


def test_cumulus_5_14_drains_through_a_maintenance_unit_transaction(tmp_path):
    transport, state = _switch(tmp_path, {"nv": FAKE_NV})
    dev = _driver("cumulus", transport, release="5.14", sudo=False)
    assert dev.maintenance_status()["drained"] is False
    dev.drain(PUSH, "optics swap", by="bob@ctl2")
    log = (state / "log").read_text().splitlines()
    unit = log.index("nv set maintenance unit all-protocols mode enabled")
    assert log[unit - 1] == "nv config detach" and log[unit + 1] == "nv config apply -y"
    status = dev.maintenance_status()
    assert status["drained"] and status["applied"] and status["by"] == "bob@ctl2"
    assert status["mechanism"] == "maintenance unit all-protocols"
    with pytest.raises(DrainHeldError):
        dev.undrain(OTHER)
    dev.undrain(PUSH)
    log = (state / "log").read_text().splitlines()[len(log) :]
    # NVIDIA's documented way back, applied; then the unit leaves the configuration, applied too.
    assert log[-4:] == [
        "nv set maintenance unit all-protocols mode disabled",
        "nv config apply -y",
        "nv unset maintenance unit all-protocols",
        "nv config apply -y",
    ], log
    assert dev.maintenance_status() | {"applied": None} == dict.fromkeys(
        ("drained", "since", "by", "push_id", "reason", "mechanism", "applied")
    ) | {"drained": False}
    assert not (tmp_path / "home" / ".gpufabric" / "drained").exists()


def test_cumulus_5_12_uses_the_maintenance_action(tmp_path):
    transport, state = _switch(tmp_path, {"nv": FAKE_NV})
    dev = _driver("cumulus", transport, release="5.12", sudo=False)
    dev.drain(PUSH, "x")
    log = (state / "log").read_text()
    assert "nv action enable system maintenance mode" in log and "nv set maintenance" not in log
    assert dev.maintenance_status()["mechanism"] == "system maintenance mode"
    dev.undrain(PUSH)
    assert "nv action disable system maintenance mode" in (state / "log").read_text()


def test_sonic_drains_with_tsa_saves_and_reads_tsc(tmp_path):
    transport, state = _switch(tmp_path, FAKE_SONIC)
    dev = _driver("sonic", transport, sudo=False)
    dev.drain(PUSH, "x")
    assert (state / "log").read_text().splitlines() == ["TSA", "config save -y"]
    status = dev.maintenance_status()
    assert status["drained"] and status["applied"] is True and status["push_id"] == PUSH
    assert (tmp_path / "etc" / "sonic" / "gpufabric.drained").exists()
    dev.undrain(PUSH)
    # TSB, then its leftover `tsa_enabled: false` removed (the plan's CONFIG_DB has no such row), then saved.
    assert (state / "log").read_text().splitlines()[-3:] == [
        "TSB",
        "sonic-db-cli CONFIG_DB HDEL BGP_DEVICE_GLOBAL|STATE tsa_enabled",
        "config save -y",
    ]
    assert dev.maintenance_status()["drained"] is False


def test_a_switch_in_maintenance_without_a_marker_reads_as_drained_by_someone_unknown(tmp_path):
    transport, state = _switch(tmp_path, FAKE_SONIC)
    (state / "mode").write_text("maintenance\n")  # someone ran TSA by hand
    status = _driver("sonic", transport, sudo=False).maintenance_status()
    assert status["drained"] and status["by"] == "unknown" and status["push_id"] is None


class ReleaseFile(LocalSwitch):
    """The local switch, whose /etc/lsb-release says `release`; each reading of it counted."""

    def __init__(self, inner: LocalSwitch, release: str) -> None:
        super().__init__(inner.root, Path(inner.env["PATH"].split(":")[0]), Path(inner.env["GF_FAKE_STATE"]))
        self.release, self.readings = release, 0

    def run(self, command: str, stdin: str | None = None) -> Output:
        if "cat /etc/lsb-release" in command:  # alone, or one of several reads in a round trip
            self.readings += 1
            text = f'DISTRIB_ID="Cumulus Linux"\nDISTRIB_RELEASE={self.release}\n'
            command = command.replace("cat /etc/lsb-release", f"printf %s {shlex.quote(text)}")
        return super().run(command, stdin)


def test_cumulus_reads_its_release_once_a_session(tmp_path):
    """A drain, its status, the undrain and its status each need the release (5.12's action or 5.13's unit):
    the switch is asked once a session, and again on a new session (a switch changes release by rebooting)."""
    local, state = _switch(tmp_path, {"nv": FAKE_NV})
    transport = ReleaseFile(local, "5.12.1")
    dev = _driver("cumulus", transport, sudo=False)
    dev.drain(PUSH, "x")
    assert dev.maintenance_status()["mechanism"] == "system maintenance mode"
    dev.undrain(PUSH)
    assert dev.maintenance_status()["drained"] is False
    assert transport.readings == 1
    assert "nv action enable system maintenance mode" in (state / "log").read_text()
    upgraded = ReleaseFile(local, "5.14.0")
    dev.transport = upgraded  # the session after a reboot into 5.14
    dev.drain(PUSH, "y")
    assert "nv set maintenance unit all-protocols mode enabled" in (state / "log").read_text()
    assert dev.maintenance_status()["mechanism"] == "maintenance unit all-protocols"
    assert upgraded.readings == 1
