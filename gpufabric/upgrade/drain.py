"""How a rolling restart or upgrade moves traffic off a switch before it reboots, and back after.

The rollout calls a `Drainer`; which one is the caller's choice. `DriverDrainer` calls the drivers' own
`drain(push_id, reason)` and `undrain(push_id)` (each OS's vendor mechanism, with its wait for the traffic
to leave and to come back); `NoDrain` (`--drain never`) does nothing and says so. A test gives a recording
double.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from nornir.core import Nornir
from nornir.core.task import Result, Task

from gpufabric.fleet.runner import run_per_host


class Drainer(Protocol):
    """Drain switches before they are rebooted, undrain them after: per switch, None when done, else why not."""

    def drain(self, devices: Sequence[str], push_id: str, reason: str) -> Mapping[str, str | None]: ...

    def undrain(self, devices: Sequence[str], push_id: str) -> Mapping[str, str | None]: ...


class NoDrain:
    """`--drain never`: traffic is not moved off a switch before its reboot (its flows lose what it held)."""

    def drain(self, devices: Sequence[str], push_id: str, reason: str) -> Mapping[str, str | None]:
        return dict.fromkeys(devices)

    def undrain(self, devices: Sequence[str], push_id: str) -> Mapping[str, str | None]:
        return dict.fromkeys(devices)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _drain(task: Task, push_id: str, reason: str) -> Result:
    try:
        conn: Any = task.host.get_connection("napalm", task.nornir.config)
        if not callable(getattr(conn, "drain", None)):
            return Result(host=task.host, result=f"the {task.host.platform} driver has no drain", failed=True)
        conn.drain(push_id, reason)
    except Exception as exc:
        return Result(host=task.host, result=f"drain: {_reason(exc)}", failed=True)
    return Result(host=task.host, result=None)


def _undrain(task: Task, push_id: str) -> Result:
    try:
        conn: Any = task.host.get_connection("napalm", task.nornir.config)
        if not callable(getattr(conn, "undrain", None)):
            return Result(host=task.host, result=f"the {task.host.platform} driver has no undrain", failed=True)
        conn.undrain(push_id)
    except Exception as exc:
        return Result(host=task.host, result=f"undrain: {_reason(exc)}", failed=True)
    return Result(host=task.host, result=None)


class DriverDrainer:
    """The drivers' own `drain(push_id, reason)` / `undrain(push_id)`, on the batch's switches at once."""

    def __init__(self, nr: Nornir) -> None:
        self.nr = nr

    def drain(self, devices: Sequence[str], push_id: str, reason: str) -> Mapping[str, str | None]:
        names = list(devices)
        return run_per_host(
            self.nr, names, _drain, push_id=dict.fromkeys(names, push_id), reason=dict.fromkeys(names, reason)
        )

    def undrain(self, devices: Sequence[str], push_id: str) -> Mapping[str, str | None]:
        names = list(devices)
        return run_per_host(self.nr, names, _undrain, push_id=dict.fromkeys(names, push_id))
