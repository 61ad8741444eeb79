"""Nornir tasks of `maintenance` (and of any caller that drains around a change): drain, undrain, status.

Each returns Nornir's Result: `changed` when the switch went into (or out of) maintenance, `failed`
when it could not be done or is not where it was asked to be, `diff` one line saying what changed,
and as `result` the switch's `maintenance_status()` afterwards (drained, since, by, push_id, reason,
mechanism, applied). The drivers hold the vendor's mechanism and the marker on the switch; these tasks
only call them. An undrain the drain's holder did not ask for (another push, a person) is refused by
the driver and leaves the switch drained: not a failure, `result["held_by"]` names the holder.
"""

from __future__ import annotations

from typing import Any

from nornir.core.task import Result, Task

from gpufabric.drivers.maintenance import DrainHeldError


def _conn(task: Task) -> Any:
    return task.host.get_connection("napalm", task.nornir.config)


def _line(what: str, state: dict[str, Any]) -> str:
    return f"{what}: {state.get('mechanism') or 'maintenance'} (by {state.get('by')}, since {state.get('since')})"


def drain(task: Task, push_id: str, reason: str, by: str | None = None, read_before: bool = True) -> Result:
    """Take the switch out of service with its vendor's mechanism; a drained switch stays as it is drained.
    `read_before=False` (a push, around a change it found: whether the switch was drained before is not
    its question) spares a reading of the switch: `changed` then says only that the drain was applied."""
    conn = _conn(task)
    before = conn.maintenance_status() if read_before else None
    conn.drain(push_id, reason, by=by)
    after = conn.maintenance_status()
    changed = before is None or not (before["drained"] and before["applied"] is not False)
    ok = bool(after["drained"]) and after["applied"] is not False
    diff = _line("+ drained", after) if changed else ""
    return Result(host=task.host, result=after, changed=changed, failed=not ok, diff=diff)


def undrain(task: Task, push_id: str, force: bool = False, read_before: bool = True) -> Result:
    """Put the switch back into service, when `push_id` holds its drain (or with `force`, whoever does).
    `read_before=False` (a push, undraining what it drained) spares a reading of the switch: the driver
    still refuses a drain another holds."""
    conn = _conn(task)
    before = conn.maintenance_status() if read_before else None
    if before is not None and not before["drained"]:
        return Result(host=task.host, result=before, changed=False, failed=False, diff="")
    try:
        conn.undrain(push_id, force=force)
    except DrainHeldError as exc:
        state = before if before is not None else conn.maintenance_status()
        held = dict(state) | {"held_by": state.get("by"), "note": str(exc)}
        return Result(host=task.host, result=held, changed=False, failed=False, diff="")
    after = conn.maintenance_status()
    ok = not after["drained"]
    line = _line("- drained", before) if before is not None else "- drained"
    return Result(host=task.host, result=after, changed=ok, failed=not ok, diff=line if ok else "")


def status(task: Task) -> Result:
    """The switch's maintenance state, as it records it. Changes nothing."""
    return Result(host=task.host, result=_conn(task).maintenance_status(), changed=False, failed=False, diff="")
