"""Nornir task of `validate`: read one switch's state through NAPALM getters and check it. Changes nothing.

Its Result is Nornir's: `failed` when a check failed (or the switch could not be read), never
`changed`, and `diff` the configuration drift (the running configuration against the rendered one),
with every secret value masked, as in the drift check's own result."""

from __future__ import annotations

import inspect
import time
from dataclasses import replace
from typing import Any

from nornir.core.task import Result, Task

from gpufabric.fleet.expect import ports_now, sessions_now
from gpufabric.platforms import platform
from gpufabric.verify.running import checks, counters
from gpufabric.verify.running.checks import Planned
from gpufabric.verify.running.converged import carried_sessions
from gpufabric.verify.running.counters import Limits
from gpufabric.verify.running.results import CheckResult
from nornir_tasks.push import hang_up, mask


def _drift(conn: Any, candidate: str, running: str | None = None) -> str:
    """The running configuration against the plan's, without changing anything on the switch: drivers
    that can diff in place do (Cumulus: NVUE's staged revision is shared, never ours to touch), from the
    running text already read when they take it; the FRR driver's candidate lives in this session's own
    folder and is removed by the discard."""
    if hasattr(conn, "compare_running"):
        if running is not None and "running" in inspect.signature(conn.compare_running).parameters:
            return str(conn.compare_running(candidate, running=running))
        return str(conn.compare_running(candidate))
    conn.load_replace_candidate(config=candidate)
    try:
        return str(conn.compare_config())
    finally:
        conn.discard_config()


def os_version(conn: Any) -> str:
    """The OS version the switch runs, as NAPALM's get_facts names it (`os_version`): from the driver's own
    lighter reader where it has one (one command instead of get_facts' several)."""
    reader = getattr(conn, "get_os_version", None)
    try:
        return str(reader() if reader is not None else conn.get_facts()["os_version"])
    except NotImplementedError:  # a driver with no get_facts: the release check fails, the others still run
        return ""


def validate_device(
    task: Task, planned: Planned, candidate: str | None, limits: Limits | None = None, masked: tuple[str, ...] = ()
) -> Result:
    """All checks of one switch; a switch that cannot be read is one failing `reachable` result."""
    p = planned
    drift = ""
    try:
        conn = task.host.get_connection("napalm", task.nornir.config)
        found: list[CheckResult] = [checks.result("reachable", p.device, "management", "reachable", "reachable")]
        first = None
        if limits is not None and limits.window > 0:  # the window runs while the other checks read
            first, started = counters.sample(conn, p.platform, sorted(p.ports)), time.monotonic()
        # Read once: the drift check and the running-configuration checks read the same text.
        running = conn.get_config(retrieve="running")["running"] if p.reads_running else None
        if candidate is not None:
            drift = mask(_drift(conn, candidate, running), masked)
            found += checks.drift(p, drift)
        if p.release is not None:
            version = os_version(conn)
            found += checks.release(p, version, platform(p.platform).running_release(version))
        routes = conn.get_route_to()
        # Each session's state and ASN, every VRF's: the driver's lighter getter where it has one (the router
        # id the full getter adds is not checked).
        bgp_neighbors = sessions_now(conn) if p.peers or p.carried_sessions else {}
        found += checks.bgp(p, bgp_neighbors)
        found += carried_sessions(p.device, p.carried_sessions, bgp_neighbors)
        found += checks.lldp(p, conn.get_lldp_neighbors() if p.lldp else {})
        found += checks.interfaces(p, ports_now(conn))  # state and MTU: the lighter getter where there is one
        found += checks.ecmp(p, routes)
        found += checks.config(p, running or "")
        found += checks.oob_isolation(p, routes)
        if first is not None and limits is not None:
            time.sleep(max(0.0, limits.window - (time.monotonic() - started)))
            second = counters.sample(conn, p.platform, sorted(p.ports))
            elapsed = time.monotonic() - started
            found += counters.judge(p.device, sorted(p.ports), first, second, replace(limits, window=elapsed))
    except Exception as exc:  # one switch's failure is its result, not the end of the run
        reason = str(exc).strip().splitlines()
        found = [
            checks.result(
                "reachable",
                p.device,
                "management",
                "reachable",
                mask(f"{type(exc).__name__}: {reason[0] if reason else ''}", masked),
            )
        ]
    hang_up(task)  # this switch is read: its session and its thread end now, not with the whole run
    return Result(host=task.host, result=found, failed=not all(r.ok for r in found), changed=False, diff=drift)
