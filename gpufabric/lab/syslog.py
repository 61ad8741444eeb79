"""The lab's syslog: what each switch's FRR said, in a log file per switch.

A switch's FRR logs to syslog (`log syslog informational`, as the rendered configuration has it), and a
machine running the lab often has no syslog daemon at all: FRR's messages went nowhere, and a session that
went down under a loaded machine, or a watchfrr that ended, left no trace to read afterwards. When nothing
serves /dev/log, `lab up` serves it with this module's process: each message goes to the log of the switch
whose daemon sent it, `nodes/<switch>/frr.log` in its lab's state folder. Labs side by side share the one
socket, so one process serves them all: a switch's pathspace names its lab (gpufabric/fleet/lab/names.py), and
the labs' registry its state folder. The process outlives the lab that started it while other labs are up;
the last `lab down` stops it.

Whose message it is comes from the kernel, not from the message: the sender's PID (SCM_CREDENTIALS), whose
command line names the switch's FRR pathspace (`-N <switch>`, as FRR's init script starts each daemon). A
message from any other process (an SSH server, a subnet manager) is dropped. A daemon's last words may be read
after it ended, when its command line is gone: a PID seen before is still its switch's; a message from a
sender never seen and gone already is kept in `syslog-sender-gone.log` beside the registry, not dropped. What
a message holds is text written by a process: shown with its control characters escaped, one line each, and
each log bounded.
Where a syslog daemon serves /dev/log already, the lab leaves it alone: FRR's messages are in its logs.

A sender waits on this process: glibc's syslog() blocks once the socket's queue is full, and a machine's queue
is 10 datagrams by default (`net.unix.max_dgram_qlen`). So the socket is made in a network namespace of the
process's own, whose queue is QUEUE_LENGTH long (the namespace holds no interface: the socket is bound on the
file system, which every namespace shares), and `lab up` runs the process at the FRR daemons' priority.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import re
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path

from gpufabric.errors import GpufabricError
from gpufabric.fleet.lab import registry
from gpufabric.fleet.lab.names import owner_of
from gpufabric.outputs import shown
from gpufabric.owned_files import open_owned

SOCKET = Path("/dev/log")
LOG_NAME = "frr.log"
GONE_LOG = "syslog-sender-gone.log"  # beside the registry: messages whose sender ended before they were read
MAX_LOG_BYTES = 16 * 1024 * 1024  # per switch: a daemon logging in a loop fills no disk
MAX_COMMAND_LINE = 65536  # bytes of a sender's command line read: a daemon's flags come first
MAX_MESSAGE = 8192  # bytes of one message kept (syslog's own limit is smaller on most senders)
QUEUE_LENGTH = 4096  # datagrams queued for this process before a sender waits: every switch's burst at once
_CREDENTIALS = struct.calcsize("3i")
_CLONE_NEWNET = 0x40000000  # <sched.h>
_QUEUE_SYSCTL = "/proc/sys/net/unix/max_dgram_qlen"  # the calling process's network namespace's
# What glibc's syslog() puts before a message: <priority>, then the local time as RFC 3164 writes it.
_HEADER = re.compile(r"^<\d{1,3}>(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d )?")
# A pathspace as a lab names it (`<switch>` or `<lab>_<switch>`): never a path, so never a folder elsewhere.
_PATHSPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
ROUTE_TTL = 1.0  # seconds a pathspace's folder is trusted before the registry is read again


GONE = ""  # what switch_of answers for a sender that has ended (its command line can no longer be read)


def switch_of(pid: int) -> str | None:
    """The FRR pathspace a daemon `pid` runs in: its command line's `-N <pathspace>` (or `--pathspace`), when
    that is a name a lab could have given; None for any other process; GONE for one that has ended (a zombie's
    command line is empty)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(MAX_COMMAND_LINE)
    except OSError:
        return GONE
    if not raw:
        return GONE
    args = raw.split(b"\0")
    for flag, value in itertools.pairwise(args):
        if flag in (b"-N", b"--pathspace"):
            name = value.decode("ascii", "replace")
            return name if _PATHSPACE.fullmatch(name) and ".." not in name else None
    return None


class Router:
    """Where a pathspace's messages go: `nodes/<pathspace>` in the state folder of the lab up that owns it (as
    the registry says), when that folder is a real folder; None for a pathspace of no lab up. Looked up again
    after ROUTE_TTL, so a lab brought up later, or down and up again in another folder, is followed."""

    def __init__(self, registry_dir: Path | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.registry_dir = registry_dir
        self.clock = clock
        self.known: dict[str, tuple[float, Path | None]] = {}

    def folder(self, pathspace: str) -> Path | None:
        now = self.clock()
        cached = self.known.get(pathspace)
        if cached is not None and now - cached[0] < ROUTE_TTL:
            return cached[1]
        found = self._look_up(pathspace)
        if len(self.known) > 65536:  # pathspaces of labs long gone: forgotten, never grown without bound
            self.known.clear()
        self.known[pathspace] = (now, found)
        return found

    def _look_up(self, pathspace: str) -> Path | None:
        try:
            lab = registry.find(owner_of(pathspace), self.registry_dir)
        except GpufabricError:  # a record that cannot be read, or a name no lab has: no lab's
            return None
        if lab is None:
            return None
        folder = Path(lab.state_dir) / "nodes" / pathspace
        return folder if folder.is_dir() and not folder.is_symlink() else None


def line_of(message: bytes) -> str:
    """One message as one line of text: the syslog priority and the sender's local time taken off (each line
    is stamped in UTC when received), anything not printable escaped."""
    text = message[:MAX_MESSAGE].decode("utf-8", "replace").rstrip("\n\0")
    text = _HEADER.sub("", text, count=1)
    return shown(text, MAX_MESSAGE)


class Logs:
    """Each switch's log, appended to, opened once per folder, never past MAX_LOG_BYTES (then one line says so);
    a sender GONE's goes to `gone`. A switch whose folder is another now (its lab down and up again) gets a
    new file."""

    def __init__(self, gone: Path) -> None:
        self.gone = gone
        self.files: dict[str, tuple[int, int, Path | None, tuple[int, int]]] = {}  # key -> fd, bytes, folder, id

    def write(self, switch: str, folder: Path | None, line: str) -> None:
        """Append `line` to `folder`'s log (the GONE log when `switch` is GONE)."""
        identity = _identity(folder) if folder is not None else (0, 0)
        entry = self.files.get(switch)
        if entry is not None and (entry[2] != folder or entry[3] != identity):
            self._close(switch)
            entry = None
        fd, written = (entry[0], entry[1]) if entry is not None else (self._open(switch, folder), 0)
        if fd < 0 or written >= MAX_LOG_BYTES:
            self.files[switch] = (fd, written, folder, identity)
            return
        data = (line + "\n").encode()
        if written + len(data) >= MAX_LOG_BYTES:
            data = f"(this log reached {MAX_LOG_BYTES} bytes: later messages are dropped)\n".encode()
        with contextlib.suppress(OSError):  # a full disk loses a line, never the reading of the socket
            os.write(fd, data)
        self.files[switch] = (fd, written + len(data), folder, identity)

    def _open(self, switch: str, folder: Path | None) -> int:
        """The switch's log, a plain file of ours (never a link planted in its place); -1: it cannot be, and
        the switch's messages are dropped (the socket is read on)."""
        path = self.gone if switch == GONE or folder is None else folder / LOG_NAME
        try:
            return open_owned(path, os.geteuid(), os.O_WRONLY | os.O_APPEND, "a syslog file of the lab's", OSError)
        except OSError:
            return -1

    def _close(self, switch: str) -> None:
        fd = self.files.pop(switch)[0]
        if fd >= 0:
            os.close(fd)

    def close(self) -> None:
        for switch in list(self.files):
            self._close(switch)


def _identity(folder: Path) -> tuple[int, int]:
    try:
        found = os.stat(folder)
    except OSError:
        return (0, 0)
    return (found.st_dev, found.st_ino)


def serve(path: Path, router: Router, logs: Logs, ready: Callable[[], None]) -> None:
    """Serve the syslog socket `path` until SIGTERM: each message from a switch's FRR to its log. The socket is
    removed when this ends. Never blocks on anything but the socket: a sender waits on no file write."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
    sock.bind(str(path))
    os.chmod(path, 0o666)  # as a syslog daemon's: any local process may log
    seen: dict[int, str] = {}  # PID -> its switch, for the messages a daemon sent just before it ended
    stopping = False

    def stop(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sock.settimeout(0.5)
    ready()
    try:
        while not stopping:
            try:
                message, ancillary, _flags, _addr = sock.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(_CREDENTIALS))
            except (TimeoutError, InterruptedError):
                continue
            pid = _sender(ancillary)
            switch = _whose(pid, seen) if pid else None
            if switch is None:
                continue
            folder = None if switch == GONE else router.folder(switch)
            if switch == GONE or folder is not None:
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
                logs.write(switch, folder, f"{stamp}Z {line_of(message)}")
    finally:
        sock.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _whose(pid: int, seen: dict[int, str]) -> str | None:
    """The pathspace a message of `pid` goes to: as its command line says while it runs (a PID reused since by
    another process is read afresh), as it said before once it has ended, GONE when it never was seen."""
    switch = switch_of(pid)
    if switch == GONE:
        return seen.get(pid, GONE)
    if switch is None:
        seen.pop(pid, None)
    else:
        seen[pid] = switch
    return switch


def _sender(ancillary: list[tuple[int, int, bytes]]) -> int | None:
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(data) >= _CREDENTIALS:
            pid, _uid, _gid = struct.unpack("3i", data[:_CREDENTIALS])
            return pid
    return None


def served(path: Path = SOCKET) -> bool:
    """Something serves the syslog socket `path` (a syslog daemon, or a lab's): a datagram socket connects."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def own_queue(length: int = QUEUE_LENGTH) -> bool:
    """This process in a network namespace of its own whose unix datagram queue is `length` long, for the
    sockets it makes from now on; False where it may not (not root, or /proc/sys read-only): a queue of the
    kernel's default length, 10, as the machine's usually is. Either way the socket serves."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNET) != 0:
        return False
    try:
        fd = os.open(_QUEUE_SYSCTL, os.O_WRONLY)
        try:
            os.write(fd, str(length).encode())
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def main(argv: list[str]) -> int:
    """`python -m gpufabric.lab.syslog SOCKET REGISTRY_DIR`: what `lab up` starts (see the module)."""
    path, registry_dir = Path(argv[0]), Path(argv[1])
    own_queue()
    logs = Logs(registry_dir.parent / GONE_LOG)
    try:
        serve(path, Router(registry_dir), logs, lambda: print("ready", flush=True))
    finally:
        logs.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
