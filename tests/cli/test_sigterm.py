"""SIGTERM (a service manager stopping a unit, `timeout`, a CI runner) ends a command as Ctrl-C does: its
cleanups run, it says so in a line and exits 130, with no traceback. Python's default would end the process
on the spot, with none of its `finally` blocks run (a rollout's trail unwritten, a temporary file left)."""

from __future__ import annotations

import contextlib
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import INVENTORY, cli_env

from gpufabric.pids import alive

# read(2)'s number, the first field of /proc/PID/syscall while a process is blocked in it.
READ = {"x86_64": "0", "aarch64": "63"}


def _reading_stdin(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return fields[:2] == [READ[platform.machine()], "0x0"]  # read(0, ...)


@pytest.mark.skipif(platform.machine() not in READ, reason="read(2)'s number is known for x86_64 and aarch64")
def test_sigterm_ends_a_command_as_ctrl_c_does():
    # `ib discover --from -` waits on its standard input, which this test holds open and never writes.
    command = ["gpufabric", "ib", "discover", str(INVENTORY / "examples" / "lab-infiniband.yml"), "--from", "-"]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=cli_env())  # fmt: skip
    try:
        waited = time.monotonic()
        while not _reading_stdin(proc.pid):  # the handler is set before the command runs, so before its read
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() - waited < 300, "the command never came to read its standard input"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, (proc.returncode, err)
    assert err.strip().startswith("interrupted: ") and "audit trail" in err, err
    assert "Traceback" not in err and out == ""


SUITE = """
import pathlib
import time

import pytest

HERE = pathlib.Path(__file__).parent


@pytest.fixture
def made():
    yield
    # What a lab's `lab down` is to the real suite; the test signals again while it runs.
    (HERE / "tearing").write_text("yes")
    while not (HERE / "go").exists():
        time.sleep(0.05)
    (HERE / "torn-down").write_text("yes")


def test_runs_until_stopped(made):
    (HERE / "running").write_text("yes")
    time.sleep(3600)
"""


def _until(path: Path, proc: subprocess.Popen[str], what: str) -> None:
    waited = time.monotonic()
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - waited < 300, what
        time.sleep(0.1)


def test_sigterm_stops_the_test_suite_with_its_teardowns(tmp_path):
    """The suite's own plugin (tests/stop_on_sigterm.py): a run stopped by SIGTERM still tears down, and a
    second SIGTERM (CI signals the whole group, scripts/test.sh passes it on) does not cut the teardown short."""
    (tmp_path / "test_stopped.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "stop_on_sigterm",
        "test_stopped.py",
    ]
    env = cli_env(PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        _until(tmp_path / "running", proc, "the test never started")
        os.kill(proc.pid, signal.SIGTERM)
        _until(tmp_path / "tearing", proc, "the teardown never started")
        os.kill(proc.pid, signal.SIGTERM)
        (tmp_path / "go").write_text("yes")
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert (tmp_path / "torn-down").exists(), out
    assert proc.returncode == 2 and "KeyboardInterrupt" in out, (proc.returncode, out)  # pytest's "interrupted"


FORKED = """
import contextlib
import os
import signal
from gpufabric.stopping import _terminated, sigterm_interrupts
from gpufabric.parallel import fork_map

sigterm_interrupts()  # as the command line does


def held_at_fork():  # in each child, before anything of its own runs
    mask = next(line for line in open("/proc/self/status") if line.startswith("SigBlk:")).split()[1]
    os.write(1, f"fork {int(mask, 16) >> (signal.SIGTERM - 1) & 1}\\n".encode())


os.register_at_fork(after_in_child=held_at_fork)


def held():
    return signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def task(number):  # in a worker, once it runs tasks
    return signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, held()


for _ in range(5):
    assert set(fork_map(task, [1, 2, 3, 4], 2)) == {(True, False)}
print("parent", signal.getsignal(signal.SIGTERM) is _terminated, held())
"""


def test_forked_workers_take_sigterm_only_once_they_end_on_it():
    """A pool ends its forked workers with SIGTERM, at times one that has not started yet. Forked with the command
    line's handler and SIGTERM free, such a worker raised KeyboardInterrupt (a traceback), and at times then
    waited on the task queue with the pool waiting for it forever. Each is forked with SIGTERM held, and takes it
    once its handler is the default again; the parent gets its own handler and mask back."""
    command = [sys.executable, "-c", FORKED]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=cli_env(), check=False)
    assert done.returncode == 0, done
    forks = [line for line in done.stdout.splitlines() if line.startswith("fork ")]
    assert len(forks) >= 10 and set(forks) == {"fork 1"}, done.stdout  # every worker forked with SIGTERM held
    assert done.stdout.splitlines()[-1] == "parent True False", done.stdout
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr


def test_a_command_the_tests_run_is_stopped_with_sigterm_when_the_run_is_interrupted(tmp_path, monkeypatch):
    """The tests' `run`, interrupted (Ctrl-C, or SIGTERM taken as one), gives the command SIGTERM and time to undo
    what it started: subprocess.run's SIGKILL left a simulator and its subnet managers running."""
    import conftest

    started, undone = tmp_path / "started", tmp_path / "undone"
    script = f"trap 'echo undone > {undone}; exit 3' TERM; echo started > {started}; while :; do sleep 0.1; done"
    real = subprocess.Popen.communicate
    timeouts: list[float | None] = []

    def communicate(self, input=None, timeout=None):
        timeouts.append(timeout)
        if len(timeouts) == 1:  # the run's own wait: interrupted once the command is under way
            waited = time.monotonic()
            while not started.exists():
                assert time.monotonic() - waited < 300, "the command never started"
                time.sleep(0.05)
            raise KeyboardInterrupt
        return real(self, input, timeout)

    monkeypatch.setattr(subprocess.Popen, "communicate", communicate)
    with pytest.raises(KeyboardInterrupt):
        conftest.run("sh", "-c", script)
    assert undone.read_text() == "undone\n"  # its TERM trap ran: it was not killed
    assert timeouts == [None, conftest.STOP_SECONDS]


def test_a_group_the_tests_started_is_stopped_whole_even_what_ignores_sigterm(tmp_path: Path) -> None:
    """stop_command(group=True), as the Molecule tests stop `molecule test`: the leader gets SIGTERM and time to
    undo its work; a worker it left that ignores SIGTERM (an Ansible fork) is killed with the group after."""
    import conftest

    undone, worker = tmp_path / "undone", tmp_path / "worker"
    script = (
        f"sh -c 'trap \"\" TERM; exec sleep 600' >/dev/null 2>&1 & echo $! > {worker}; "
        f"trap 'echo undone > {undone}; exit 3' TERM; while :; do sleep 0.1; done"
    )
    pipe = subprocess.PIPE
    proc = subprocess.Popen(["sh", "-c", script], stdout=pipe, stderr=pipe, start_new_session=True)
    try:
        waited = time.monotonic()
        while not (worker.exists() and worker.read_text().strip()):
            assert time.monotonic() - waited < 300, "the worker never started"
            time.sleep(0.05)
        pid = int(worker.read_text())
        conftest.stop_command(proc, group=True, grace=120)
        outlived = _still_running_after(pid, 60)
    finally:  # whatever the test found, nothing of the group is left behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 3 and undone.read_text() == "undone\n"  # the leader ended by its own TERM trap
    assert not outlived, f"the worker {pid} outlived its group's SIGKILL"


def _still_running_after(pid: int, seconds: float) -> bool:
    """pid still runs after `seconds` (SIGKILL is delivered at once: its end is seen as soon as the kernel has it)."""
    waited = time.monotonic()
    while time.monotonic() - waited < seconds:
        if not alive(pid):
            return False
        time.sleep(0.05)
    return True
