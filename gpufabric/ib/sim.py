"""ibsim, the real OpenSM and the real infiniband-diags on this machine, no kernel module.

ibsim simulates the fabric in a topology file; every tool reaches it through the
`libumad2sim.so` it preloads, on the node `SIM_HOST` names (a node id of the file), over
abstract Unix sockets named after `IBSIM_SOCKNAME` (unique per simulator here, so two
simulators never meet). ibsim's console reads commands from its standard input: it gets a
FIFO it holds open for both reading and writing, so it never sees end of file (on end of
file ibsim spins) and `console()` can write to it at any time.

Every process is started in its own session, remembered by PID, and stopped by that PID.
`libumad2sim.so` gives each tool a fake sysfs, `./sys-<pid>`, in its working directory, and
removes it when the tool exits normally: tools run in the simulator's folder, and what a
killed tool leaves there is removed with the folder's other files when the simulator stops.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gpufabric.ib.errors import fail

UMAD2SIM_GLOB = "/usr/lib/*/umad2sim/libumad2sim.so"
TOOLS = ("ibsim", "opensm", "ibnetdiscover")


MAD_TIMEOUT_RETRIES = 1  # runs of a tool again after its MADs timed out (Simulator.run)


def _mad_timed_out(stderr: str) -> bool:
    """libibmad's words for a MAD no one answered in time (its `ibwarn` lines): the simulator was slow, not the
    fabric wrong."""
    return "_do_madrpc failed" in stderr and "timed out" in stderr.lower()


def umad2sim() -> str | None:
    found = sorted(glob.glob(UMAD2SIM_GLOB))
    return found[0] if found else None


def missing() -> list[str]:
    """What this machine lacks to run the simulated fabric (empty when all is there)."""
    path = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin:/sbin"
    out = [t for t in TOOLS if shutil.which(t, path=path) is None]
    if umad2sim() is None:
        out.append("libumad2sim.so (ibsim-utils)")
    return out


def _tool(name: str) -> str:
    return shutil.which(name, path=os.environ.get("PATH", "") + os.pathsep + "/usr/sbin:/sbin") or name


def _stop(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM the process by its PID, SIGKILL if it is still there after `timeout`; reap it."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout)


def _drop_fake_sysfs(folder: Path) -> None:
    """The `sys-<pid>` folders libumad2sim.so made in `folder` for tools that did not exit cleanly."""
    for leftover in folder.glob("sys-[0-9]*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)


def _wait_for(path: Path, text: str, timeout: float, proc: subprocess.Popen[bytes], what: str) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if path.exists() and text in path.read_text(errors="replace"):
            return time.monotonic() - start
        if proc.poll() is not None:
            raise fail(what, f"exited with {proc.returncode} before {text!r}", f"read {path}")
        time.sleep(0.05)
    raise fail(what, f"no {text!r} after {timeout:.0f} s", f"read {path}")


class Simulator:
    """One ibsim on one topology file, with its console FIFO and its tools' environment."""

    def __init__(
        self, workdir: Path, topology: Path, sockname: str | None = None, limits: tuple[int, int, int] | None = None
    ) -> None:
        self.workdir = workdir
        self.topology = topology
        self.limits = limits  # nodes, switches, ports: ibsim's -N -S -P, past its defaults (2048, 256, 13312)
        # Given: an ibsim another process started (a lab's record); the tools reach it by this name.
        self.sockname = sockname or f"gpufabric-{os.getpid()}-{id(self):x}"
        self.fifo = workdir / "ibsim.console"
        self.log = workdir / "ibsim.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> float:
        """Start ibsim; seconds until its fabric is parsed and it serves."""
        if self.proc is not None:
            raise RuntimeError("ibsim already started")
        os.mkfifo(self.fifo)
        console = os.open(self.fifo, os.O_RDWR)  # both ends held: no end of file, ever
        try:
            with self.log.open("wb") as log:
                sizes = [f"-{flag}{n}" for flag, n in zip("NSP", self.limits or (), strict=False)]
                self.proc = subprocess.Popen(
                    [_tool("ibsim"), *sizes, "-s", str(self.topology)],
                    stdin=console,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, "IBSIM_SOCKNAME": self.sockname},
                    start_new_session=True,
                )
        finally:
            os.close(console)
        return _wait_for(self.log, "Network simulator ready", timeout, self.proc, "ibsim")

    def env(self, host: str | None = None) -> dict[str, str]:
        """The environment a tool needs to sit on node id `host` of the simulated fabric."""
        lib = umad2sim()
        if lib is None:
            raise fail("ibsim", "libumad2sim.so not found", "install ibsim-utils")
        env = {**os.environ, "LD_PRELOAD": lib, "IBSIM_SOCKNAME": self.sockname}
        if host:
            env["SIM_HOST"] = host
        return env

    def run(self, *args: str, host: str | None = None, timeout: float = 120.0) -> str:
        """Run a diagnostic (ibnetdiscover, iblinkinfo, ibtracert...) on the fabric; its stdout.

        A tool whose MADs went unanswered (libibmad's 1 s a try, three tries) is run once more: ibsim is one
        process answering every MAD of the fabric, and on a machine whose cores are taken it can answer none for
        seconds, where a real subnet's agents answer in microseconds. Any other failure is the answer."""
        for attempt in range(1 + MAD_TIMEOUT_RETRIES):
            done = subprocess.run(
                [_tool(args[0]), *args[1:]],
                capture_output=True,
                text=True,
                env=self.env(host),
                cwd=self.workdir,
                timeout=timeout,
                check=False,
            )
            if done.returncode == 0 or not _mad_timed_out(done.stderr) or attempt == MAD_TIMEOUT_RETRIES:
                break
        if done.returncode != 0:
            raise fail(args[0], f"exited {done.returncode}: {done.stderr.strip()[-400:]}", "see the simulator's log")
        return done.stdout

    def console(self, command: str) -> None:
        """One console command (`unlink "node"[port]`, `relink ...`)."""
        with open(self.fifo, "w") as fifo:
            fifo.write(command.rstrip("\n") + "\n")

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None
        with contextlib.suppress(FileNotFoundError):
            self.fifo.unlink()
        _drop_fake_sysfs(self.workdir)


class OpenSm:
    """The real OpenSM on the simulated fabric, with its files in `workdir` only."""

    def __init__(self, sim: Simulator, workdir: Path, config: Path, host: str) -> None:
        self.sim = sim
        self.workdir = workdir
        self.config = config
        self.host = host  # node id the SM sits on
        self.log = workdir / "opensm.log"
        self.stdout = workdir / "opensm.out"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 120.0, ready: str = "SUBNET UP") -> float:
        """Start OpenSM (no daemon); seconds until its log says `ready`: the master's first sweep
        reports SUBNET UP, a standby "Entering STANDBY state". A log of an earlier run is kept
        beside, as opensm.log.1: OpenSM appends, and `ready` must be this run's."""
        if self.log.exists():
            self.log.replace(self.log.with_name(self.log.name + ".1"))
        env = self.sim.env(self.host)
        env["OSM_CACHE_DIR"] = env["OSM_TMP_DIR"] = str(self.workdir)  # guid2lid & co. stay here
        with self.stdout.open("wb") as out:
            self.proc = subprocess.Popen(
                [_tool("opensm"), "-F", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self.workdir,
                start_new_session=True,
            )
        return _wait_for(self.log, ready, timeout, self.proc, "opensm")

    def sweeps(self) -> int:
        """How many sweeps this run has finished (its log's SUBNET UP lines)."""
        return self.log.read_text(errors="replace").count("SUBNET UP") if self.log.exists() else 0

    def swept(self, after: int, timeout: float) -> bool:
        """Whether a sweep past the first `after` ends within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while self.sweeps() <= after:
            if time.monotonic() > deadline or (self.proc is not None and self.proc.poll() is not None):
                return False
            time.sleep(0.05)
        return True

    def stop(self) -> None:
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None
        _drop_fake_sysfs(self.workdir)


# The primary sweeps again when the standby's port announces its SM (a trap): within a tenth of a second
# on an idle machine. What it waits for past this is an answer that will not come (below).
SWEEP_AFTER_STANDBY_S = 15.0


@dataclass(frozen=True)
class Managers:
    """The subnet managers started: the primary's time to its first SUBNET UP, and its restarts."""

    subnet_up_seconds: float
    primary_restarts: int = 0  # started again: it had stopped sweeping when the standby joined


def start_managers(primary: OpenSm, standby: OpenSm | None = None, timeout: float = 120.0) -> Managers:
    """The primary to its first SUBNET UP, then the standby, then proof that the primary still sweeps.

    ibsim's MAD layer (libumad2sim) has no timeouts: where the kernel would answer a request that got no
    reply with a timeout, here the request waits for ever. One lost while the standby binds its agents
    leaves the primary waiting in that sweep for good: it still answers SMInfo (so it looks master) but
    never sweeps again, and no cut cable, relinked port or new partition is ever acted on. Seen under
    load. Started again once, it finds the standby settled, and `start` returns once it has swept."""
    up = primary.start(timeout=timeout, ready="SUBNET UP")
    if standby is None:
        return Managers(up)
    before = primary.sweeps()
    standby.start(timeout=timeout, ready="Entering STANDBY state")
    if primary.swept(before, SWEEP_AFTER_STANDBY_S):
        return Managers(up)
    primary.stop()
    primary.start(timeout=timeout, ready="SUBNET UP")
    return Managers(up, primary_restarts=1)


def limits(nodes: int, switches: int, ports: int) -> tuple[int, int, int] | None:
    """ibsim's -N -S -P for a fabric past its defaults (None within them), with room to spare."""
    if nodes <= 2048 and switches <= 256 and ports <= 13312:
        return None
    return max(2048, nodes + 64), max(256, switches + 16), max(13312, ports + 1024)


@contextlib.contextmanager
def running(workdir: Path, topology: Path, size: tuple[int, int, int] | None = None) -> Iterator[Simulator]:
    """ibsim for the duration of a `with`, stopped (by PID) whatever happens."""
    sim = Simulator(workdir, topology, limits=size)
    try:
        sim.start()
        yield sim
    finally:
        sim.stop()
