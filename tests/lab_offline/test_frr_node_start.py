"""The lab's FRR start returns once watchfrr's start job has ended (it loads frr.conf), judged with real
processes standing in for watchfrr and its job (tests/watchfrr_standin.py): no FRR, no root."""

from __future__ import annotations

import threading
import time

from watchfrr_standin import watchfrr_with_a_job

from gpufabric.lab import frr_node


def test_the_wait_lasts_while_watchfrr_runs_a_start_job(tmp_path, monkeypatch):
    monkeypatch.setattr(frr_node, "FRR_RUN", tmp_path)
    with watchfrr_with_a_job(tmp_path, "w0_leaf1") as (_, end_job):
        ended: list[bool] = []
        waiting = threading.Thread(target=lambda: ended.append(frr_node.wait_started("w0_leaf1", seconds=30)))
        waiting.start()
        time.sleep(1.0)
        assert waiting.is_alive(), "the wait ended while watchfrr's start job was running"
        end_job()
        waiting.join(timeout=10)
        assert not waiting.is_alive() and ended == [True]


def test_a_job_that_never_ends_is_waited_for_only_as_long_as_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(frr_node, "FRR_RUN", tmp_path)
    with watchfrr_with_a_job(tmp_path, "w0_leaf1"):
        started = time.monotonic()
        assert frr_node.wait_started("w0_leaf1", seconds=0.5) is False
        assert time.monotonic() - started < 10


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
