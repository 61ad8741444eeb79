"""The tests' hand on a switch's revert timer: it is armed for long, and its wait is ended on purpose.

A commit with `revert_in=N` on an FRR or SONiC switch starts, in a session of its own on the switch,
`sh -c 'sleep N; mv pending reverting || exit 0; sh revert.sh ...'` and writes that shell's PID into the
pending marker (`DeviceFiles.arm_timer_script`). A timer of a few seconds races the test that reads the
pending state on a loaded machine (and can even fire before the apply is done). So the tests arm it for
minutes, read what they need, then end the timer's `sleep`: the timer's own shell goes on exactly as when
its seconds run out, and the switch reverts by itself, with no controller connected. Nothing is faked:
only the waiting is cut short.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

LONG = 600  # seconds: what the tests arm; no machine is that slow to read a pending commit


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue  # the process ended while the table was read
        if fields[1] == str(pid):  # fields: state, ppid, ...
            found.append(int(stat.parent.name))
    return found


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    except (FileNotFoundError, ProcessLookupError):
        return []


def timer_sleep(marker: Path) -> tuple[int, list[str]]:
    """The PID and command line of the `sleep` the armed timer (named by `marker`) waits in."""
    timer = int(marker.read_text().splitlines()[0].split()[1])  # "boot-id pid start-time"
    found: list[tuple[int, list[str]]] = []

    def sleeping() -> bool:  # the timer's shell forks its sleep a moment after the marker is written
        found[:] = [(pid, cmd) for pid in _children(timer) if (cmd := _cmdline(pid))[:1] == ["sleep"]]
        return len(found) == 1

    until(sleeping, f"the timer (PID {timer}) waiting in one sleep", seconds=30)
    return found[0]


def fire(marker: Path, armed_for: int = LONG) -> None:
    """End the timer's wait now, as if `armed_for` seconds had passed; asserts it was armed for that long."""
    pid, cmd = timer_sleep(marker)
    assert cmd == ["sleep", str(armed_for)], cmd
    os.kill(pid, signal.SIGTERM)


def until(check: Callable[[], bool], what: str, seconds: float = 120.0) -> None:
    """Wait for `check` to hold; a loaded machine takes its time, a broken revert never comes."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds:g} s: {what}"
        time.sleep(0.2)


def reverted(marker: Path) -> bool:
    """The timer is done: it took the marker (renamed `reverting`) and removed it after the revert ran."""
    return not marker.exists() and not marker.with_name(marker.name.replace("pending", "reverting")).exists()


def fire_and_wait(marker: Path, armed_for: int = LONG) -> None:
    fire(marker, armed_for)
    until(lambda: reverted(marker), f"the switch's timer ({marker}) reverting")


def end_left_over(marker: Path) -> None:
    """A timer a failed test left armed is fired and waited for: the next test finds no pending commit."""
    if not marker.exists():
        return
    with contextlib.suppress(AssertionError, FileNotFoundError, ValueError, IndexError):
        os.kill(timer_sleep(marker)[0], signal.SIGTERM)
        until(lambda: reverted(marker), f"the left-over timer ({marker}) reverting")
