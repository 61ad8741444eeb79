"""The lab's syslog (gpufabric/lab/syslog.py) on a socket of the test's own: each switch's FRR messages in its log,
named by the sender's PID as the kernel reports it, nothing from any other process, every message one line of
text, each log bounded; started once, left alone where something else serves the socket, stopped with its
socket gone. Offline, no root: the senders are this machine's processes whose command lines carry `-N <switch>`
as FRR's daemons' do."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpufabric.fleet.lab.state import LabState
from gpufabric.lab import daemons, frr_node, syslog
from gpufabric.pids import alive

SWITCHES = ("leaf1", "leaf2")
# A sender: each line of its stdin (hex) sent as one message; it ends at EOF. It runs until the test ends it, as a
# daemon does: a message is named by its sender's command line, read when the message is.
SENDER = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)\n"
    "for line in sys.stdin:\n"
    "    s.sendto(bytes.fromhex(line.strip()), {path!r})\n"
    "    print('sent', flush=True)\n"
)
WAIT = 300.0  # a loaded machine's bound, never reached by a working server


class Sender:
    """A process whose command line ends with `args` (`-N leaf1`: a daemon of leaf1's FRR, as its command line
    names the pathspace), sending what it is given to the socket."""

    def __init__(self, path: Path, *args: str) -> None:
        command = [sys.executable, "-S", "-c", SENDER.format(path=str(path)), *args]  # -S: a quick start
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def send(self, *messages: bytes) -> Sender:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        for message in messages:
            self.proc.stdin.write(message.hex() + "\n")
            self.proc.stdin.flush()
            assert self.proc.stdout.readline() == "sent\n"
        return self

    def end(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(WAIT)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.fixture
def senders():
    started: list[Sender] = []

    def start(path: Path, *args: str) -> Sender:
        started.append(Sender(path, *args))
        return started[-1]

    yield start
    for sender in started:
        if sender.proc.returncode is None:
            sender.end()


def _until(what: str, ready) -> None:
    waited = time.monotonic()
    while not ready():
        assert time.monotonic() - waited < WAIT, what
        time.sleep(0.05)


@pytest.fixture
def lab(tmp_path: Path):
    state_dir = tmp_path / "state"
    for name in SWITCHES:
        (state_dir / "nodes" / name).mkdir(parents=True)
    topo = SimpleNamespace(nodes=[SimpleNamespace(name=n, netns=n) for n in SWITCHES])
    state = LabState("test")
    path = tmp_path / "log"
    yield topo, state, state_dir, path
    daemons.stop_syslog(state, path)


def _log(state_dir: Path, switch: str) -> list[str]:
    found = state_dir / "nodes" / switch / syslog.LOG_NAME
    return found.read_text().splitlines() if found.exists() else []


def test_each_switchs_frr_messages_land_in_its_log_as_one_line_of_text(lab, senders) -> None:
    topo, state, state_dir, path = lab
    daemons.start_syslog(topo, state, state_dir, path)
    down = b"<30>Nov  6 17:26:39 bgpd[7]: %ADJCHANGE: neighbor swp1 Down BFD down received"
    leaf1 = senders(path, "-N", "leaf1").send(down)
    senders(path, "--pathspace", "leaf2").send(b"<27>zebra[8]: \x1b[2Jcleared\nsecond line\r")
    senders(path, "-N", "leaf9").send(b"<30>bgpd[9]: not a lab switch")
    senders(path, "-N", "../leaf1").send(b"<30>bgpd[9]: a name a shell reads")
    senders(path).send(b"<30>OpenSM[10]: no pathspace at all")
    leaf1.send(b"<30>bgpd[7]: last")
    _until("leaf1's last message", lambda: len(_log(state_dir, "leaf1")) == 2)
    one, last = _log(state_dir, "leaf1")
    assert one.endswith("Z bgpd[7]: %ADJCHANGE: neighbor swp1 Down BFD down received") and last.endswith("last")
    (line,) = _log(state_dir, "leaf2")
    assert line.isprintable() and line.endswith(r"zebra[8]: \x1b[2Jcleared\nsecond line\r"), line
    assert sorted(p.name for p in (state_dir / "nodes").rglob("*.log")) == ["frr.log", "frr.log"]
    assert not (state_dir / syslog.GONE_LOG).exists()  # every sender still ran when its message was read


def test_a_daemons_last_words_read_after_it_ended_are_kept(lab, senders) -> None:
    """A message read once its sender has ended: its switch's still when the sender was seen before; kept in the
    state folder's log of such messages when it never was."""
    topo, state, state_dir, path = lab
    daemons.start_syslog(topo, state, state_dir, path)
    seen = senders(path, "-N", "leaf1").send(b"<30>bgpd[7]: first")
    _until("leaf1's first message", lambda: len(_log(state_dir, "leaf1")) == 1)
    os.kill(state.pids[daemons.SYSLOG], signal.SIGSTOP)  # what follows is read after its sender ended
    try:
        seen.send(b"<30>bgpd[7]: ending")
        seen.end()
        unseen = senders(path, "-N", "leaf2").send(b"<30>bgpd[8]: never seen")
        unseen.end()
    finally:
        os.kill(state.pids[daemons.SYSLOG], signal.SIGCONT)
    gone = state_dir / syslog.GONE_LOG
    _until("the unseen sender's message", lambda: gone.exists() and gone.read_text().endswith("never seen\n"))
    assert _log(state_dir, "leaf1")[-1].endswith("bgpd[7]: ending") and _log(state_dir, "leaf2") == []


@pytest.mark.slow  # the process started and stopped again and again: seconds on a loaded machine
def test_it_starts_once_leaves_another_server_alone_and_stops_with_its_socket_gone(lab) -> None:
    topo, state, state_dir, path = lab
    daemons.start_syslog(topo, state, state_dir, path)
    pid = state.pids[daemons.SYSLOG]
    daemons.start_syslog(topo, state, state_dir, path)  # a second `lab up`
    assert state.pids[daemons.SYSLOG] == pid and syslog.served(path)
    daemons.stop_syslog(state, path)
    assert not alive(pid)
    assert not path.exists()  # it removed its socket on SIGTERM
    other = LabState("another")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as theirs:
        theirs.bind(str(path))  # a syslog daemon of the machine's
        daemons.start_syslog(topo, other, state_dir, path)
        assert daemons.SYSLOG not in other.pids
    assert path.exists()  # their socket, closed: not served, not this lab's, left alone
    daemons.start_syslog(topo, other, state_dir, path)
    assert daemons.SYSLOG not in other.pids


@pytest.mark.slow  # the process started and stopped again and again: seconds on a loaded machine
def test_a_socket_its_killed_process_left_is_replaced_and_removed(lab) -> None:
    topo, state, state_dir, path = lab
    daemons.start_syslog(topo, state, state_dir, path)
    first = state.pids[daemons.SYSLOG]
    os.kill(first, 9)
    _until("the killed syslog gone", lambda: not syslog.served(path))
    assert path.exists()
    daemons.start_syslog(topo, state, state_dir, path)
    assert state.pids[daemons.SYSLOG] != first and syslog.served(path)
    os.kill(state.pids[daemons.SYSLOG], 9)
    _until("the second killed", lambda: not syslog.served(path))
    daemons.stop_syslog(state, path)
    assert not path.exists()


def test_a_link_planted_as_a_switchs_log_is_not_written_through(lab, senders, tmp_path: Path) -> None:
    topo, state, state_dir, path = lab
    target = tmp_path / "target"
    target.write_text("kept\n")
    (state_dir / "nodes" / "leaf2" / syslog.LOG_NAME).symlink_to(target)
    daemons.start_syslog(topo, state, state_dir, path)
    senders(path, "-N", "leaf2").send(b"<30>bgpd[1]: to the link")
    senders(path, "-N", "leaf1").send(b"<30>bgpd[1]: after it")
    _until("leaf1's message", lambda: len(_log(state_dir, "leaf1")) == 1)
    assert target.read_text() == "kept\n"


def test_a_log_stops_at_its_bound_saying_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(syslog, "MAX_LOG_BYTES", 200)
    logs = syslog.Logs(lambda _switch: tmp_path, tmp_path / syslog.GONE_LOG)
    for n in range(50):
        logs.write("leaf1", f"message {n:02d} " + "x" * 20)
    logs.close()
    text = (tmp_path / syslog.LOG_NAME).read_text()
    assert len(text.encode()) <= 200 + 100 and text.splitlines()[0] == "message 00 " + "x" * 20
    assert text.splitlines()[-1] == "(this log reached 200 bytes: later messages are dropped)"


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace and a raised priority need root, as `lab up` has")
def test_a_burst_waits_in_its_queue_while_the_server_is_held_up(lab) -> None:
    """FRR's daemons call glibc's syslog(), which blocks once the socket's queue is full (10 datagrams by the
    machine's default): a burst of every switch's messages, while the server waits for a core, must not make
    a daemon at control-plane priority wait on it."""
    topo, state, state_dir, path = lab
    daemons.start_syslog(topo, state, state_dir, path)
    pid = state.pids[daemons.SYSLOG]
    assert os.getpriority(os.PRIO_PROCESS, pid) == frr_node.CONTROL_PLANE_NICENESS
    burst = 400  # 16 switches' sessions going down and up at once, and more
    os.kill(pid, signal.SIGSTOP)  # the server held up, as a loaded machine may
    refused = 0
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender:
            sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * 1024 * 1024)
            sender.connect(str(path))
            for n in range(burst):
                try:
                    sender.send(f"<30>bgpd[1]: message {n}".encode(), socket.MSG_DONTWAIT)
                except BlockingIOError:
                    refused += 1
    finally:
        os.kill(pid, signal.SIGCONT)
    assert refused == 0, f"{refused} of {burst} messages would have made their sender wait"


def test_where_the_queue_cannot_be_lengthened_own_queue_says_so_and_nothing_fails(tmp_path: Path) -> None:
    """No root, or a /proc/sys it may not write (a container's): own_queue answers False, no error, and the
    server goes on to make its socket. Run in a process of its own, as the server is: it moves its caller into a
    network namespace of its own."""
    probe = (
        "from gpufabric.lab import syslog\n"
        f"syslog._QUEUE_SYSCTL = {str(tmp_path / 'no-such-sysctl')!r}\n"
        "print(syslog.own_queue())\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=WAIT, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "False\n", "")
