"""`job timeline` reading what the real FRR wrote: two of Debian's bgpd (FRR 8.4) on loopback, named as two
switches of the default fabric (cmp-su1-leaf1 and cmp-spine1, which gpu01's traffic crosses), each logging to
its own `log file` (`<switch>.log`). Their session comes up, one stops, the other logs it down: the lines are
FRR's own (bgpd/bgp_fsm.c's %ADJCHANGE through lib/zlog_targets.c's file layout, with lib/zlog.c's unique ids),
not written by the test. bgpd runs without zebra (`-Z`) and installs nothing (`-n`, implied by `-l`); the
sessions are TCP on 127.0.0.1 and 127.0.0.2, nothing else. Each daemon is stopped by its PID."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import run_in_process

BGPD = Path("/usr/lib/frr/bgpd")
FRR_RUN = Path("/var/run/frr")  # where bgpd makes its pathspace's run folder (-N), left behind when it stops

pytestmark = [
    pytest.mark.beside_lab,
    pytest.mark.root,
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="bgpd as Debian installs it runs as root here (-S)"),
    pytest.mark.skipif(not BGPD.exists(), reason="FRR is not installed (Debian's frr package)"),
]


def _free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def _config(name: str, asn: int, router_id: str, peer: str, peer_asn: int, peer_port: int, log: Path) -> str:
    return (
        f"frr defaults datacenter\nhostname {name}\nlog file {log} informational\n"
        f"router bgp {asn}\n bgp router-id {router_id}\n neighbor {peer} remote-as {peer_asn}\n"
        f" neighbor {peer} port {peer_port}\n neighbor {peer} timers connect 1\n"
    )


def _pathspace(name: str) -> str:
    return f"gftl-{os.getpid()}-{name}"


def _start(folder: Path, name: str, address: str, port: int, config: str) -> subprocess.Popen[bytes]:
    home = folder / name
    home.mkdir()
    (home / "bgpd.conf").write_text(config)
    args = [str(BGPD), "-S", "-Z", "-p", str(port), "-l", address, "-f", str(home / "bgpd.conf"),
            "-i", str(home / "bgpd.pid"), "--vty_socket", str(home), "-P", "0",
            "-N", _pathspace(name)]  # fmt: skip
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=(home / "stderr").open("w"), env={"TZ": "UTC"})


def _wait(what: str, ok, seconds: float = 60.0) -> None:
    end = time.monotonic() + seconds
    while not ok():
        if time.monotonic() > end:
            raise AssertionError(f"not within {seconds:.0f} s: {what}")
        time.sleep(0.2)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def test_real_frr_session_changes_are_read_from_its_log_files(tmp_path: Path):
    logs = tmp_path / "logs"
    logs.mkdir()
    leaf_log, spine_log = logs / "cmp-su1-leaf1.log", logs / "cmp-spine1.log"
    leaf_port, spine_port = _free_port("127.0.0.1"), _free_port("127.0.0.2")
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
    leaf = _start(tmp_path, "leaf", "127.0.0.1", leaf_port,
                  _config("cmp-su1-leaf1", 65001, "10.0.0.1", "127.0.0.2", 65002, spine_port, leaf_log))  # fmt: skip
    spine = _start(tmp_path, "spine", "127.0.0.2", spine_port,
                   _config("cmp-spine1", 65002, "10.0.0.2", "127.0.0.1", 65001, leaf_port, spine_log))  # fmt: skip
    try:
        said = lambda log, text: log.exists() and text in log.read_text(errors="replace")  # noqa: E731
        _wait("the session up on both", lambda: said(leaf_log, " Up") and said(spine_log, " Up"))
        _stop(spine)
        _wait("the leaf logs the session down", lambda: said(leaf_log, " Down "))
    finally:
        _stop(spine)
        _stop(leaf)
        for name in ("leaf", "spine"):  # empty once bgpd stopped: a folder left in it fails the test
            if (FRR_RUN / _pathspace(name)).exists():
                (FRR_RUN / _pathspace(name)).rmdir()

    def timeline(nodes: str) -> dict:
        done = run_in_process("gpufabric", "job", "timeline", "--nodes", nodes, "--since", since.isoformat(),
                              "--switch-log", logs, "--log-zone", "UTC", "--audit-log", tmp_path / "none",
                              "--remediation-log", tmp_path / "none", "--json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    got = timeline("gpu[01,03]")  # two units: its traffic crosses the spines
    bgp = [(e["device"], e["port"], e["summary"]) for e in got["events"]]
    assert ("cmp-su1-leaf1", None, "BGP neighbor 127.0.0.2(cmp-spine1) vrf default Up") in bgp
    assert ("cmp-spine1", None, "BGP neighbor 127.0.0.1(cmp-su1-leaf1) vrf default Up") in bgp
    assert (
        "cmp-su1-leaf1",
        None,
        "BGP neighbor 127.0.0.2(cmp-spine1) vrf default Down (Peer closed the session)",
    ) in bgp
    assert {e["kind"] for e in got["events"]} == {"bgp"}
    assert got["unread"] == [], got["unread"]
    ups = [e for e in got["events"] if e["summary"].endswith(" Up")]
    assert all(since <= datetime.fromisoformat(e["time"].replace("Z", "+00:00")) for e in ups)
    # Every %ADJCHANGE line FRR wrote became an event: none was skipped or guessed.
    written = sum(log.read_text(errors="replace").count("%ADJCHANGE") for log in (leaf_log, spine_log))
    assert written == len(got["events"])
    # gpu01 alone crosses no spine (each rail's nodes under one leaf): the spine's lines are not its events.
    alone = timeline("gpu01")
    assert {e["device"] for e in alone["events"]} == {"cmp-su1-leaf1"} and len(alone["events"]) == 2
