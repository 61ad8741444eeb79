"""Start lab daemons detached, and stop exactly the processes the lab started, by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from gpufabric.lab import netlink
from gpufabric.owned_files import open_owned


def spawn(args: list[str], log: Path) -> int:
    """Start a daemon in its own session (it outlives the CLI), its output in `log`; return its PID. The
    log is appended to, opened as the push lock is: never through a link, only a plain file of ours."""
    fd = open_owned(log, os.geteuid(), os.O_WRONLY | os.O_APPEND, "the daemon's log", netlink.LabCommandError)
    with os.fdopen(fd, "ab") as fh:
        proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )
    return proc.pid


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


def in_namespace(netns: str) -> list[int]:
    """Processes inside a namespace the lab made (a revert timer a driver left running, for instance)."""
    done = netlink.run("ip", "netns", "pids", netns, check=False)
    return [int(p) for p in done.stdout.split()]
