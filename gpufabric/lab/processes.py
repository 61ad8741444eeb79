"""Start lab daemons detached, and stop exactly the processes the lab started, by PID."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from gpufabric.lab import netlink
from gpufabric.owned_files import open_owned
from gpufabric.pids import alive, stop  # the lab's callers name them here

__all__ = ["alive", "in_namespace", "spawn", "stop"]


def spawn(args: list[str], log: Path) -> int:
    """Start a daemon in its own session (it outlives the CLI), its output in `log`; return its PID. The
    log is appended to, opened as the push lock is: never through a link, only a plain file of ours."""
    fd = open_owned(log, os.geteuid(), os.O_WRONLY | os.O_APPEND, "the daemon's log", netlink.LabCommandError)
    with os.fdopen(fd, "ab") as fh:
        proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )
    return proc.pid


def in_namespace(netns: str) -> list[int]:
    """Processes inside a namespace the lab made (a revert timer a driver left running, for instance)."""
    done = netlink.run("ip", "netns", "pids", netns, check=False)
    return [int(p) for p in done.stdout.split()]
