"""Processes known by PID: whether one is still there, and stopping exactly those (SIGTERM, then SIGKILL).

Ground floor: the switch lab and the InfiniBand lab both stop the daemons they started, by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of this process counts as gone.
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().split("\n", 3)[2].lower()
    except (OSError, IndexError):
        return False


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop(pids: list[int], grace: float = 5.0) -> None:
    """SIGTERM, then SIGKILL whatever is still there after `grace` seconds."""
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    waiting = list(pids)
    while waiting and time.monotonic() < deadline:
        for pid in waiting:
            _reap(pid)
        waiting = [p for p in waiting if alive(p)]
        if waiting:
            time.sleep(0.05)
    for pid in waiting:
        _signal(pid, signal.SIGKILL)
        _reap(pid)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
