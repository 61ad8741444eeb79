"""`gpufabric ib lab up|down|status`: the planned fabric in ibsim with the real OpenSM, left running.

`up` exports the topology, starts ibsim, reads the fabric with the real ibnetdiscover (the
discovery), renders OpenSM's files and starts the primary and the standby SM, each in its own
session so they outlive the command. It records in the state folder what it started (PID and
the kernel's start time of each process, so a recycled PID is never signalled) and what it
wrote. `down` stops exactly those processes, by PID, and removes the state folder. The tools
reach the lab through `runner()` (the recorded socket name and the SM's node).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufabric.files import write_atomic
from gpufabric.ib import discovery, opensm, sim, topology
from gpufabric.ib.design_file import IbIntent
from gpufabric.ib.errors import fail
from gpufabric.ib.results import Runner
from gpufabric.inputs import InputError, json_text, read_text
from gpufabric.intent.errors import Problem
from gpufabric.outputs import json_dumps
from gpufabric.pids import alive, stop

STATE = "ib-lab.json"


@dataclass(frozen=True)
class LabUp:
    fabric: str
    ibsim_seconds: float
    subnet_up_seconds: float
    processes: dict[str, int]
    primary_restarts: int = 0  # the primary started again: it had stopped sweeping when the standby joined

    @property
    def restarted(self) -> str:
        """What an operator is told of a restart of the primary ("" when there was none)."""
        if not self.primary_restarts:
            return ""
        return "; the primary subnet manager stopped sweeping when the standby joined and was started again"


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


STATE_MAX_BYTES = 64 * 1024  # a record names three processes, a socket and a node
_SOCKNAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
_NODE_ID = re.compile(r'^[^"\x00-\x1f\x7f]{1,130}$')
PID_MAX = 1 << 22  # the kernel's largest pid_max


def _record(state_dir: Path) -> dict[str, Any] | None:
    """What `up` recorded, read as outside input (the folder is the user's): a regular file, not a
    link planted in its place, bounded, and of the shape `up` writes; its PIDs are signalled by `down`."""
    path = state_dir / STATE
    if not os.path.lexists(path):
        return None
    what = f"the InfiniBand lab's record ({STATE}, written by 'gpufabric ib lab up')"
    state = json_text(read_text(path, what=what, max_bytes=STATE_MAX_BYTES, follow_links=False), path, what)
    if not _well_formed(state):
        raise InputError(
            str(path),
            [Problem((), f"is not {what}", "stop what runs by hand, remove the folder, and bring the lab up again")],
        )
    return dict(state)


def _well_formed(state: Any) -> bool:
    if not isinstance(state, dict) or not isinstance(state.get("processes"), dict):
        return False
    procs = state["processes"].items()
    return (
        all(name in ("ibsim", "primary", "standby") and _process(p) for name, p in procs)
        and isinstance(state.get("sockname"), str)
        and _SOCKNAME.match(state["sockname"]) is not None
        and isinstance(state.get("sm_host"), str)
        and _NODE_ID.match(state["sm_host"]) is not None
        and isinstance(state.get("created", False), bool)
    )


def _process(proc: Any) -> bool:
    """{pid, start}: a PID that is no kernel thread or init, and a start time (or none, when unread)."""
    if not isinstance(proc, dict) or set(proc) != {"pid", "start"}:
        return False
    pid, start = proc["pid"], proc["start"]
    return type(pid) is int and 1 < pid <= PID_MAX and (start is None or (type(start) is int and start >= 0))


def status(state_dir: Path) -> dict[str, bool]:
    """Each recorded process: still the one `up` started, and running."""
    state = _record(state_dir)
    if state is None:
        return {}
    return {name: _ours(p) for name, p in state["processes"].items()}


def _ours(proc: dict[str, int]) -> bool:
    return alive(proc["pid"]) and _start_time(proc["pid"]) == proc["start"]


def up(intent: IbIntent, state_dir: Path) -> LabUp:
    if any(status(state_dir).values()):
        raise fail(str(state_dir), "an InfiniBand lab is already up here", "run 'gpufabric ib lab down' first")
    if missing := sim.missing():
        raise fail("ib lab", f"missing {', '.join(missing)}", "apt-get install ibsim-utils opensm infiniband-diags")
    created = not state_dir.exists()
    state_dir.mkdir(parents=True, exist_ok=True)
    fabric = intent.fabric
    topo = state_dir / "fabric.topo"
    write_atomic(topo, topology.render(fabric))
    size = sim.limits(len(fabric.nodes), len(fabric.switches), sum(n.ports + 1 for n in fabric.nodes))
    simulator = sim.Simulator(state_dir, topo, limits=size)
    sms: list[sim.OpenSm] = []
    try:
        ibsim_seconds = simulator.start()
        found = discovery.discover(fabric, topology.parse(simulator.run("ibnetdiscover"), "ibnetdiscover"))
        write_atomic(state_dir / "discovery.json", found.dumps())
        roles = ("primary", "standby") if fabric.sm.standby else ("primary",)
        for role in roles:
            folder = state_dir / role
            # OpenSM runs in `folder` and takes its files' paths as written: absolute, so a relative
            # --state-dir does not name them twice over (and opensm.conf takes only absolute paths).
            files = opensm.render(fabric, found, intent.settings, folder.absolute(), role=role)  # type: ignore[arg-type]
            opensm.write(files, folder)
            name = fabric.sm.primary if role == "primary" else fabric.sm.standby
            assert name is not None
            sms.append(sim.OpenSm(simulator, folder, folder / "opensm.conf", topology.node_id(fabric.by_name[name])))
        started = sim.start_managers(sms[0], sms[1] if len(sms) > 1 else None)
        procs = {"ibsim": simulator.proc, **{role: sm.proc for role, sm in zip(roles, sms, strict=True)}}
        state = {
            "fabric": fabric.design.name,
            "sockname": simulator.sockname,
            "sm_host": sms[0].host,
            "created": created,
            "processes": {n: {"pid": p.pid, "start": _start_time(p.pid)} for n, p in procs.items() if p},
        }
        write_atomic(state_dir / STATE, json_dumps(state, indent=2) + "\n")
        return LabUp(
            fabric.design.name,
            ibsim_seconds,
            started.subnet_up_seconds,
            {n: p.pid for n, p in procs.items() if p},
            started.primary_restarts,
        )
    except BaseException:
        for sm in reversed(sms):
            sm.stop()
        simulator.stop()
        if created:
            shutil.rmtree(state_dir, ignore_errors=True)
        raise


def down(state_dir: Path) -> list[str]:
    """Stop what `up` recorded (standby, primary, ibsim), by PID; remove the state folder's files."""
    state = _record(state_dir)
    if state is None:
        return []
    stopped = []
    for name in reversed(list(state["processes"])):
        proc = state["processes"][name]
        if _ours(proc):
            stop([proc["pid"]], grace=10.0)
            stopped.append(name)
    if state.get("created"):
        shutil.rmtree(state_dir, ignore_errors=True)
    else:
        for name in (STATE, "fabric.topo", "discovery.json", "ibsim.log", "ibsim.console"):
            with contextlib.suppress(FileNotFoundError):
                (state_dir / name).unlink()
        for folder in ("primary", "standby"):
            shutil.rmtree(state_dir / folder, ignore_errors=True)
    return stopped


def runner(state_dir: Path) -> Runner:
    """Run infiniband-diags on the lab's fabric, from the SM's node."""
    state = _record(state_dir)
    if state is None or not status(state_dir).get("ibsim"):
        raise fail(str(state_dir), "no InfiniBand lab is up here", "run 'gpufabric ib lab up' first")
    simulator = sim.Simulator(state_dir, state_dir / "fabric.topo", sockname=state["sockname"])

    def run(args: Sequence[str]) -> str:
        return simulator.run(*args, host=state["sm_host"])

    return run


def console(state_dir: Path, command: str) -> None:
    """One command for ibsim's console (unlink, relink, link ...)."""
    if not status(state_dir).get("ibsim"):
        raise fail(str(state_dir), "no InfiniBand lab is up here", "run 'gpufabric ib lab up' first")
    sim.Simulator(state_dir, state_dir / "fabric.topo").console(command)
