"""The labs' syslog (gpufabric/lab/syslog.py) on a socket and a lab registry of the test's own: each switch's
FRR messages in its lab's log, named by the sender's PID as the kernel reports it, nothing from any other
process or a lab not up, every message one line of text, each log bounded; started once for every lab, left
alone where something else serves the socket, stopped by the last lab's down with its socket gone. Offline, no
root: the senders are this machine's processes whose command lines carry `-N <switch>` as FRR's daemons' do."""

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

from gpufabric.fleet.lab import registry
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


class Lab(SimpleNamespace):
    """A lab as the syslog sees one: its record in the registry, its state, a folder for each switch."""


def _lab_up(base: Path, registry_dir: Path, name: str, switches: tuple[str, ...]) -> Path:
    state_dir = base / name
    prefix = "" if name == "default" else f"{name}_"
    for switch in switches:
        (state_dir / "nodes" / f"{prefix}{switch}").mkdir(parents=True)
    LabState("test", name=name).save(state_dir)
    registry.claim(registry.LabRecord(name, str(state_dir), "test"), registry_dir)
    return state_dir


def _lab_down(state_dir: Path, registry_dir: Path, name: str, path: Path) -> bool:
    stopped = daemons.stop_syslog(name, path, registry_dir)
    registry.forget(name, state_dir, registry_dir)
    return stopped


@pytest.fixture
def lab(tmp_path: Path):
    registry_dir = tmp_path / "run" / "labs"
    state_dir = _lab_up(tmp_path, registry_dir, "default", SWITCHES)
    path = tmp_path / "log"
    yield Lab(state_dir=state_dir, registry=registry_dir, path=path, base=tmp_path)
    for entry in registry.labs(registry_dir):
        _lab_down(Path(entry.state_dir), registry_dir, entry.name, path)
    daemons.stop_syslog("default", path, registry_dir)


def _start(lab: Lab) -> int:
    daemons.start_syslog(lab.path, lab.registry)
    pid = daemons.recorded_syslog(lab.registry)
    assert pid is not None
    return pid


def _log(state_dir: Path, switch: str) -> list[str]:
    found = state_dir / "nodes" / switch / syslog.LOG_NAME
    return found.read_text().splitlines() if found.exists() else []


def test_each_switchs_frr_messages_land_in_its_log_as_one_line_of_text(lab, senders) -> None:
    state_dir, path = lab.state_dir, lab.path
    _start(lab)
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
    assert not (lab.registry.parent / syslog.GONE_LOG).exists()  # every sender still ran when its message was read


def test_a_daemons_last_words_read_after_it_ended_are_kept(lab, senders) -> None:
    """A message read once its sender has ended: its switch's still when the sender was seen before; kept in the
    log of such messages beside the registry when it never was."""
    state_dir, path = lab.state_dir, lab.path
    pid = _start(lab)
    seen = senders(path, "-N", "leaf1").send(b"<30>bgpd[7]: first")
    _until("leaf1's first message", lambda: len(_log(state_dir, "leaf1")) == 1)
    os.kill(pid, signal.SIGSTOP)  # what follows is read after its sender ended
    try:
        seen.send(b"<30>bgpd[7]: ending")
        seen.end()
        unseen = senders(path, "-N", "leaf2").send(b"<30>bgpd[8]: never seen")
        unseen.end()
    finally:
        os.kill(pid, signal.SIGCONT)
    gone = lab.registry.parent / syslog.GONE_LOG
    _until("the unseen sender's message", lambda: gone.exists() and gone.read_text().endswith("never seen\n"))
    assert _log(state_dir, "leaf1")[-1].endswith("bgpd[7]: ending") and _log(state_dir, "leaf2") == []


@pytest.mark.slow  # the process started and stopped again and again: seconds on a loaded machine
def test_it_starts_once_leaves_another_server_alone_and_stops_with_its_socket_gone(lab) -> None:
    path = lab.path
    pid = _start(lab)
    assert _start(lab) == pid and syslog.served(path)  # a second `lab up`
    assert daemons.stop_syslog("default", path, lab.registry)
    assert not alive(pid)
    assert not path.exists()  # it removed its socket on SIGTERM
    assert daemons.recorded_syslog(lab.registry) is None
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as theirs:
        theirs.bind(str(path))  # a syslog daemon of the machine's
        daemons.start_syslog(path, lab.registry)
        assert daemons.recorded_syslog(lab.registry) is None
    assert path.exists()  # their socket, closed: not served, not a lab's, left alone
    daemons.start_syslog(path, lab.registry)
    assert daemons.recorded_syslog(lab.registry) is None


@pytest.mark.slow  # two processes' worth of senders and labs
def test_labs_side_by_side_share_one_syslog_which_the_last_down_stops(lab, senders) -> None:
    """A named lab's pathspaces (`<lab>_<switch>`) go to its own folders; a pathspace of a lab not up, or a
    default switch's name under a named lab's prefix, nowhere. The first lab's down leaves the syslog serving
    the other; the second's stops it."""
    path = lab.path
    other = _lab_up(lab.base, lab.registry, "nlb", SWITCHES)
    pid = _start(lab)
    senders(path, "-N", "nlb_leaf1").send(b"<30>bgpd[3]: named lab's")
    senders(path, "-N", "leaf1").send(b"<30>bgpd[4]: default lab's")
    senders(path, "-N", "nlc_leaf1").send(b"<30>bgpd[5]: a lab not up")
    _until("both labs' messages", lambda: _log(other, "nlb_leaf1") and _log(lab.state_dir, "leaf1"))
    assert _log(other, "nlb_leaf1")[0].endswith("bgpd[3]: named lab's")
    assert _log(lab.state_dir, "leaf1")[0].endswith("bgpd[4]: default lab's")
    assert not (lab.base / "nlc").exists() and not (lab.registry.parent / syslog.GONE_LOG).exists()
    assert not _lab_down(lab.state_dir, lab.registry, "default", path)  # the named lab is still up
    assert alive(pid) and syslog.served(path)
    senders(path, "-N", "nlb_leaf2").send(b"<30>bgpd[6]: still served")
    _until("the named lab's message after the other's down", lambda: _log(other, "nlb_leaf2"))
    # The default lab up again in another folder: its switch's messages go to the new folder.
    again = _lab_up(lab.base / "again", lab.registry, "default", SWITCHES)
    time.sleep(syslog.ROUTE_TTL)  # the route the server keeps for leaf1 is trusted this long
    senders(path, "-N", "leaf1").send(b"<30>bgpd[7]: in the new folder")
    _until("the message in the new folder", lambda: _log(again, "leaf1"))
    assert len(_log(lab.state_dir, "leaf1")) == 1
    assert not _lab_down(again, lab.registry, "default", path)
    assert _lab_down(other, lab.registry, "nlb", path)
    assert not alive(pid) and not path.exists() and daemons.recorded_syslog(lab.registry) is None


def test_two_labs_going_down_at_once_leave_no_syslog_behind(lab) -> None:
    """Each lab's syslog step (right after its FRR stopped) finds the other still up and leaves the syslog to
    it; the last lab forgotten stops it (`lab down` ends with daemons.forget_lab), and the registry's folder
    goes with the last lab."""
    path = lab.path
    other = _lab_up(lab.base, lab.registry, "nlb", SWITCHES)
    pid = _start(lab)
    assert not daemons.stop_syslog("default", path, lab.registry)
    assert not daemons.stop_syslog("nlb", path, lab.registry)
    daemons.forget_lab("default", lab.state_dir, path, lab.registry)
    assert alive(pid) and syslog.served(path)  # the named lab is still up
    daemons.forget_lab("nlb", other, path, lab.registry)
    assert not alive(pid) and not path.exists() and daemons.recorded_syslog(lab.registry) is None
    assert not lab.registry.exists()


@pytest.mark.slow  # the process started and stopped again and again: seconds on a loaded machine
def test_a_socket_its_killed_process_left_is_replaced_and_removed(lab) -> None:
    path = lab.path
    first = _start(lab)
    os.kill(first, 9)
    _until("the killed syslog gone", lambda: not syslog.served(path))
    assert path.exists()
    second = _start(lab)
    assert second != first and syslog.served(path)
    os.kill(second, 9)
    _until("the second killed", lambda: not syslog.served(path))
    assert daemons.stop_syslog("default", path, lab.registry)
    assert not path.exists()


def test_a_link_planted_as_a_switchs_log_is_not_written_through(lab, senders, tmp_path: Path) -> None:
    state_dir, path = lab.state_dir, lab.path
    target = tmp_path / "target"
    target.write_text("kept\n")
    (state_dir / "nodes" / "leaf2" / syslog.LOG_NAME).symlink_to(target)
    _start(lab)
    senders(path, "-N", "leaf2").send(b"<30>bgpd[1]: to the link")
    senders(path, "-N", "leaf1").send(b"<30>bgpd[1]: after it")
    _until("leaf1's message", lambda: len(_log(state_dir, "leaf1")) == 1)
    assert target.read_text() == "kept\n"


def test_a_log_stops_at_its_bound_saying_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(syslog, "MAX_LOG_BYTES", 200)
    logs = syslog.Logs(tmp_path / syslog.GONE_LOG)
    for n in range(50):
        logs.write("leaf1", tmp_path, f"message {n:02d} " + "x" * 20)
    logs.close()
    text = (tmp_path / syslog.LOG_NAME).read_text()
    assert len(text.encode()) <= 200 + 100 and text.splitlines()[0] == "message 00 " + "x" * 20
    assert text.splitlines()[-1] == "(this log reached 200 bytes: later messages are dropped)"


@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace and a raised priority need root, as `lab up` has")
def test_a_burst_waits_in_its_queue_while_the_server_is_held_up(lab) -> None:
    """FRR's daemons call glibc's syslog(), which blocks once the socket's queue is full (10 datagrams by the
    machine's default): a burst of every switch's messages, while the server waits for a core, must not make
    a daemon at control-plane priority wait on it."""
    path = lab.path
    pid = _start(lab)
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
