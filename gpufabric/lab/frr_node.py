"""FRR per switch: a pathspace /etc/frr/<node>/ and watchfrr entering the node's network namespace.

The node starts with an empty configuration (hostname only): `nornir push` puts the
routing on it, as on a switch fresh out of zero-touch provisioning.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from pathlib import Path

from gpufabric.files import write_atomic
from gpufabric.inputs import read_text
from gpufabric.lab import netlink

FRR_ETC = Path("/etc/frr")
FRR_RUN = Path("/var/run/frr")
FRRINIT = "/usr/lib/frr/frrinit.sh"
# vtysh keeps its commands in the user's ~/.history_frr (this machine's root's): not the lab's, whether
# frrinit's and watchfrr's (loading a configuration) or the readiness probe's.
NO_HISTORY = ("env", "VTYSH_HISTFILE=/dev/null")

DAEMONS = """\
# gpufabric lab: {node}
bgpd=yes
bfdd=yes
vtysh_enable=yes
frr_profile="datacenter"
watchfrr_options="--netns"
zebra_options="-A 127.0.0.1 -s 90000000"
bgpd_options="-A 127.0.0.1"
staticd_options="-A 127.0.0.1"
bfdd_options="-A 127.0.0.1"
"""

EMPTY_CONFIG = """\
frr defaults datacenter
hostname {node}
log syslog informational
service integrated-vtysh-config
!
"""


def etc_dir(node: str) -> Path:
    return FRR_ETC / node


def run_dir(node: str) -> Path:
    return FRR_RUN / node


def write_pathspace(node: str, hostname: str | None = None) -> Path:
    """/etc/frr/<node>/ with daemons, an empty frr.conf and vtysh.conf, owned by frr (0640). `node` is the
    pathspace (the switch's namespace), `hostname` the switch's name when the lab's name for it differs."""
    d = etc_dir(node)
    d.mkdir(mode=0o750, exist_ok=True)
    files = {"daemons": DAEMONS, "frr.conf": EMPTY_CONFIG, "vtysh.conf": "service integrated-vtysh-config\n"}
    for name, text in files.items():
        write_atomic(d / name, text.format(node=hostname or node), mode=0o640)
        shutil.chown(d / name, "frr", "frr")
    shutil.chown(d, "frr", "frr")
    return d


# A switch runs BFD in hardware and its routing daemons on a control-plane CPU of their own; the lab's sixteen
# switches share two cores with everything else on the machine. At the default priority a loaded machine
# made bfdd miss its 150 ms transmit slot three times over (a healthy session taken down), and at a load
# average of 20 a drained spine's restart cost flows on another rail seconds of loss that no drain could
# have moved. Every daemon's niceness is the lab's stand-in for that CPU (CAP_SYS_NICE: the lab runs as root).
# FRR starts at it too: at the default priority, beside another lab's busy daemons at this one, the start took
# 55 s in CI (watchfrr's startup timeout: FRR's init script returned with no daemon answering).
CONTROL_PLANE_NICENESS = -15


# FRR's init script starts watchfrr, which starts the daemons in a job of its own (`watchfrr.sh restart all`:
# each daemon, then `vtysh -b`, the whole frr.conf), and returns once every daemon answers, or after watchfrr's
# startup timeout (55 s). So the load may still run when it returns. start waits for watchfrr's job, bounded:
# the daemons run either way, and what follows (a push, a convergence wait) sees a load that never came.
LOAD_SECONDS = 120.0
LOAD_POLL_SECONDS = 0.2


def start(node: str, uts: Path) -> dict[str, int]:
    """Start watchfrr (which starts zebra, bgpd, staticd and bfdd inside the namespace); return daemon -> PID
    once watchfrr's start job, frr.conf's load included, has ended (or after LOAD_SECONDS)."""
    # `nice` adds to this process's niceness: the lab's own, 0 unless the lab runs niced.
    niced = ("nice", "-n", str(CONTROL_PLANE_NICENESS))
    netlink.run(*niced, "nsenter", f"--uts={uts}", *NO_HISTORY, FRRINIT, "start", node)
    started = pids(node)
    for pid in started.values():
        # Gone already (watchfrr restarts it) or no privilege: the daemon runs, only less promptly.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.setpriority(os.PRIO_PROCESS, pid, CONTROL_PLANE_NICENESS)
    wait_started(node)
    return started


def wait_started(node: str, seconds: float = LOAD_SECONDS) -> bool:
    """Wait until the node's watchfrr runs no job (a child of its own: the job's shell, which ends after the
    load); False when one still runs after `seconds`. A node without a watchfrr has nothing to wait for."""
    deadline = time.monotonic() + seconds
    while (watchfrr := pids(node).get("watchfrr")) is not None and _has_child(watchfrr):
        if time.monotonic() >= deadline:
            return False
        time.sleep(LOAD_POLL_SECONDS)
    return True


def _has_child(pid: int) -> bool:
    return subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, check=False).returncode == 0


def pids(node: str) -> dict[str, int]:
    found = {}
    for f in sorted(run_dir(node).glob("*.pid")):
        try:
            found[f.stem] = int(
                read_text(f, what="an FRR daemon's PID file", max_bytes=4096, follow_links=False).strip()
            )
        except ValueError:
            continue
    return found


def running(node: str) -> bool:
    return netlink.run(*NO_HISTORY, "vtysh", "-N", node, "-c", "show version", check=False).returncode == 0
