"""Maintenance as a library call: `drain(request)`, `undrain(request)`, `status(request) -> MaintenanceResult`.

A drain opens the fleet (gpufabric.fleet decides lab or real switches), writes the audit trail first
(gpufabric/push/audit.py: a drain that cannot leave its trail changes nothing), runs the Nornir task
`nornir_tasks.maintenance.drain` on each selected switch (the vendor's mechanism, and the marker the
driver leaves on the switch), then waits until the traffic has left (gpufabric/maintenance/wait.py).
An undrain is the same the other way, waiting until the plan's ECMP widths are back. `status` reads
what each switch records: it finds a drain whoever made it, a controller that crashed included.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nornir.core.task import AggregatedResult

from gpufabric.fleet.access import Access
from gpufabric.fleet.args import FleetArgs
from gpufabric.fleet.connect import switch_connector
from gpufabric.fleet.errors import EmptySelectionError
from gpufabric.fleet.push_id import PushId, new_push_id, tag
from gpufabric.fleet.target import Fleet, lab_trail, open_fleet
from gpufabric.maintenance.wait import WaitResult, drained_among, facing, peers_of, wait_drained, wait_restored
from gpufabric.push.audit import AuditError, AuditLog, SwitchFacts, Trail, Who, default_path
from nornir_tasks import maintenance as tasks

DRAIN_TIMEOUT = 300.0  # seconds a drain waits for the traffic to leave (BGP updates, then the ports' rates)
MAX_RATE = 1_000_000.0  # bits/s a drained switch's fabric port may still receive: routing and LLDP, no traffic


@dataclass(frozen=True)
class MaintenanceRequest:
    fleet: FleetArgs  # which switches (--device), and how to reach them
    reason: str = ""
    wait: bool = True  # wait on the fabric after the change
    timeout: float = DRAIN_TIMEOUT
    max_rate: float = MAX_RATE
    force: bool = False  # undrain whoever holds the drain (another push, a person)
    audit_log: Path | None = None  # None: the lab's state folder for a lab that is up, else the default


class MaintenanceWatcher:
    """What the service tells its caller while it runs; the command line shows it."""

    def reached(self, access: Access) -> None:
        """The fleet is open; `access.notes` are for the person running the command."""

    def waiting(self, what: str, timeout: float) -> None:
        """The change is made; the wait on the fabric begins."""


@dataclass(frozen=True)
class SwitchState:
    device: str
    changed: bool
    failed: bool
    state: dict[str, Any]  # the driver's maintenance_status() after the change (empty when unreadable)
    diff: str = ""
    error: str = ""


@dataclass(frozen=True)
class MaintenanceResult:
    action: str  # drain | undrain | status
    push_id: str | None
    target: str  # "lab" or "switches"
    switches: tuple[SwitchState, ...]
    wait: WaitResult | None
    seconds: float
    trail_error: AuditError | None = None

    @property
    def ok(self) -> bool:
        waited = self.wait is None or self.wait.done
        return waited and self.trail_error is None and not any(s.failed for s in self.switches)

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "push_id": self.push_id,
            "target": self.target,
            "ok": self.ok,
            "seconds": round(self.seconds, 2),
            "switches": [asdict(s) for s in self.switches],
            "wait": None if self.wait is None else asdict(self.wait),
            "trail_error": None if self.trail_error is None else str(self.trail_error),
        }


def default_trail(args: FleetArgs) -> Path:
    """Where maintenance keeps its records: the same trail as a push's (the lab's for a lab that is up)."""
    return lab_trail(args) or default_path()


def drain(request: MaintenanceRequest, watcher: MaintenanceWatcher | None = None,
          *, push_id: PushId | None = None) -> MaintenanceResult:  # fmt: skip
    return _change("drain", request, watcher or MaintenanceWatcher(), push_id or new_push_id())


def undrain(request: MaintenanceRequest, watcher: MaintenanceWatcher | None = None,
            *, push_id: PushId | None = None) -> MaintenanceResult:  # fmt: skip
    return _change("undrain", request, watcher or MaintenanceWatcher(), push_id or new_push_id())


def status(request: MaintenanceRequest, watcher: MaintenanceWatcher | None = None) -> MaintenanceResult:
    started = time.monotonic()
    fleet = open_fleet(request.fleet)
    (watcher or MaintenanceWatcher()).reached(fleet.access)
    try:
        found = _states(fleet.nr.run(task=tasks.status, on_failed=True), fleet.names)
    finally:
        fleet.nr.close_connections()
    return MaintenanceResult("status", None, _target(fleet), found, None, time.monotonic() - started)


def _change(action: str, request: MaintenanceRequest, watcher: MaintenanceWatcher, ident: PushId) -> MaintenanceResult:
    if not request.fleet.devices:
        raise EmptySelectionError(f"{action} names its switches: give --device NAME (repeatable)")
    started = time.monotonic()
    with AuditLog(request.audit_log or default_trail(request.fleet)) as trail_file:
        fleet = open_fleet(request.fleet)
        watcher.reached(fleet.access)
        tag(fleet.nr.inventory, ident)
        who = Who.now(fleet.access.username, ident.controller)
        trail = Trail(
            trail_file,
            ident.id,
            ident.started,
            fleet.plan.intent.fabric.name,
            who,
            False,
            _target(fleet),
            {d.name: SwitchFacts(d.platform, d.plane) for d in fleet.targets},
        )
        settle = Settle(request.wait, request.timeout, request.max_rate)
        try:
            if action == "drain":
                by = f"{who.sudo_user or who.os_user}@{ident.controller}"
                found = drain_switches(fleet, fleet.names, ident, reason=request.reason, by=by, settle=settle,
                                       trail=trail, watcher=watcher)  # fmt: skip
            else:
                found = undrain_switches(fleet, fleet.names, ident, force=request.force, settle=settle, trail=trail,
                                         watcher=watcher)  # fmt: skip
        finally:
            fleet.nr.close_connections()
    return dataclasses.replace(found, seconds=time.monotonic() - started)


@dataclass(frozen=True)
class Settle:
    """Whether, and how long, a drain or undrain waits on the fabric."""

    wait: bool = True
    timeout: float = DRAIN_TIMEOUT
    max_rate: float = MAX_RATE


def drain_switches(
    fleet: Fleet,
    names: list[str],
    ident: PushId,
    *,
    reason: str,
    by: str | None = None,
    settle: Settle = Settle(),
    trail: Trail | None = None,
    watcher: MaintenanceWatcher | None = None,
    read_before: bool = True,
) -> MaintenanceResult:
    """Drain `names` of an open fleet (a push draining around its change calls this with its own fleet,
    push id and trail), then wait until their traffic has left. Each switch's record goes to `trail`.
    `read_before=False` spares each switch a reading of its state before the drain (a change that drains what
    it found changing, and undrains what it drained)."""
    started = time.monotonic()
    wanted = set(names)
    nr = fleet.nr.filter(filter_func=lambda host: host.name in wanted)
    # on_failed: a switch an earlier task of the same fleet failed on (a push's rolled-back stage) is still
    # drained and undrained; Nornir would skip it otherwise and leave it out of service.
    run = nr.run(task=tasks.drain, push_id=ident.id, reason=reason, by=by, read_before=read_before, on_failed=True)
    found = _states(run, names)
    _record(trail, found, reason)
    waited = None
    if settle.wait and not any(s.failed for s in found):
        (watcher or MaintenanceWatcher()).waiting("the traffic to leave", settle.timeout)
        connect = switch_connector(fleet.access)
        waited = wait_drained(fleet.plan, names, connect, ecmp_caps(fleet, names), timeout=settle.timeout,
                              max_rate=settle.max_rate)  # fmt: skip
    error = trail.error if trail is not None else None
    return MaintenanceResult("drain", ident.id, _target(fleet), found, waited, time.monotonic() - started, error)


def undrain_switches(
    fleet: Fleet,
    names: list[str],
    ident: PushId,
    *,
    force: bool = False,
    settle: Settle = Settle(),
    trail: Trail | None = None,
    watcher: MaintenanceWatcher | None = None,
    read_before: bool = True,
) -> MaintenanceResult:
    """Undrain `names` of an open fleet (those whose drain `ident` holds, or all with `force`), then wait
    until the plan's ECMP widths are back."""
    started = time.monotonic()
    wanted = set(names)
    nr = fleet.nr.filter(filter_func=lambda host: host.name in wanted)
    run = nr.run(task=tasks.undrain, push_id=ident.id, force=force, read_before=read_before, on_failed=True)
    found = _states(run, names)
    _record(trail, found, "")
    waited = None
    if settle.wait and not any(s.failed for s in found):
        (watcher or MaintenanceWatcher()).waiting("the planned ECMP widths", settle.timeout)
        connect = switch_connector(fleet.access)
        # A peer someone else keeps drained (another push, a person) stays out: the widths to wait for are
        # the plan's without it, or this undrain would wait out its timeout for paths that cannot come back.
        kept = drained_among(fleet.plan, peers_of(fleet.plan, names), connect)
        waited = wait_restored(
            fleet.plan, names, connect, ecmp_caps(fleet, names), timeout=settle.timeout, kept_drained=kept
        )
    error = trail.error if trail is not None else None
    return MaintenanceResult("undrain", ident.id, _target(fleet), found, waited, time.monotonic() - started, error)


def _record(trail: Trail | None, found: tuple[SwitchState, ...], reason: str) -> None:
    if trail is None:
        return
    for s in found:
        word = "failed" if s.failed else ("drained" if s.state.get("drained") else "undrained")
        word = "held" if s.state.get("held_by") else word  # another's drain: left drained
        trail.record(s.device, word, s.error or str(s.state.get("note") or "") or reason)


def ecmp_caps(fleet: Fleet, names: list[str]) -> dict[str, int]:
    """The ECMP cap (maximum-paths) of the switches a wait reads: the drained ones and their neighbours."""
    watched = set(names) | set(facing(fleet.plan, names))
    return {name: fleet.contexts[name].ecmp for name in watched}


def _states(run: AggregatedResult, names: list[str]) -> tuple[SwitchState, ...]:
    out = []
    for name in names:
        multi = run.get(name)
        result = multi[0] if multi else None
        if result is None:
            out.append(SwitchState(name, False, True, {}, error="not run"))
            continue
        error = ""
        if result.exception is not None:
            lines = str(result.exception).strip().splitlines()
            error = f"{type(result.exception).__name__}: {lines[0] if lines else ''}"
        state = result.result if isinstance(result.result, dict) else {}
        out.append(SwitchState(name, bool(result.changed), bool(result.failed), state, result.diff or "", error))
    return tuple(out)


def _target(fleet: Fleet) -> str:
    return "lab" if fleet.access.lab else "switches"
