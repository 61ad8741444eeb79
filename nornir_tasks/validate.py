"""Nornir task of `validate`: read one switch's state through NAPALM getters and check it. Changes nothing."""

from __future__ import annotations

from nornir.core.task import Result, Task

from gpufabric.validate import checks
from gpufabric.validate.checks import Planned
from gpufabric.validate.results import CheckResult


def validate_device(task: Task, planned: Planned, candidate: str | None) -> Result:
    """All checks of one switch; a switch that cannot be read is one failing `reachable` result."""
    p = planned
    try:
        conn = task.host.get_connection("napalm", task.nornir.config)
        found: list[CheckResult] = [checks.result("reachable", p.device, "management", "reachable", "reachable")]
        if candidate is not None:
            conn.load_replace_candidate(config=candidate)
            diff = conn.compare_config()
            conn.discard_config()  # validate is read-only: the candidate never becomes configuration
            found += checks.drift(p, diff)
        routes = conn.get_route_to()
        found += checks.bgp(p, conn.get_bgp_neighbors() if p.peers else {})
        found += checks.lldp(p, conn.get_lldp_neighbors() if p.lldp else {})
        found += checks.interfaces(p, conn.get_interfaces())
        found += checks.ecmp(p, routes)
        found += checks.qos(p, conn.get_config(retrieve="running")["running"] if p.qos else "")
        found += checks.oob_isolation(p, routes)
    except Exception as exc:  # one switch's failure is its result, not the end of the run
        reason = str(exc).strip().splitlines()
        found = [
            checks.result(
                "reachable", p.device, "management", "reachable", f"{type(exc).__name__}: {reason[0] if reason else ''}"
            )
        ]
    return Result(host=task.host, result=found)
