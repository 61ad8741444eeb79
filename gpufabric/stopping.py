"""SIGTERM stops a run as Ctrl-C does, for the command line and the test suite alike.

A service manager, `timeout` and a CI time limit stop a process with SIGTERM, and Python's default ends it on
the spot: none of its `finally` blocks run (a rollout's trail unwritten, a half-written file left, a lab's
teardown skipped). As KeyboardInterrupt, the run stops where it is and cleans up. Forked workers take the
default back (gpufabric.parallel.worker_signals)."""

from __future__ import annotations

import signal
import threading


def sigterm_interrupts() -> None:
    """From now on SIGTERM raises KeyboardInterrupt in the main thread (only there may a handler be set)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)


def _terminated(signum: int, frame: object) -> None:
    # One stop is enough: a second SIGTERM (a whole process group signalled, then its leader passing it on)
    # raised inside the cleanups would cut them short. SIGKILL still ends a cleanup that hangs. Not SIG_IGN,
    # which a program the cleanups start would inherit through exec; a handler of Python's is reset there.
    signal.signal(signal.SIGTERM, _stopping)
    raise KeyboardInterrupt


def _stopping(signum: int, frame: object) -> None:
    """SIGTERM while the cleanups of the first run: they go on."""
