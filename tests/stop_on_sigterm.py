"""A pytest plugin (tests/conftest.py loads it): SIGTERM stops the run as Ctrl-C does.

CI and `timeout` stop a run with SIGTERM, and Python's default ends the process on the spot: no fixture's
teardown runs, so a lab's namespaces and FRR daemons, a Slurm cluster and the temporary folders stay on the
machine, and the next run finds them in its way. As KeyboardInterrupt, pytest stops
where it is and tears down what it set up."""

from __future__ import annotations

import signal
import threading

import pytest


def _interrupted(signum: int, frame: object) -> None:
    # One stop is enough: a second SIGTERM (CI signals the whole process group, and scripts/test.sh passes the
    # signal on) raised inside a teardown would cut it short. Not SIG_IGN, which a command a teardown runs
    # would inherit through exec; a handler of Python's is reset there.
    signal.signal(signal.SIGTERM, _tearing_down)
    raise KeyboardInterrupt


def _tearing_down(signum: int, frame: object) -> None:
    """SIGTERM while the teardowns of the first run: they go on."""


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    if threading.current_thread() is threading.main_thread():  # where Python lets a handler be set
        signal.signal(signal.SIGTERM, _interrupted)
