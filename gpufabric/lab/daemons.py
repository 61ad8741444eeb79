"""Start every switch's FRR, sshd and lldpd in parallel, record their PIDs, and stop exactly those.

Each node gets a directory in the state dir (its UTS namespace file, sshd and lldpd files and
logs) and an FRR pathspace in /etc/frr/<node>. Both are recorded before anything is put in
them, so `down` can clean up after a crash at any point.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from gpufabric.drivers.switch_paths import CANDIDATE_FOLDER, PATHSPACE
from gpufabric.errors import GpufabricError
from gpufabric.files import PRIVATE, write_atomic
from gpufabric.fleet.lab import registry
from gpufabric.fleet.lab.credentials import LabLogin
from gpufabric.fleet.lab.state import LabState, read_record
from gpufabric.fleet.lab.topology import LabTopology, Node
from gpufabric.inputs import read_text
from gpufabric.lab import frr_node, lldp_node, netlink, processes, sshd_node, syslog
from gpufabric.outputs import json_dumps

WORKERS = 8
# Every switch's sshd and FRR, started together: seconds on a quiet machine, more on a loaded one (a CI
# runner). Only a lab that never comes up waits this long.
READY_TIMEOUT = 90.0
SYSLOG_LOG = "syslog.log"  # the labs' syslog's own output, beside the labs' registry
SYSLOG_RECORD = "syslog.json"  # its PID, beside the registry: the last lab down stops it


class LabDaemonError(netlink.LabCommandError):
    pass


def node_dir(state_dir: Path, node: str) -> Path:
    """A switch's folder in the state dir, by its namespace's name (the switch's own in the default lab)."""
    return state_dir / "nodes" / node


@dataclass
class Started:
    node: str
    pids: dict[str, int] = field(default_factory=dict)


def _uts(node: str, directory: Path) -> Path:
    """A UTS namespace bound to a file, so FRR, sshd and lldpd all see the switch's own hostname."""
    uts = directory / "uts"
    if not os.path.ismount(uts):
        uts.touch()
        netlink.run("unshare", f"--uts={uts}", "hostname", node)
    return uts


def _start_node(node: Node, state_dir: Path, login: LabLogin, known: dict[str, int]) -> Started:
    # Namespace, pathspace, folders and PIDs by the lab's name for the switch; its host name is its own.
    ns = node.netns
    directory = node_dir(state_dir, ns)
    uts = _uts(node.name, directory)
    started = Started(ns)
    if not frr_node.running(ns):
        if not (frr_node.etc_dir(ns) / "daemons").exists():
            frr_node.write_pathspace(ns, node.name)
        started.pids.update(frr_node.start(ns, uts))
    if node.mgmt_ip and not processes.alive(known.get(f"{ns}/sshd", 0)):
        config = sshd_node.write_config(
            ns, directory, node.mgmt_ip.split("/")[0], login, lldp_node.socket_path(directory)
        )
        started.pids["sshd"] = sshd_node.start(ns, directory, uts, config, login)
    if not processes.alive(known.get(f"{ns}/lldpd", 0)):
        started.pids["lldpd"] = lldp_node.start(ns, directory, uts)
    return started


def _record_dirs(topo: LabTopology, state: LabState, state_dir: Path) -> None:
    for node in topo.nodes:
        foreign = frr_node.etc_dir(node.netns)
        if foreign.exists() and str(foreign) not in state.paths:
            raise LabDaemonError(f"{foreign} exists but this lab did not make it; remove it or rename the switch")
        directory = node_dir(state_dir, node.netns)
        paths = (
            directory,
            frr_node.etc_dir(node.netns),
            frr_node.run_dir(node.netns),
            lldp_node.socket_path(directory).parent,
        )
        for path in paths:
            if str(path) not in state.paths:
                state.paths.append(str(path))
    state.save(state_dir)
    for node in topo.nodes:
        node_dir(state_dir, node.netns).mkdir(parents=True, exist_ok=True)


def start_all(topo: LabTopology, state: LabState, state_dir: Path, login: LabLogin) -> None:
    _record_dirs(topo, state, state_dir)
    start_syslog()
    known = dict(state.pids)
    with ThreadPoolExecutor(WORKERS) as pool:
        futures = [pool.submit(_start_node, node, state_dir, login, known) for node in topo.nodes]
        for future in futures:
            started = future.result()
            for daemon, pid in started.pids.items():
                state.pids[f"{started.node}/{daemon}"] = pid
            state.save(state_dir)
    _known_hosts(topo, state_dir)
    _wait_ready(topo)


def start_syslog(path: Path = syslog.SOCKET, registry_dir: Path | None = None) -> None:
    """The labs' syslog (gpufabric/lab/syslog.py), started before FRR when nothing serves `path`: each switch's
    FRR messages in its nodes/<switch>/frr.log, for every lab up. One that serves already (another lab's) is
    kept; a syslog daemon of the machine's, or a socket no lab made, is left alone. Decided holding the
    registry, so a lab coming up and the last lab going down never both decide at once."""
    with registry.locked(registry_dir) as held:
        pid = recorded_syslog(held)
        if path.exists() or path.is_symlink():
            if syslog.served(path) or pid is None:
                return
            path.unlink()  # the labs', left by its process that was killed
        command = [sys.executable, "-m", "gpufabric.lab.syslog", str(path), str(held)]
        pid = processes.spawn(command, held.parent / SYSLOG_LOG)
        write_atomic(held.parent / SYSLOG_RECORD, json_dumps({"pid": pid, "socket": str(path)}) + "\n")
        # FRR's daemons wait on it when its queue is full: it runs at their priority (not root: it runs, less promptly).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.setpriority(os.PRIO_PROCESS, pid, frr_node.CONTROL_PLANE_NICENESS)
        deadline = time.monotonic() + READY_TIMEOUT
        while not syslog.served(path):
            if not processes.alive(pid) or time.monotonic() > deadline:
                raise LabDaemonError(f"the lab's syslog did not start serving {path}: see {held.parent / SYSLOG_LOG}")
            time.sleep(0.05)


def stop_syslog(lab: str, path: Path = syslog.SOCKET, registry_dir: Path | None = None) -> bool:
    """Stop the labs' syslog (it removes its socket) when `lab` is the last lab up; a socket its process left,
    killed, is removed here. False: other labs are up, and it serves them on."""
    with registry.locked(registry_dir) as held:
        if any(other.name != lab for other in registry.labs(held)):
            return False
        pid = recorded_syslog(held)
        if pid is None:
            return True
        if _is_syslog(pid):
            processes.stop([pid])
        if path.is_socket() and not syslog.served(path):
            path.unlink(missing_ok=True)
        for name in (SYSLOG_RECORD, SYSLOG_LOG, syslog.GONE_LOG):
            (held.parent / name).unlink(missing_ok=True)
        return True


def forget_lab(lab: str, state_dir: Path, path: Path = syslog.SOCKET, registry_dir: Path | None = None) -> None:
    """`lab` taken out of the labs' registry, and the labs' syslog stopped if no lab is left up. Two labs going
    down at once each saw the other still up at their own syslog step (stop_syslog, right after their FRR
    stopped) and left the syslog to it, so it outlived both: asked again once the lab is forgotten, the last of
    them stops it."""
    registry.forget(lab, state_dir, registry_dir)
    stop_syslog(lab, path, registry_dir)
    registry.tidy(registry_dir)  # stop_syslog's lock made the folder again


def recorded_syslog(registry_dir: Path | None = None) -> int | None:
    """The PID `lab up` recorded for the labs' syslog, or None (none started: the machine's own syslog daemon
    serves /dev/log; or a record that is not what `lab up` writes, read as none, so a new syslog is started)."""
    registry_dir = registry.folder(registry_dir)
    try:
        doc = read_record(registry_dir.parent / SYSLOG_RECORD, "the labs' syslog record", lambda d: d)
    except GpufabricError:
        return None
    pid = doc.get("pid") if doc is not None else None
    return pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 1 else None


def _is_syslog(pid: int) -> bool:
    """pid is the lab's syslog still (a PID recorded long ago may since be another process's)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"gpufabric.lab.syslog" in fh.read(syslog.MAX_COMMAND_LINE)
    except OSError:
        return False


def _known_hosts(topo: LabTopology, state_dir: Path) -> None:
    """Each switch's host key at its management address, so clients can reject anything else."""
    lines = []
    for node in topo.nodes:
        key = node_dir(state_dir, node.netns) / "ssh_host_ed25519_key.pub"
        if node.mgmt_ip and key.is_file():
            text = read_text(
                key, what="a switch's SSH host key (ssh-keygen's .pub)", max_bytes=64 * 1024, follow_links=False
            )
            kind, blob = text.split()[:2]
            lines.append(f"{node.mgmt_ip.split('/')[0]} {kind} {blob}")
    # The host keys a push trusts: owner-only, as ssh keeps ~/.ssh/known_hosts and gpufabric its TLS pins.
    write_atomic(state_dir / "known_hosts", "\n".join(lines) + "\n", PRIVATE)


def _ssh_open(address: str) -> bool:
    try:
        with socket.create_connection((address, 22), timeout=0.5):
            return True
    except OSError:
        return False


def _wait_ready(topo: LabTopology) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    pending = [n for n in topo.nodes if n.mgmt_ip]
    while pending and time.monotonic() < deadline:
        pending = [n for n in pending if not (_ssh_open(str(n.mgmt_ip).split("/")[0]) and frr_node.running(n.netns))]
        if pending:
            time.sleep(0.1)
    if pending:
        raise LabDaemonError(
            f"{pending[0].name}: sshd or FRR did not come up in {READY_TIMEOUT:.0f} s; "
            f"see {pending[0].name}'s logs under the state dir's nodes/ folder"
        )


def daemon_status(node: str, state: LabState) -> dict[str, bool]:
    """`node`: the switch's namespace (LabTopology.ns), which its PIDs are recorded under."""
    return {
        "frr": frr_node.running(node),
        "sshd": processes.alive(state.pids.get(f"{node}/sshd", 0)),
        "lldpd": processes.alive(state.pids.get(f"{node}/lldpd", 0)),
    }


def stop_all(state: LabState) -> None:
    """Stop every process inside the lab's namespaces, watchfrr first so it restarts nothing.

    Only processes in namespaces this lab made are signalled: a PID recorded before a crash
    may since belong to someone else, a process in the lab's namespace cannot.
    """
    existing = netlink.namespaces()
    # Again until none is left: a watchfrr stopped a moment too late may have started a daemon after
    # the list was taken, and a namespace removed with a process inside leaves that process running.
    for _ in range(5):
        inside = {pid for ns in state.namespaces if ns in existing for pid in processes.in_namespace(ns)}
        if not inside:
            return
        watchers = [pid for key, pid in state.pids.items() if key.endswith("/watchfrr") and pid in inside]
        processes.stop(watchers)
        processes.stop(sorted(inside - set(watchers)))
    raise netlink.LabCommandError("processes keep starting in the lab's namespaces; they were left running")


def remove_candidate_folders(state: LabState, tmp: Path = Path(CANDIDATE_FOLDER).parent) -> list[Path]:
    """The candidate folders this lab's switches kept in /tmp, which they share with this machine: a session cut
    off (a push interrupted, a controller that died) never removed its own, as a real switch keeps them until it
    boots. Only folders named after one of the lab's switches, owned by this user, and never through a link."""
    removed: list[Path] = []
    prefix = Path(CANDIDATE_FOLDER).name
    for switch in state.namespaces:
        if not PATHSPACE.fullmatch(switch):
            continue  # a state record changed by hand: its names widen no pattern
        for folder in tmp.glob(f"{prefix}{switch}.*"):
            held = folder.lstat()
            if stat.S_ISDIR(held.st_mode) and held.st_uid == os.getuid():
                shutil.rmtree(folder, ignore_errors=True)
                removed.append(folder)
    return removed


def remove_dirs(state: LabState) -> None:
    for path in map(Path, state.paths):
        uts = path / "uts"
        if os.path.ismount(uts):
            subprocess.run(["umount", str(uts)], check=False)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
