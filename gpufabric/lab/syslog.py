"""The lab's syslog: what each switch's FRR said, in a log file per switch.

A switch's FRR logs to syslog (`log syslog informational`, as the rendered configuration has it), and a
machine running the lab often has no syslog daemon at all: FRR's messages went nowhere, and a session that
went down under a loaded machine, or a watchfrr that ended, left no trace to read afterwards. When nothing
serves /dev/log, `lab up` serves it with this module's process: each message goes to the log of the switch
whose daemon sent it, `nodes/<switch>/frr.log` in the lab's state folder, while the lab runs.

Whose message it is comes from the kernel, not from the message: the sender's PID (SCM_CREDENTIALS), whose
command line names the switch's FRR pathspace (`-N <switch>`, as FRR's init script starts each daemon). A
message from any other process (an SSH server, a subnet manager) is dropped. A daemon's last words may be read
after it ended, when its command line is gone: a PID seen before is still its switch's; a message from a
sender never seen and gone already is kept in the state folder's `syslog-sender-gone.log`, not dropped. What
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

from gpufabric.outputs import shown
from gpufabric.owned_files import open_owned

SOCKET = Path("/dev/log")
LOG_NAME = "frr.log"
GONE_LOG = "syslog-sender-gone.log"  # in the state folder: messages whose sender ended before they were read
MAX_LOG_BYTES = 16 * 1024 * 1024  # per switch: a daemon logging in a loop fills no disk
MAX_COMMAND_LINE = 65536  # bytes of a sender's command line read: a daemon's flags come first
MAX_MESSAGE = 8192  # bytes of one message kept (syslog's own limit is smaller on most senders)
QUEUE_LENGTH = 4096  # datagrams queued for this process before a sender waits: every switch's burst at once
_CREDENTIALS = struct.calcsize("3i")
_CLONE_NEWNET = 0x40000000  # <sched.h>
_QUEUE_SYSCTL = "/proc/sys/net/unix/max_dgram_qlen"  # the calling process's network namespace's
# What glibc's syslog() puts before a message: <priority>, then the local time as RFC 3164 writes it.
_HEADER = re.compile(r"^<\d{1,3}>(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d )?")


GONE = ""  # what switch_of answers for a sender that has ended (its command line can no longer be read)


def switch_of(pid: int, switches: frozenset[str]) -> str | None:
    """The lab switch whose FRR daemon `pid` is: its command line's `-N <switch>` (or `--pathspace`), when that
    names one of `switches`; None for any other process; GONE for one that has ended (a zombie's command line
    is empty)."""
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
            return name if name in switches else None  # the lab's names only: never a path of the sender's
    return None


def line_of(message: bytes) -> str:
    """One message as one line of text: the syslog priority and the sender's local time taken off (each line
    is stamped in UTC when received), anything not printable escaped."""
    text = message[:MAX_MESSAGE].decode("utf-8", "replace").rstrip("\n\0")
    text = _HEADER.sub("", text, count=1)
    return shown(text, MAX_MESSAGE)


class Logs:
    """Each switch's log, appended to, opened once, never past MAX_LOG_BYTES (then one line says so); the
    switch GONE's is the state folder's GONE_LOG."""

    def __init__(self, folder_of: Callable[[str], Path], gone: Path) -> None:
        self.folder_of = folder_of
        self.gone = gone
        self.files: dict[str, tuple[int, int]] = {}  # switch -> (fd, bytes written)

    def write(self, switch: str, line: str) -> None:
        fd, written = self.files.get(switch) or (self._open(switch), 0)
        if fd < 0 or written >= MAX_LOG_BYTES:
            return
        data = (line + "\n").encode()
        if written + len(data) >= MAX_LOG_BYTES:
            data = f"(this log reached {MAX_LOG_BYTES} bytes: later messages are dropped)\n".encode()
        with contextlib.suppress(OSError):  # a full disk loses a line, never the reading of the socket
            os.write(fd, data)
        self.files[switch] = (fd, written + len(data))

    def _open(self, switch: str) -> int:
        """The switch's log, a plain file of ours (never a link planted in its place); -1: it cannot be, and
        the switch's messages are dropped (the socket is read on)."""
        path = self.gone if switch == GONE else self.folder_of(switch) / LOG_NAME
        try:
            return open_owned(path, os.geteuid(), os.O_WRONLY | os.O_APPEND, "a syslog file of the lab's", OSError)
        except OSError:
            return -1

    def close(self) -> None:
        for fd, _ in self.files.values():
            if fd >= 0:
                os.close(fd)
        self.files.clear()


def serve(path: Path, switches: frozenset[str], logs: Logs, ready: Callable[[], None]) -> None:
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
            switch = _whose(pid, switches, seen) if pid else None
            if switch is not None:
                logs.write(switch, f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime())}Z {line_of(message)}")
    finally:
        sock.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _whose(pid: int, switches: frozenset[str], seen: dict[int, str]) -> str | None:
    """The switch a message of `pid` goes to: as its command line says while it runs (a PID reused since by
    another process is read afresh), as it said before once it has ended, GONE when it never was seen."""
    switch = switch_of(pid, switches)
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
    """`python -m gpufabric.lab.syslog SOCKET STATE_DIR SWITCH...`: what `lab up` starts (see the module)."""
    path, state_dir, names = Path(argv[0]), Path(argv[1]), frozenset(argv[2:])
    own_queue()
    logs = Logs(lambda switch: state_dir / "nodes" / switch, state_dir / GONE_LOG)
    try:
        serve(path, names, logs, lambda: print("ready", flush=True))
    finally:
        logs.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
