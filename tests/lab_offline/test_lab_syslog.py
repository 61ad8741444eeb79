"""The lab's syslog (gpufabric/lab/syslog.py) on a socket of the test's own: each switch's FRR messages in its log,
named by the sender's PID as the kernel reports it, nothing from any other process, every message one line of
text, each log bounded; started once, left alone where something else serves the socket, stopped with its
socket gone. Offline, no root: the senders are this machine's processes whose command lines carry `-N <switch>`
as FRR's daemons' do."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpufabric.fleet.lab.state import LabState
from gpufabric.lab import daemons, syslog

SWITCHES = ("leaf1", "leaf2")
SEND = "import socket, sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(sys.stdin.buffer.read(), {path!r})"
WAIT = 300.0  # a loaded machine's bound, never reached by a working server


def _send(path: Path, message: bytes, *args: str) -> None:
    """`message` sent to the socket by a process whose command line ends with `args` (`-N leaf1`: a daemon of
    leaf1's FRR, as its command line names the pathspace)."""
    command = [sys.executable, "-S", "-c", SEND.format(path=str(path)), *args]  # -S: no site, a quick start
    subprocess.run(command, input=message, check=True, timeout=WAIT)


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
    topo = SimpleNamespace(nodes=[SimpleNamespace(name=n) for n in SWITCHES])
    state = LabState("test")
    path = tmp_path / "log"
    yield topo, state, state_dir, path
    daemons.stop_syslog(state, path)


def _log(state_dir: Path, switch: str) -> list[str]:
    found = state_dir / "nodes" / switch / syslog.LOG_NAME
    return found.read_text().splitlines() if found.exists() else []


def test_each_switchs_frr_messages_land_in_its_log_as_one_line_of_text(lab) -> None:
    topo, state, state_dir, path = lab
    daemons.start_syslog(topo, state, state_dir, path)
    _send(path, b"<30>Nov  6 17:26:39 bgpd[7]: %ADJCHANGE: neighbor swp1 Down BFD down received", "-N", "leaf1")
    _send(path, b"<27>zebra[8]: \x1b[2Jcleared\nsecond line\r", "--pathspace", "leaf2")
    _send(path, b"<30>bgpd[9]: not a lab switch", "-N", "leaf9")
    _send(path, b"<30>bgpd[9]: a name a shell reads", "-N", "../leaf1")
    _send(path, b"<30>OpenSM[10]: no pathspace at all")
    _send(path, b"<30>bgpd[7]: last", "-N", "leaf1")
    _until("leaf1's last message", lambda: len(_log(state_dir, "leaf1")) == 2)
    one, last = _log(state_dir, "leaf1")
    assert one.endswith("Z bgpd[7]: %ADJCHANGE: neighbor swp1 Down BFD down received") and last.endswith("last")
    (line,) = _log(state_dir, "leaf2")
    assert line.isprintable() and line.endswith(r"zebra[8]: \x1b[2Jcleared\nsecond line\r"), line
    assert sorted(p.name for p in (state_dir / "nodes").rglob("*.log")) == ["frr.log", "frr.log"]


def test_it_starts_once_leaves_another_server_alone_and_stops_with_its_socket_gone(lab) -> None:
    topo, state, state_dir, path = lab
    daemons.start_syslog(topo, state, state_dir, path)
    pid = state.pids[daemons.SYSLOG]
    daemons.start_syslog(topo, state, state_dir, path)  # a second `lab up`
    assert state.pids[daemons.SYSLOG] == pid and syslog.served(path)
    daemons.stop_syslog(state, path)
    assert not os.path.exists(f"/proc/{pid}") or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert not path.exists()  # it removed its socket on SIGTERM
    other = LabState("another")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as theirs:
        theirs.bind(str(path))  # a syslog daemon of the machine's
        daemons.start_syslog(topo, other, state_dir, path)
        assert daemons.SYSLOG not in other.pids
    assert path.exists()  # their socket, closed: not served, not this lab's, left alone
    daemons.start_syslog(topo, other, state_dir, path)
    assert daemons.SYSLOG not in other.pids


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


def test_a_link_planted_as_a_switchs_log_is_not_written_through(lab, tmp_path: Path) -> None:
    topo, state, state_dir, path = lab
    target = tmp_path / "target"
    target.write_text("kept\n")
    (state_dir / "nodes" / "leaf2" / syslog.LOG_NAME).symlink_to(target)
    daemons.start_syslog(topo, state, state_dir, path)
    _send(path, b"<30>bgpd[1]: to the link", "-N", "leaf2")
    _send(path, b"<30>bgpd[1]: after it", "-N", "leaf1")
    _until("leaf1's message", lambda: len(_log(state_dir, "leaf1")) == 1)
    assert target.read_text() == "kept\n"


def test_a_log_stops_at_its_bound_saying_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(syslog, "MAX_LOG_BYTES", 200)
    logs = syslog.Logs(lambda _switch: tmp_path)
    for n in range(50):
        logs.write("leaf1", f"message {n:02d} " + "x" * 20)
    logs.close()
    text = (tmp_path / syslog.LOG_NAME).read_text()
    assert len(text.encode()) <= 200 + 100 and text.splitlines()[0] == "message 00 " + "x" * 20
    assert text.splitlines()[-1] == "(this log reached 200 bytes: later messages are dropped)"
