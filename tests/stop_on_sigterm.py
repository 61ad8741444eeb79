"""A pytest plugin (tests/conftest.py loads it): SIGTERM stops the run as Ctrl-C does
(gpufabric.stopping, as for the command line).

CI and `timeout` stop a run with SIGTERM, and Python's default ends the process on the spot: no fixture's
teardown runs, so a lab's namespaces and FRR daemons, a Slurm cluster and the temporary folders stay on the
machine, and the next run finds them in its way. As KeyboardInterrupt, pytest stops where it is and tears down
what it set up; a second SIGTERM does not cut the teardowns short.

Under pytest-xdist the tests and their fixtures are in the workers. The controller, interrupted, would end its
workers at once (execnet's exit), in the middle of their teardowns: a lab half taken down, its state folder
then removed by scripts/test.sh. So the controller passes SIGTERM on to its workers and is not interrupted
itself: each worker stops as above, tears down, reports, and the controller ends the run when they have."""

from __future__ import annotations

import os
import signal

import pytest

from gpufabric.stopping import sigterm_interrupts

# pytest-xdist's controller, ending, gives its workers 10 s before it kills them: a worker tearing down a lab
# (its FRR daemons, namespaces, a Slurm cluster) takes longer.
WORKERS_TEARDOWN = 600.0  # seconds


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    if _is_xdist_controller(config):
        signal.signal(signal.SIGTERM, _to_workers)
    else:
        sigterm_interrupts()
    try:
        from xdist.workermanage import NodeManager
    except ImportError:  # run without pytest-xdist
        return
    NodeManager.EXIT_TIMEOUT = max(NodeManager.EXIT_TIMEOUT, WORKERS_TEARDOWN)


def _is_xdist_controller(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def _to_workers(signum: int, frame: object) -> None:
    """SIGTERM to the controller: passed on to its own child processes (the workers), by PID."""
    for pid in _children(os.getpid()):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue


def _children(parent: int) -> list[int]:
    """The processes whose parent is `parent`, from /proc (field 4 of /proc/PID/stat, after the command name)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                fields = fh.read(4096).rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and fields[1] == str(parent).encode():
            found.append(int(entry.name))
    return found
