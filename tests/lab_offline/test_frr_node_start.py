"""The lab's FRR start returns once watchfrr's start jobs have ended (each loads its daemon's part of frr.conf),
judged with real processes standing in for watchfrr and its job: no FRR, no root."""

from __future__ import annotations

import subprocess
import threading
import time

from gpufabric.lab import frr_node


def _stand_in(tmp_path, node: str, job: str) -> subprocess.Popen[bytes]:
    """A process whose child runs `job`, named in the node's watchfrr.pid as FRR's init script leaves it."""
    watchfrr = subprocess.Popen(["sh", "-c", f"sh -c '{job}' & wait"])
    (tmp_path / node).mkdir()
    (tmp_path / node / "watchfrr.pid").write_text(f"{watchfrr.pid}\n")
    deadline = time.monotonic() + 10
    while subprocess.run(["pgrep", "-P", str(watchfrr.pid)], capture_output=True, check=False).returncode:
        assert time.monotonic() < deadline, "the stand-in's job never started"
        time.sleep(0.05)
    return watchfrr


def test_the_wait_lasts_while_watchfrr_runs_a_start_job(tmp_path, monkeypatch):
    monkeypatch.setattr(frr_node, "FRR_RUN", tmp_path)
    done = tmp_path / "job-done"
    watchfrr = _stand_in(tmp_path, "w0_leaf1", f'while [ ! -e "{done}" ]; do sleep 0.05; done')
    try:
        ended: list[bool] = []
        waiting = threading.Thread(target=lambda: ended.append(frr_node.wait_started("w0_leaf1", seconds=30)))
        waiting.start()
        time.sleep(1.0)
        assert waiting.is_alive(), "the wait ended while watchfrr's start job was running"
        done.touch()
        waiting.join(timeout=10)
        assert not waiting.is_alive() and ended == [True]
    finally:
        done.touch()
        watchfrr.kill()
        watchfrr.wait()


def test_a_job_that_never_ends_is_waited_for_only_as_long_as_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(frr_node, "FRR_RUN", tmp_path)
    done = tmp_path / "job-done"
    watchfrr = _stand_in(tmp_path, "w0_leaf1", f'while [ ! -e "{done}" ]; do sleep 0.05; done')
    try:
        started = time.monotonic()
        assert frr_node.wait_started("w0_leaf1", seconds=0.5) is False
        assert time.monotonic() - started < 10
    finally:
        done.touch()
        watchfrr.kill()
        watchfrr.wait()


def test_a_node_whose_watchfrr_left_no_pid_file_is_not_waited_for(tmp_path, monkeypatch):
    monkeypatch.setattr(frr_node, "FRR_RUN", tmp_path)
    assert frr_node.wait_started("w0_gone", seconds=30) is True


def test_frr_starts_at_the_control_plane_niceness(tmp_path, monkeypatch):
    """FRR's init script, and with it watchfrr and its start job, runs at the daemons' niceness: started at the
    default priority beside another lab's daemons at that niceness, the start was starved past watchfrr's startup
    timeout. The start itself is not run here (no root): the command it would run is read."""
    monkeypatch.setattr(frr_node, "FRR_RUN", tmp_path)
    ran: list[tuple[str, ...]] = []
    monkeypatch.setattr(frr_node.netlink, "run", lambda *args, **_: ran.append(args))
    assert frr_node.start("w0_leaf1", tmp_path / "uts") == {}
    assert ran == [("nice", "-n", str(frr_node.CONTROL_PLANE_NICENESS), "nsenter", f"--uts={tmp_path / 'uts'}",
                    *frr_node.NO_HISTORY, frr_node.FRRINIT, "start", "w0_leaf1")]  # fmt: skip
    assert frr_node.CONTROL_PLANE_NICENESS < 0
