"""A live fabric changed under traffic, with a real Slurm (root only): the lab's default fabric pushed, UDP
flows between the servers on every compute rail and the storage plane, a rolling restart of every compute
and storage switch, then a push that resets BGP on every spine; the same again with `--drain never`; then a
real job holding its leaf's restart, and a short `--job-wait` refusing it.

The servers: one network namespace per planned server (`e2e-<server>`) holding that server's data NICs,
the very veths the lab cabled into its leaf ports (the stubs `lab up --no-hosts` leaves), with the planned
addresses; each runs the server's slurmd (tests/slurm_cluster.py, the controller in the root namespace) and
its iperf3 ends. The lab's booted host containers would need Slurm installed in their image: these
namespaces are the closest setup here that runs a real slurmd and real traffic on the planned NICs.

The BGP timers: the lab's default fabric with keepalive 10 s and hold 30 s on both planes (FRR's own
are 3 and 9). A loaded machine here has been seen to stop every process, FRR's at niceness -15 too, for
about 10 s at once (FRR's daemons on several switches logged "Thread Starvation", their timers ten seconds
late, and the tests' own sampling stopped as long): the sessions' 9 s hold then ran out, on both sides at
once, and the fabric reconverged with a loss no drain could have spared. What these tests judge
is the drain's choreography, which hold timers play no part in (a restarted bgpd's sessions close with
it), so the hold outlasts such a pause.

The flows: iperf3 UDP, 4 streams each (different source ports, hashed over both spines of their plane by
the leaves' L4 hash), each receiver's per-second loss read from its own JSON. What is asserted, from the
drained run: a datagram is lost only in a second when one end's server was drained in Slurm for the very
leaf that flow ends on (read from `sinfo --json` twice a second, by its gpufabric reason); every leaf's
servers were drained before its bgpd was replaced and resumed after; no datagram at all is lost while
the spines' BGP is reset by the push. The figures of both runs are printed (and written to
$GPUFABRIC_E2E_FIGURES when set).
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from conftest import INVENTORY, cli_env, default_doc, run
from lab_slot import moved, ns, plug_in, up_args
from slurm_cluster import SlurmCluster, missing, slurm_cluster, wait_for

from gpufabric.fleet.lab.topology import topology
from gpufabric.intent import load_intent
from gpufabric.lab import frr_node, syslog
from gpufabric.plan.model import ip
from gpufabric.scheduler import servers_behind

pytestmark = [
    pytest.mark.own_lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)"),
]

PLAN = topology(load_intent(str(INVENTORY / "fabric.yml"))).plan  # the lab's plan: every switch as frr
PLANES = ("compute", "storage")
SWITCHES = sorted(d.name for d in PLAN.devices() if d.plane in PLANES)
LEAVES = sorted(d.name for d in PLAN.devices() if d.plane in PLANES and d.role == "leaf")
SPINES = sorted(d.name for d in PLAN.devices() if d.plane in PLANES and d.role == "spine")
SERVERS = [s for s in PLAN.servers if any(n.plane in PLANES for n in s.nics)]
NS = "e2e-"
STREAMS, RATE = 4, "1M"  # per flow: 4 streams of 1 Mb/s in 1,000-byte datagrams (500 datagrams a second)
# Each stream's socket buffers (the server takes the client's): a receiver starved of CPU on a loaded machine
# drops what overflows its socket, which is the host's loss, not the fabric's. 4 MiB (net.core.rmem_max here)
# holds seconds of a stream; a datagram the fabric dropped never arrives, whatever the buffer.
SOCKET_BUFFER = "4M"
# How often a client wakes to send what its rate allows, in microseconds: with iperf3's 1 ms default a client
# of these flows takes 0.5 s of CPU in 20 s here (a fortieth of a core), with 10 ms 0.22 s. A stream then
# sends one or two datagrams a wake-up; loss is counted in datagrams a second, so the figures stand.
PACING_US = "10000"
MARGIN = 3.0  # seconds either side of a drain window a receiver's one-second interval may straddle


def nic(server: str, plane: str, rail: int | None = None):
    found = next(s for s in PLAN.servers if s.name == server)
    return next(n for n in found.nics if n.plane == plane and (rail is None or n.rail == rail))


@dataclass(frozen=True)
class Flow:
    src: str
    dst: str
    plane: str
    rail: int | None
    port: int

    @property
    def name(self) -> str:
        return f"{self.src}->{self.dst} {self.plane}{'' if self.rail is None else f' rail {self.rail}'}"

    def leaf(self, server: str) -> str:
        return nic(server, self.plane, self.rail).leaf


def _flows() -> list[Flow]:
    flows = []
    port = 5401
    for rail in sorted({n.rail for s in SERVERS for n in s.nics if n.plane == "compute"}):
        for src, dst in (("gpu01", "gpu03"), ("gpu02", "gpu04")):  # su1 -> su2: across the spines
            flows.append(Flow(src, dst, "compute", rail, port))
            port += 1
    for src, dst in (("gpu01", "stor01"), ("gpu02", "stor02"), ("gpu03", "stor01"), ("gpu04", "stor02")):
        flows.append(Flow(src, dst, "storage", None, port))  # sto-leaf1 -> sto-leaf2: across the spines
        port += 1
    return flows


FLOWS = _flows()


# -- the servers: a namespace each, holding its cabled NICs --------------------------------------------------


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _hosts_up() -> None:
    for number, server in enumerate(SERVERS):
        home = f"{NS}{server.name}"
        _ip("netns", "add", home)
        _ip("-n", home, "link", "set", "lo", "up")
        for n in server.nics:
            if n.plane not in PLANES:
                continue
            plug_in(n, home, f"e2e{number}{n.interface}"[:15])
    for flow in FLOWS:  # each end reaches the other's NIC through its own NIC on that rail
        for here, there in ((flow.src, flow.dst), (flow.dst, flow.src)):
            mine, theirs = nic(here, flow.plane, flow.rail), nic(there, flow.plane, flow.rail)
            _ip("-n", f"{NS}{here}", "route", "replace", f"{ip(theirs.address)}/32", "via", ip(mine.gateway),
                "dev", mine.interface, "src", ip(mine.address))  # fmt: skip


def _hosts_down() -> None:
    for server in SERVERS:
        home = f"{NS}{server.name}"
        pids = subprocess.run(["ip", "netns", "pids", home], capture_output=True, text=True, check=False).stdout
        for pid in pids.split():
            try:
                os.kill(int(pid), signal.SIGKILL)  # an iperf3 of ours left behind by a failed test
            except ProcessLookupError:
                continue
        subprocess.run(["ip", "netns", "del", home], capture_output=True, check=False)


# -- the lab, its servers and their Slurm, once for the module ----------------------------------------------


@dataclass
class Lab:
    state: Path
    slurm: SlurmCluster
    intent: Path  # the fabric every command of these tests is given


KEEPALIVE, HOLD = 10, 30  # seconds: the hold three times the longest whole-machine pause seen here (10 s)


def _intent(folder: Path) -> Path:
    """The lab's default fabric, its compute and storage planes given the keepalive and hold above."""
    doc = default_doc()
    for plane in PLANES:
        doc["planes"][plane]["routing"].update({"keepalive": KEEPALIVE, "hold": HOLD})
    path = folder / "fabric.yml"
    path.write_text(yaml.safe_dump(moved(doc), sort_keys=False))
    return path


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[Lab]:
    if missing():
        pytest.skip(f"{', '.join(missing())} not installed (scripts/test.sh installs Slurm and munge)")
    if subprocess.run(["which", "iperf3"], capture_output=True, check=False).returncode != 0:
        pytest.skip("iperf3 not installed (scripts/test.sh installs it)")
    folder = tmp_path_factory.mktemp("lab")
    state, intent = folder / "state", _intent(folder)
    up = run("gpufabric", "lab", "up", str(intent), "--no-hosts", *up_args(), "--state-dir", str(state))
    try:
        assert up.returncode == 0, up.stderr
        for plane in PLANES:
            pushed = run("nornir", "push", str(intent), "--plane", plane, "--state-dir", str(state), "--json")
            assert pushed.returncode == 0, pushed.stderr
        # The push gave the switches their BGP: their servers' ports go down and up below, once every
        # session is up and each switch sends to all of its peers as one (see _one_subgroup).
        wait_for(_one_subgroup, "every switch's BGP sessions up, sent to as one update-subgroup", timeout=300)
        _hosts_up()
        names = [s.name for s in SERVERS]
        with slurm_cluster(names, netns={n: f"{NS}{n}" for n in names}) as cluster:
            try:
                wait_for(_converged, "every leaf routing every other leaf over both spines", timeout=300)
            except AssertionError as exc:  # which leaf lacks which path, where its route stopped, and what
                lacking = _unconverged()  # BGP said of its sessions meanwhile (FRR's logs go with `lab down`)
                kept = _keep_logs(state, folder / "frr-logs")
                raise AssertionError(
                    f"{exc}: {lacking}; {_sessions()}; where each route stopped: {_where_stopped(lacking)}; "
                    f"sessions that changed: {_adjacency_changes(kept)}; every switch's log: {kept}"
                ) from None
            holds = _holds()
            assert holds == {HOLD * 1000}, holds  # every session took the intent's hold
            yield Lab(state, cluster, intent)
    finally:
        _hosts_down()
        run("gpufabric", "lab", "down", "--state-dir", str(state))


def _holds() -> set[int | None]:
    """Every compute and storage session's hold time as its bgpd negotiated it, in milliseconds (None for a
    session that has none): `show bgp neighbors json` answers one object per peer."""
    found: set[int | None] = set()
    for switch in SWITCHES:
        text = subprocess.run(["vtysh", "-N", ns(switch), "-c", "show bgp neighbors json"], capture_output=True,
                              text=True, check=False).stdout  # fmt: skip
        found |= {peer.get("bgpTimerHoldTimeMsecs") for peer in json.loads(text).values()}
    return found


def _routes(leaf: str) -> dict[str, int]:
    out = {}
    for prefix, entries in _vtysh_json(leaf, "show ip route bgp json").items():
        for entry in entries:
            if entry.get("selected"):
                out[prefix] = sum(1 for h in entry.get("nexthops", []) if h.get("fib"))
    return out


def _sessions() -> dict[str, dict[str, str]]:
    """Each leaf's BGP peers and their state, as its bgpd reports them."""
    out = {}
    for leaf in LEAVES:
        text = subprocess.run(["vtysh", "-N", ns(leaf), "-c", "show bgp summary json"], capture_output=True, text=True,
                              check=False).stdout  # fmt: skip
        try:
            peers = json.loads(text).get("ipv4Unicast", {}).get("peers", {})
        except (ValueError, AttributeError):
            out[leaf] = {"vtysh": text[-200:]}
            continue
        out[leaf] = {p: f"{v.get('state')} pfxRcd={v.get('pfxRcd')}" for p, v in peers.items()}
    return out


def _vtysh_json(switch: str, command: str) -> dict:
    text = subprocess.run(["vtysh", "-N", ns(switch), "-c", command], capture_output=True, text=True,
                          check=False).stdout  # fmt: skip
    try:
        answer = json.loads(text)
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}


def _where_stopped(missing: list[tuple[str, str, int, int]]) -> dict[str, dict[str, list[str]]]:
    """For each host subnet some leaf lacks paths to: the peers each switch of its plane holds a path from
    (an empty list: none), and, per peer of the leaf that owns the subnet, whether that leaf's bgpd says it
    advertised the subnet there. Together they show the hop where the route stopped."""
    out: dict[str, dict[str, list[str]]] = {}
    for prefix in sorted({p for _, p, _, _ in missing}):
        owner = next(n.leaf for s in SERVERS for n in s.nics if f"{ip(n.address & ~1)}/{n.prefixlen}" == prefix)
        plane = PLAN.device(owner).plane
        held = {}
        for switch in (d for d in SWITCHES if PLAN.device(d).plane == plane):
            paths = _vtysh_json(switch, f"show bgp ipv4 unicast {prefix} json").get("paths", [])
            held[switch] = [str(p.get("peer", {}).get("peerId", "?")) for p in paths if isinstance(p, dict)]
        peers = _vtysh_json(owner, "show bgp summary json").get("ipv4Unicast", {}).get("peers", {})
        for peer in peers:
            said = _vtysh_json(owner, f"show bgp ipv4 unicast neighbors {peer} advertised-routes json")
            held[f"{owner} advertised to {peer}"] = [str(prefix in said.get("advertisedRoutes", {}))]
        out[prefix] = held
    return out


def _keep_logs(state: Path, folder: Path) -> Path:
    """Each switch's FRR log copied into the test's folder (`lab down` removes the lab's state folder, and
    scripts/test.sh keeps the test folder of a failed run)."""
    folder.mkdir(parents=True, exist_ok=True)
    for log in sorted((state / "nodes").glob(f"*/{syslog.LOG_NAME}")):
        (folder / f"{log.parent.name}.log").write_bytes(log.read_bytes())
    return folder


ADJACENCY_LINES = 40


def _adjacency_changes(logs: Path) -> list[str]:
    """The last of every switch's BGP session changes (FRR's %ADJCHANGE lines), each led by its switch."""
    found = []
    for log in sorted(logs.glob("*.log")):
        found += [f"{log.stem} {ln}" for ln in log.read_text(errors="replace").splitlines() if "%ADJCHANGE" in ln]
    return sorted(found, key=lambda ln: ln.split(" ", 2)[1])[-ADJACENCY_LINES:]


def _subgroups(switch: str) -> list[set[str]]:
    """The peers of each of the switch's IPv4 update-subgroups, as its bgpd lists them (`show bgp ipv4 unicast
    update-groups`: no JSON form in FRR 8.4)."""
    text = subprocess.run(["vtysh", "-N", ns(switch), "-c", "show bgp ipv4 unicast update-groups"], capture_output=True,
                          text=True, check=False).stdout  # fmt: skip
    groups: list[set[str]] = []
    listing = False
    for line in text.splitlines():
        word = line.strip()
        if word.startswith("Update-subgroup"):
            groups.append(set())
            listing = False
        elif word == "Peers:" and groups:
            listing = True
        elif listing and word.startswith("- "):
            groups[-1].add(word[2:].strip())
        else:
            listing = False
    return groups


def _one_subgroup() -> bool:
    """Every switch's BGP sessions are up and its bgpd sends to them all as one update-subgroup. A session
    that comes up later than the others gets a subgroup of its own, merged once it has caught up. A route
    that a leaf withdrew and announced again meanwhile (a server's port going down and up, as `_hosts_up`
    moves it) has been seen to stay withdrawn towards the later peers in FRR 8.4, for the five minutes it was
    watched: the leaf's adj-RIB-out towards them lacked it, with every session up and nothing left to send."""
    for switch in SWITCHES:
        peers = _vtysh_json(switch, "show bgp summary json").get("ipv4Unicast", {}).get("peers", {})
        if not peers or any(p.get("state") != "Established" for p in peers.values()):
            return False
        if [set(peers)] != _subgroups(switch):
            return False
    return True


UPLINKS = {leaf: sum(1 for k in PLAN.links() if k.kind == "fabric" and leaf in (k.a, k.b)) for leaf in LEAVES}


def _unconverged() -> list[tuple[str, str, int, int]]:
    """(leaf, another leaf's host subnet of its plane, paths it has in its FIB, uplinks) wherever the two differ."""
    missing = []
    for leaf in LEAVES:
        plane = PLAN.device(leaf).plane
        spines = UPLINKS[leaf]
        mine = _routes(leaf)
        for s in SERVERS:
            for n in s.nics:
                if n.plane == plane and n.leaf != leaf:
                    prefix = f"{ip(n.address & ~1)}/{n.prefixlen}"
                    if mine.get(prefix, 0) != spines:
                        missing.append((leaf, prefix, mine.get(prefix, 0), spines))
    return missing


def _converged() -> bool:
    """Every leaf routes each other leaf's host subnets of its plane over every one of its uplinks."""
    return not _unconverged()


# -- traffic ------------------------------------------------------------------------------------------------


@dataclass
class Measured:
    flow: Flow
    sent: int
    lost: int
    intervals: list[tuple[float, float, int, int]]  # (wall start, wall end, lost, packets), the receiver's


class Traffic:
    """Every flow's receiver (one test, JSON) and sender (until told to stop), in the servers' namespaces."""

    def __init__(self) -> None:
        self.servers: dict[Flow, subprocess.Popen[str]] = {}
        self.clients: dict[Flow, subprocess.Popen[str]] = {}

    def start(self) -> None:
        for f in FLOWS:
            dst = ip(nic(f.dst, f.plane, f.rail).address)
            self.servers[f] = subprocess.Popen(
                ["ip", "netns", "exec", f"{NS}{f.dst}", "iperf3", "-s", "-1", "--json", "-B", dst, "-p", str(f.port)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )  # fmt: skip
        for f in FLOWS:
            wait_for(lambda f=f: self._listening(f), f"iperf3 listening for {f.name}", timeout=60)
        for f in FLOWS:
            src, dst = ip(nic(f.src, f.plane, f.rail).address), ip(nic(f.dst, f.plane, f.rail).address)
            self.clients[f] = subprocess.Popen(
                ["ip", "netns", "exec", f"{NS}{f.src}", "iperf3", "-c", dst, "-B", src, "-p", str(f.port), "-u",
                 "-b", RATE, "-l", "1000", "-P", str(STREAMS), "-t", "3600", "-w", SOCKET_BUFFER, "--json",
                 "--pacing-timer", PACING_US],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )  # fmt: skip
        time.sleep(3)  # a few seconds of traffic before the change (the measurement, not a readiness wait)

    @staticmethod
    def _listening(f: Flow) -> bool:
        done = subprocess.run(["ip", "netns", "exec", f"{NS}{f.dst}", "ss", "-Hltn", f"sport = :{f.port}"],
                              capture_output=True, text=True, check=False)  # fmt: skip
        return str(f.port) in done.stdout

    def stop(self) -> list[Measured]:
        time.sleep(3)  # a few seconds of traffic after the change
        for proc in self.clients.values():
            proc.send_signal(signal.SIGINT)  # the client tells its receiver the test ended; both print JSON
        texts = {}
        try:
            for f, server in self.servers.items():
                texts[f], _ = server.communicate(timeout=120)
                self.clients[f].communicate(timeout=120)
        finally:  # every flow's iperf3 ended, whatever one of them did
            for proc in (*self.servers.values(), *self.clients.values()):
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        out = []
        for f, text in texts.items():
            doc = json.loads(text)
            began = float(doc["start"]["timestamp"]["timesecs"])
            intervals = [
                (began + i["sum"]["start"], began + i["sum"]["end"], int(i["sum"]["lost_packets"]),
                 int(i["sum"]["packets"]))
                for i in doc["intervals"]
            ]  # fmt: skip
            total = doc["end"]["sum"]
            out.append(Measured(f, int(total["packets"]), int(total["lost_packets"]), intervals))
        return out


# -- what Slurm and the switches did, read twice a second ---------------------------------------------------


@dataclass
class Watch:
    """Samples of (time, node -> its gpufabric reason or "", switch -> bgpd pid)."""

    slurm: SlurmCluster
    samples: list[tuple[float, dict[str, str], dict[str, int]]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    errors: list[str] = field(default_factory=list)
    # (time, switch, its bgpd's threads as "name:state:where it waits"), each time a switch's changes: where a
    # bgpd was stuck when its sessions' keepalives stopped
    waits: list[tuple[float, str, str]] = field(default_factory=list)
    # (time, switch, its BGP sockets' kernel queues), each time a switch's changes: whether a silent session's
    # bytes sat unread at the receiver, unsent or retransmitted at the sender, or were never written
    queues: list[tuple[float, str, str]] = field(default_factory=list)

    def run(self) -> None:
        last: dict[str, str] = {}
        queued: dict[str, str] = {}
        while not self.stop.is_set():
            try:
                nodes = json.loads(self.slurm.command("sinfo", "--json").stdout)["nodes"]
                reasons = {
                    n["name"]: n["reason"] if "DRAIN" in n["state_flags"] and n["reason"].startswith("gpufabric ")
                    else ""
                    for n in nodes
                }  # fmt: skip
                at, bgpds = time.time(), _bgpds()
                self.samples.append((at, reasons, bgpds))
                for switch, pid in bgpds.items():
                    now = _threads(pid)
                    if now != last.get(switch):
                        self.waits.append((at, switch, now))
                        last[switch] = now
                    held = _bgp_queues(pid)
                    if held != queued.get(switch, ""):
                        self.queues.append((at, switch, held))
                        queued[switch] = held
            except Exception as exc:  # a reading missed (a daemon restarting): the next one counts
                self.errors.append(f"{type(exc).__name__}: {exc}"[:200])
            self.stop.wait(0.5)

    def windows(self) -> list[tuple[str, str, float, float]]:
        """(node, the switches its drain names, first seen drained, first seen resumed)."""
        out = []
        open_: dict[str, tuple[str, float]] = {}
        for at, reasons, _ in self.samples:
            for node, reason in reasons.items():
                subject = reason.split(": ", 1)[1] if reason else ""
                if node in open_ and open_[node][0] != subject:
                    # Resumed (or re-marked): a batch's resume and the next batch's drain of the same node can
                    # fall between two samples, so a new mark closes the window of the old one.
                    was, since = open_.pop(node)
                    out.append((node, was, since, at))
                if subject and node not in open_:
                    open_[node] = (subject, at)
        out += [(node, subject, since, float("inf")) for node, (subject, since) in open_.items()]
        return out

    def replaced(self) -> dict[str, tuple[float, float]]:
        """switch -> (last seen with its old bgpd, first seen with a new one); a restarting switch may show no
        bgpd at all in the samples between."""
        out: dict[str, tuple[float, float]] = {}
        last: dict[str, tuple[int, float]] = {}
        for at, _, pids in self.samples:
            for s, pid in pids.items():
                if not pid:
                    continue
                if s in last and last[s][0] != pid and s not in out:
                    out[s] = (last[s][1], at)
                if s not in out or last[s][0] == pid:
                    last[s] = (pid, at)
        return out


def _trail() -> Path:
    """The audit trail the commands of these tests write: the one tests/conftest.py names for every command
    (GPUFABRIC_AUDIT_LOG), which a push, a restart and an upgrade all honour before the lab's own."""
    return Path(os.environ["GPUFABRIC_AUDIT_LOG"])


def _bgpds() -> dict[str, int]:
    """Each switch's bgpd's PID (0 while it has none), found apart from gpufabric: the processes named bgpd
    in /proc, by the network namespace they run in (watchfrr starts each switch's daemons in its own)."""
    switch_of = {os.stat(f"/run/netns/{ns(s)}").st_ino: s for s in SWITCHES}
    found = dict.fromkeys(SWITCHES, 0)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if Path(f"/proc/{entry.name}/comm").read_text().strip() != "bgpd":
                continue
            switch = switch_of.get(os.stat(f"/proc/{entry.name}/ns/net").st_ino)
        except OSError:  # the process ended meanwhile
            continue
        if switch is not None:
            found[switch] = int(entry.name)
    return found


def _watching(lab: Lab) -> tuple[Watch, threading.Thread]:
    watch = Watch(lab.slurm)
    thread = threading.Thread(target=watch.run, daemon=True)
    thread.start()
    return watch, thread


def _drift_spines() -> None:
    """Each compute and storage spine's running BGP router-id set apart from the plan (as a person at the
    console might), then the fabric left to converge again: the push that puts the planned router-id back
    resets every BGP session of every spine (bgpd sends each peer a CEASE when its router-id changes)."""
    drifted = {spine: f"10.254.99.{number + 1}" for number, spine in enumerate(SPINES)}
    for spine, rid in drifted.items():
        # Saved too, so that the restart's reboot (FRR started from its saved file) keeps the drift.
        asn = PLAN.device(spine).asn
        subprocess.run(["vtysh", "-N", ns(spine), "-c", "configure terminal", "-c", f"router bgp {asn}",
                        "-c", f"bgp router-id {rid}", "-c", "end", "-c", "write memory"], check=True,
                       capture_output=True)  # fmt: skip
    wait_for(lambda: all(_settled(s, rid) for s, rid in drifted.items()), "the spines' sessions back", timeout=300)
    wait_for(_converged, "the fabric converged after the router-id drift", timeout=300)


def _settled(spine: str, rid: str) -> bool:
    """The spine runs router-id `rid` (its sessions were reset for it) and every session is established."""
    text = subprocess.run(["vtysh", "-N", ns(spine), "-c", "show ip bgp summary json"], capture_output=True, text=True,
                          check=False).stdout  # fmt: skip
    try:
        found = json.loads(text).get("ipv4Unicast", {})
    except ValueError:
        return False
    peers = found.get("peers", {})
    return found.get("routerId") == rid and bool(peers) and all(p.get("state") == "Established" for p in peers.values())


def _said(done: subprocess.CompletedProcess[str]) -> str:
    """A failed restart's or push's own account, for the assertion: each switch's record on a line of its own
    (its diff left out), then the run's other fields and the tail of stderr. The tail of the whole JSON cut off
    the record of the one switch that had failed."""
    try:
        out = json.loads(done.stdout)
    except ValueError:
        return f"exit {done.returncode}\n{done.stderr[-3000:]}\n{done.stdout[-3000:]}"
    if not isinstance(out, dict):
        return f"exit {done.returncode}\n{done.stderr[-3000:]}\n{done.stdout[-3000:]}"
    lines = [f"exit {done.returncode}"]
    lines += [json.dumps({k: v for k, v in d.items() if k != "diff"}) for d in out.get("devices", [])]
    lines += [json.dumps({k: v for k, v in out.items() if k != "devices"})[:4000], done.stderr[-2000:]]
    return "\n".join(lines)


def _change(lab: Lab, drain: str) -> tuple[list[Measured], Watch, dict, dict]:
    """Flows on; the rolling restart of every compute and storage switch; the spines' BGP-resetting push;
    flows off. Returns the flows, what Slurm and the switches did, and both commands' JSON."""
    _drift_spines()
    slurm = ("--slurm-conf", str(lab.slurm.conf), "--job-wait", "600")
    traffic = Traffic()
    traffic.start()
    watch, thread = _watching(lab)
    failed = True
    try:
        restart_drain = "always" if drain != "never" else "never"
        restarted = run("nornir", "restart", str(lab.intent), "--plane", "compute", "--plane", "storage", "--state-dir",
                        str(lab.state), "--drain", restart_drain, "--json", *slurm)  # fmt: skip
        assert restarted.returncode == 0, _said(restarted)
        push_started = time.time()
        spines = [arg for spine in SPINES for arg in ("--device", spine)]
        pushed = run("nornir", "push", str(lab.intent), *spines, "--state-dir", str(lab.state), "--drain", drain,
                     "--json", *slurm)  # fmt: skip
        assert pushed.returncode == 0, _said(pushed)
        push_ended = time.time()
        failed = False
    finally:
        try:
            measured = traffic.stop()
        except Exception:
            if not failed:
                raise
            measured = []  # the failure in flight is the one to show: an iperf3 cut short by it is not
        watch.stop.set()
        thread.join(timeout=60)
    result = json.loads(restarted.stdout)
    push = json.loads(pushed.stdout)
    push["_window"] = (push_started, push_ended)
    return measured, watch, result, push


def _allowed(m: Measured, windows: list[tuple[str, str, float, float]], at: tuple[float, float]) -> bool:
    """A loss in the second `at` of flow `m` is allowed when one of its ends' servers was drained in Slurm for
    the very leaf that end of the flow is cabled to."""
    for server in (m.flow.src, m.flow.dst):
        leaf = m.flow.leaf(server)
        for node, subject, since, until in windows:
            if node == server and leaf in subject.split(",") and since - MARGIN <= at[1] and at[0] <= until + MARGIN:
                return True
    return False


def _figures(name: str, measured: list[Measured], push_window: tuple[float, float], watch: Watch) -> dict:
    """The run's totals; the loss while the push reset the spines' BGP; and the loss from the first spine's
    bgpd going (the rollout restarts the leaves first, each batch back and converged before the next) until
    the push, which is what the spines' restarts cost."""
    start, end = push_window
    in_push = sum(lost for m in measured for (a, b, lost, _) in m.intervals if start <= a and b <= end)
    replaced = watch.replaced()
    first = min((replaced[s][0] for s in SPINES if s in replaced), default=float("inf"))
    spines = sum(lost for m in measured for (a, b, lost, _) in m.intervals if a >= first - MARGIN and b <= start)
    return {
        "run": name,
        "flows": {m.flow.name: {"sent": m.sent, "lost": m.lost} for m in measured},
        "sent": sum(m.sent for m in measured),
        "lost": sum(m.lost for m in measured),
        "lost_during_spine_push": in_push,
        "lost_while_spines_restarted": spines,
        "replaced": {s: [round(a, 1), round(b, 1)] for s, (a, b) in sorted(replaced.items())},
        "push_window": [round(start, 1), round(end, 1)],
        "losses": {m.flow.name: [(round(a, 1), lost) for (a, _, lost, _) in m.intervals if lost] for m in measured},
    }


FIGURES: list[dict] = []


def _print(capsys, figures: dict) -> None:
    FIGURES.append(figures)
    with capsys.disabled():
        print(f"\n{figures['run']}: {figures['lost']} of {figures['sent']} datagrams lost "
              f"({figures['lost_while_spines_restarted']} while the spines restarted, "
              f"{figures['lost_during_spine_push']} while the push reset the spines' BGP)")  # fmt: skip
        for name, f in figures["flows"].items():
            print(f"  {name}: {f['lost']} of {f['sent']}")
        if "allowed" in figures:
            print(
                f"  lost on flows whose leaf was being restarted, its servers drained in Slurm: {figures['allowed']};"
                f" elsewhere: {figures['not_allowed']}"
            )
    target = os.environ.get("GPUFABRIC_E2E_FIGURES")
    if target:
        Path(target).write_text(json.dumps(FIGURES, indent=2))


def _threads(pid: int) -> str:
    """A process's threads, each as "name:state:kernel function it waits in" (its /proc task entries), in
    thread order; "" for no process."""
    out = []
    for task in sorted(Path(f"/proc/{pid}/task").glob("*"), key=lambda t: int(t.name)) if pid else []:
        try:
            stat = (task / "stat").read_text()
            wchan = (task / "wchan").read_text().strip() or "-"
        except OSError:  # the thread or the process ended meanwhile
            continue
        name, state = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2]
        out.append(f"{name}:{state}:{wchan}")
    return " ".join(out)


BGP_PORT = 179
SYS_PIDFD_GETFD = 438  # Linux's common system call table: the same number on x86_64 and aarch64
_LIBC = ctypes.CDLL(None, use_errno=True)


def _bgp_queues(pid: int) -> str:
    """A bgpd's established BGP sockets that hold bytes, each as "peer tx=unacknowledged rx=unread timer
    retransmits"; "" when none does. A session silent with rx > 0 at its receiver was not read; with tx > 0
    and retransmits at its sender, the network lost it; with neither, nothing was written.

    Read from the sockets themselves: each of the bgpd's socket descriptors borrowed with pidfd_getfd(2),
    its queues by SIOCOUTQ and SIOCINQ (what /proc/net/tcp shows as tx_queue and rx_queue) and its
    state, retransmissions and zero-window probes by TCP_INFO. /proc/<pid>/net/tcp said the same, but each
    read walks the kernel's whole established-socket hash, every namespace's (7.0-7.7 ms of CPU for tcp and
    tcp6 here, quiet or at the suite's load): for 16 switches twice a second, a fifth of a core through the
    whole test."""
    if not pid:
        return ""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # the process ended meanwhile
        return ""
    out = []
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            try:
                if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("socket:"):
                    continue
            except OSError:  # closed meanwhile
                continue
            borrowed = _LIBC.syscall(SYS_PIDFD_GETFD, pidfd, int(name), 0)
            if borrowed < 0:
                continue
            try:
                sock = socket.socket(fileno=borrowed)
            except OSError:  # that number was reused meanwhile, for something not a socket
                os.close(borrowed)
                continue
            with sock:  # only this process's copy of the descriptor is closed: bgpd's socket stays as it was
                held = _held(sock)
            if held:
                out.append(held)
    except OSError:  # the process ended meanwhile
        return ""
    finally:
        os.close(pidfd)
    return "; ".join(sorted(out))


def _held(sock: socket.socket) -> str:
    """`sock` as _bgp_queues reports it when it is an established BGP session holding bytes, else ""."""
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
        return ""
    try:
        local, remote = sock.getsockname(), sock.getpeername()
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
        tx = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]
        rx = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0" * 4))[0]
    except OSError:  # listening, not connected, or closed meanwhile
        return ""
    state, _, retransmits, probes = info[:4]  # struct tcp_info's first bytes
    if state != 1 or BGP_PORT not in (local[1], remote[1]):  # 1: TCP_ESTABLISHED
        return ""
    if not (tx or rx or retransmits or probes):
        return ""
    timer = "zero-window probe" if probes else "retransmit" if tx else "-"
    return f"{remote[0].split('%')[0]} tx={tx} rx={rx} {timer} {retransmits}"


def _timeline(capsys, figures: dict, state: Path, lost_at: list[float], *push_ids: str, watch: Watch) -> None:
    """What a loss outside every drain window is read against (pytest cuts a long assertion message): when
    each switch's bgpd was replaced, each server's Slurm drain, every loss, the audit records of the restart
    and of the spines' push (each of its drains, waits and undrains), what each switch's FRR logged around
    each such loss (the lab's syslog), and the load average."""
    events = [json.loads(line) for line in _trail().read_text().splitlines()]
    said = _frr_said(state, lost_at)
    with capsys.disabled():
        print("\ntimeline of the drained run (unix seconds)")
        for key in ("replaced", "windows", "losses", "push_window"):
            print(f"  {key}: {json.dumps(figures[key])}")
        for e in events:
            if e.get("push_id") in push_ids:
                print(
                    f"  audit {e.get('time')} {e.get('switch')} {e.get('status')} {e.get('seconds', '')} "
                    f"{str(e.get('reason', ''))[:160]}"
                )
        print(f"  FRR's logs within {SAID_MARGIN:g} s of those losses ({len(said)} lines):")
        for line in said[:SAID_LINES]:
            print(f"    {line}")
        near = [(at, s, threads) for at, s, threads in watch.waits if any(abs(at - t) <= SAID_MARGIN for t in lost_at)]
        print(f"  each bgpd's threads, as they changed within {SAID_MARGIN:g} s of those losses ({len(near)}):")
        for at, switch, threads in near[:SAID_LINES]:
            print(f"    {at:.1f} {switch} {threads}")
        held = [(at, s, q) for at, s, q in watch.queues if any(abs(at - t) <= SAID_MARGIN for t in lost_at)]
        print(f"  each switch's BGP sockets holding bytes, as they changed within {SAID_MARGIN:g} s ({len(held)}):")
        for at, switch, queues in held[:SAID_LINES]:
            print(f"    {at:.1f} {switch} {queues or 'none'}")
        print(f"  load average: {os.getloadavg()}")


SAID_MARGIN = 20.0  # seconds either side of a loss (iperf3 reports each second's)
SAID_LINES = 400


def _frr_said(state: Path, around: list[float]) -> list[str]:
    """Each switch's FRR log lines (nodes/<switch>/frr.log, the lab's syslog) stamped within SAID_MARGIN of a
    time in `around`, in time order, each led by its switch."""
    found: list[tuple[float, str]] = []
    for log in sorted((state / "nodes").glob(f"*/{syslog.LOG_NAME}")):
        for line in log.read_text(errors="replace").splitlines():
            try:
                stamp = datetime.strptime(line.split(" ", 1)[0], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
            except ValueError:
                continue
            if any(abs(stamp.timestamp() - t) <= SAID_MARGIN for t in around):
                found.append((stamp.timestamp(), f"{log.parent.name} {line}"))
    return [line for _, line in sorted(found)]


def test_drained_every_flow_off_the_restarted_leaves_loses_nothing(lab, capsys):
    measured, watch, restarted, pushed = _change(lab, "auto")
    windows = watch.windows()
    allowed = not_allowed = 0
    for m in measured:
        for a, b, lost, _ in m.intervals:
            if lost and _allowed(m, windows, (a, b)):
                allowed += lost
            elif lost:
                not_allowed += lost
    figures = _figures("drained (--drain always restart, --drain auto push)", measured, pushed["_window"], watch)
    figures |= {"allowed": allowed, "not_allowed": not_allowed, "restart_s": restarted["seconds"],
                "push_s": pushed.get("seconds"), "samples": len(watch.samples), "watch_errors": watch.errors[:5],
                "windows": [(n, sub, round(a, 1), round(b, 1)) for n, sub, a, b in windows]}  # fmt: skip
    _print(capsys, figures)
    # The restart: every switch of both planes, drained first, each rebooted (its FRR restarted) and back.
    assert restarted["ok"] and restarted["drain"], restarted
    assert {d["device"]: d["state"] for d in restarted["devices"]} == dict.fromkeys(SWITCHES, "done")
    replaced = watch.replaced()
    assert set(replaced) == set(SWITCHES), sorted(set(SWITCHES) - set(replaced))
    # Each leaf's servers were drained in Slurm, for that leaf, before its bgpd went, and resumed after.
    for leaf in LEAVES:
        gone, back = replaced[leaf]
        for server in servers_behind(PLAN, leaf):
            held = [w for w in windows if w[0] == server.name and leaf in w[1].split(",")]
            assert any(since <= gone and back <= until < float("inf") for _, _, since, until in held), (
                leaf, server.name, held, replaced[leaf])  # fmt: skip
    assert all(until < float("inf") for *_, until in windows)  # every node gpufabric drained is resumed
    _, last, _ = watch.samples[-1]
    assert not any(last.values()), last  # and none is left drained
    # The push: only the spines' router-id changes, a BGP reset, so each spine is drained around it.
    drained = sorted(pushed["drain"]["switches"])
    assert drained == SPINES, pushed["drain"]
    # The traffic: a second with a loss is one where an end's server was drained for its leaf.
    assert all(m.sent > 1000 for m in measured), [(m.flow.name, m.sent) for m in measured]  # each ran throughout
    if not_allowed:
        lost_at = [a for m in measured for a, b, lost, _ in m.intervals if lost and not _allowed(m, windows, (a, b))]
        _timeline(capsys, figures, lab.state, lost_at, restarted["push_id"], str(pushed.get("push_id")), watch=watch)
    assert not_allowed == 0, [
        (m.flow.name, [(round(a), lost) for a, b, lost, _ in m.intervals if lost and not _allowed(m, windows, (a, b))])
        for m in measured
    ]
    assert figures["lost_during_spine_push"] == 0 and figures["lost_while_spines_restarted"] == 0
    trail = [json.loads(line) for line in _trail().read_text().splitlines()]
    ours = [r for r in trail if r.get("push_id") == restarted["push_id"]]
    statuses = {r["status"] for r in ours}
    assert {
        "scheduler-drained",
        "scheduler-resumed",
        "drained",
        "traffic-left",
        "undrained",
        "restart done",
    } <= statuses


def test_undrained_the_same_change_loses_datagrams(lab, capsys):
    measured, watch, restarted, pushed = _change(lab, "never")
    assert restarted["ok"] and not restarted["drain"], restarted
    assert pushed["drain"]["switches"] == []
    assert all(not reason for _, reasons, _ in watch.samples for reason in reasons.values())  # Slurm untouched
    figures = _figures("not drained (--drain never)", measured, pushed["_window"], watch)
    figures |= {"restart_s": restarted["seconds"], "push_s": pushed.get("seconds")}
    _print(capsys, figures)
    assert set(watch.replaced()) == set(SWITCHES)
    assert figures["lost"] > 0


# -- jobs ---------------------------------------------------------------------------------------------------

LEAF = "cmp-su1-leaf1"  # gpu01 and gpu02 depend on it alone on rail 1


def _restart(lab: Lab, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["nornir", "restart", str(lab.intent), "--device", LEAF, "--state-dir", str(lab.state), "--slurm-conf",
         str(lab.slurm.conf), "--json", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
    )  # fmt: skip


def test_a_real_job_holds_its_leafs_restart_until_it_ends(lab, capsys):
    lab.slurm.reset()
    job, stop = lab.slurm.submit("gpu01")
    before = frr_node.pids(ns(LEAF))["bgpd"]
    asked = time.monotonic()
    proc = _restart(lab, "--job-wait", "900")
    try:
        wait_for(lambda: lab.slurm.node("gpu01")["reason"].startswith("gpufabric "), "gpu01 drained by the restart")
        wait_for(lambda: lab.slurm.node("gpu02")["reason"].startswith("gpufabric "), "gpu02 drained by the restart")
        # Held: the job runs, gpu01 stays drained, the leaf's bgpd is the same process, for as long as we look.
        watched_until = time.monotonic() + 15
        while time.monotonic() < watched_until:
            assert proc.poll() is None and frr_node.pids(ns(LEAF))["bgpd"] == before
            assert lab.slurm.job_state(job) == "RUNNING"
            time.sleep(1)
        ended = time.monotonic()
        lab.slurm.end(job, stop)
        out, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-3000:]
    result = json.loads(out)
    assert result["ok"] and [d["state"] for d in result["devices"]] == ["done"]
    assert frr_node.pids(ns(LEAF))["bgpd"] != before
    assert not lab.slurm.drained("gpu01") and not lab.slurm.drained("gpu02")
    trail = [json.loads(line) for line in _trail().read_text().splitlines()]
    (drain,) = [r for r in trail if r.get("push_id") == result["push_id"] and r["status"] == "scheduler-drained"]
    assert sorted(drain["nodes"]) == ["gpu01", "gpu02"] and drain["holding"] == {}
    held = ended - asked
    with capsys.disabled():
        print(
            f"\njob {job} on gpu01 held {LEAF}'s restart: the scheduler wait took {drain['waited']:.1f} s "
            f"(the job was ended {held:.1f} s after the restart was asked); restart {result['seconds']:.1f} s"
        )
    FIGURES.append({"run": "job held", "waited": drain["waited"], "job_ended_after": round(held, 1),
                    "restart_s": result["seconds"]})  # fmt: skip
    assert drain["waited"] >= 15  # at least the time we watched it held


def test_a_short_job_wait_refuses_the_restart_and_changes_nothing(lab, capsys):
    lab.slurm.reset()
    job, stop = lab.slurm.submit("gpu01")
    before = frr_node.pids(ns(LEAF))["bgpd"]
    try:
        proc = _restart(lab, "--job-wait", "3")
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 4, err[-3000:]
        result = json.loads(out)
        (device,) = result["devices"]
        assert device["state"] == "failed" and "refused, nothing was changed" in device["reason"], device
        assert frr_node.pids(ns(LEAF))["bgpd"] == before  # not restarted
        assert not Path(f"/etc/frr/{ns(LEAF)}/gpufabric.drained").exists()  # not drained
        assert "GF-DRAIN" not in subprocess.run(["vtysh", "-N", ns(LEAF), "-c", "show running-config"],
                                                capture_output=True, text=True, check=False).stdout  # fmt: skip
        assert not lab.slurm.drained("gpu01") and not lab.slurm.drained("gpu02")  # put back
        assert lab.slurm.job_state(job) == "RUNNING"
        with capsys.disabled():
            print(f"\n--job-wait 3 with job {job} running on gpu01: exit 4, {device['reason']}")
    finally:
        lab.slurm.end(job, stop)
