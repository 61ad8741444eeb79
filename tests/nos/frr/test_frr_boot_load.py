"""A commit waits for FRR's boot load of its own daemons (it holds their configuration lock, and
frr-reload.py finds the lock taken and applies nothing), and only for its own pathspace's.

The boot loads are stand-ins: perl processes that name themselves as watchfrr's `vtysh -N <pathspace> -b -d
<daemon>` does, and end when the test says so. pgrep, sh and the wait are the real ones."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
from watchfrr_standin import watchfrr_with_a_job

from gpufabric.nos.frr.files import DeviceFiles, boot_load_wait

pytestmark = pytest.mark.skipif(not (shutil.which("perl") and shutil.which("pgrep")), reason="needs perl and pgrep")


def _boot_load(pathspace: str, until: Path) -> subprocess.Popen[bytes]:
    """A process that looks like FRR's boot load of `pathspace`'s bgpd until `until` exists."""
    title = f"/usr/bin/vtysh -N {pathspace} -b -d bgpd"
    script = f'$0 = "{title}"; select(undef, undef, undef, 0.05) until -e "{until}";'
    loader = subprocess.Popen(["perl", "-e", script])
    deadline = time.monotonic() + 10
    while subprocess.run(["pgrep", "-f", f"^{title}$"], check=False, capture_output=True).returncode != 0:
        assert time.monotonic() < deadline, "the stand-in never named itself"
        time.sleep(0.05)
    return loader


def test_the_wait_holds_while_its_own_daemons_load_and_not_for_another_lab(tmp_path):
    own, other = tmp_path / "own-done", tmp_path / "other-done"
    loaders = [_boot_load("gft1", own), _boot_load("gft10", other), _boot_load("w0_gft1", other)]
    try:
        waiting = subprocess.Popen(["sh", "-c", boot_load_wait("gft1", 60)])
        time.sleep(1.5)  # a wait that did not wait has long ended by now (it takes milliseconds)
        assert waiting.poll() is None, "the commit did not wait for its daemons' boot load"
        own.touch()
        assert waiting.wait(timeout=20) == 0  # while gft10's and w0_gft1's loads still run
        assert loaders[1].poll() is None and loaders[2].poll() is None
    finally:
        own.touch()
        other.touch()
        for loader in loaders:
            loader.wait(timeout=20)


def test_the_wait_is_bounded(tmp_path):
    loader = _boot_load("gft2", tmp_path / "never")
    try:
        started = time.monotonic()
        assert subprocess.run(["sh", "-c", boot_load_wait("gft2", 1)], check=False, timeout=30).returncode == 0
        assert time.monotonic() - started < 15
    finally:
        (tmp_path / "never").touch()
        loader.wait(timeout=20)


def test_the_apply_waits_before_frr_reload():
    script = DeviceFiles("gft1").apply_script("/tmp/c.conf", None).splitlines()
    waits = next(i for i, line in enumerate(script) if "pgrep -f" in line)
    reloads = next(i for i, line in enumerate(script) if "frr-reload.py" in line)
    assert waits < reloads and "'^[^ ]*vtysh -N gft1 -b( |$)'" in script[waits]


def test_a_restart_waits_while_its_watchfrr_still_runs_a_daemon_s_start(tmp_path):
    """After FRR's init script returns, watchfrr may still be running its start job (`watchfrr.sh restart all`:
    the daemons, then their load), and between a daemon's start and the load no load runs yet: the restart's
    wait lasts until the job ends. Another pathspace's watchfrr's job is not waited for."""
    from gpufabric.nos.frr.restart import starts_wait

    with watchfrr_with_a_job(tmp_path, "mine") as (_, end_mine), watchfrr_with_a_job(tmp_path, "theirs") as (other, _):
        waiting = subprocess.Popen(["sh", "-c", starts_wait("mine", str(tmp_path), seconds=30)])
        try:
            time.sleep(1.5)
            assert waiting.poll() is None, "the wait ended while watchfrr's start job was running"
            end_mine()
            assert waiting.wait(timeout=10) == 0
        finally:
            waiting.kill()
            waiting.wait()
        # The wait ended with the other pathspace's job still running: not waited for. Nor is a pathspace whose
        # watchfrr left no PID file (the wait's own bound, 30 s, is past this run's timeout).
        assert other.poll() is None
        gone = subprocess.run(["sh", "-c", starts_wait("gone", str(tmp_path), seconds=30)], check=False, timeout=10)
        assert gone.returncode == 0
