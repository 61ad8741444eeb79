"""Which switches a push drains around their change, and what drains them.

`--drain auto` (the default) drains exactly the switches whose change is disruptive, as each one's
platform reads the preview's diff (`Platform.disruptions`): a BGP session reset, a forwarding agent
restart, buffers reprogrammed, a port's speed, breakout or MTU, a reboot, or a change the platform does
not know to be hitless. `always` drains every switch that changes, `never` none. A batch's switches to
drain are drained together before the batch is staged, and undrained once the batch is confirmed or
rolled back; the batches stay what the failure domains make them.

The drain itself is a `Drainer`: the push hands it a Nornir holding only the switches to drain, and it
answers which of them it could not drain (or undrain). The rollout knows nothing of how a switch is
drained (a maintenance unit, GIR, TSA, a BGP graceful shutdown: each platform's own).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, Protocol

from nornir.core import Nornir
from nornir.core.task import AggregatedResult, Result

from gpufabric.fleet.errors import PushRefusedError
from gpufabric.fleet.runner import run_per_host_results
from gpufabric.platforms.disruption import Disruption


class DrainPolicy(StrEnum):
    AUTO = "auto"  # the switches whose change is disruptive
    ALWAYS = "always"  # every switch that changes
    NEVER = "never"  # none


class Drainer(Protocol):
    """Drains and undrains switches for a push. Each method gets a Nornir filtered to the switches it is
    for, and returns {name: why} for those it could not drain or undrain (empty: all done). A drain
    returns once the traffic has left (or says it did not); an undrain once it is back."""

    def drain(self, nr: Nornir, push_id: str, reasons: Mapping[str, str]) -> Mapping[str, str]:
        """Drain every host of `nr`; `reasons[name]`: why (what the switch records beside the push id)."""
        ...

    def undrain(self, nr: Nornir, push_id: str) -> Mapping[str, str]:
        """Undrain every host of `nr` that `push_id` drained."""
        ...


class TaskDrainer:
    """A `Drainer` made of two Nornir tasks, one switch each: `drain_task(task, push_id=..., reason=...)` and
    `undrain_task(task, push_id=...)` (the maintenance tasks, which call the platform's driver), each also
    given `options` (the same for every switch). A host whose task failed is one not done, with the task's
    exception or result as why."""

    def __init__(
        self,
        drain_task: Callable[..., Result],
        undrain_task: Callable[..., Result],
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.drain_task, self.undrain_task = drain_task, undrain_task
        self.options = dict(options or {})

    def _given(self, names: list[str]) -> dict[str, dict[str, Any]]:
        return {key: dict.fromkeys(names, value) for key, value in self.options.items()}

    def drain(self, nr: Nornir, push_id: str, reasons: Mapping[str, str]) -> Mapping[str, str]:
        names = list(nr.inventory.hosts)
        given = self._given(names)
        return _failed(
            run_per_host_results(
                nr, names, self.drain_task, push_id=dict.fromkeys(names, push_id), reason=dict(reasons), **given
            )
        )

    def undrain(self, nr: Nornir, push_id: str) -> Mapping[str, str]:
        names = list(nr.inventory.hosts)
        given = self._given(names)
        return _failed(
            run_per_host_results(nr, names, self.undrain_task, push_id=dict.fromkeys(names, push_id), **given)
        )


def _failed(results: AggregatedResult) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, multi in results.items():
        if multi.failed:
            first: Any = multi[0]
            why = first.exception if first.exception is not None else first.result
            out[name] = (f"{type(why).__name__}: {why}" if isinstance(why, BaseException) else str(why))[:300]
    return out


def needs_drain(policy: DrainPolicy, disruptions: tuple[Disruption, ...]) -> bool:
    """Whether a switch whose change has these disruptions is drained around it."""
    if policy == DrainPolicy.NEVER:
        return False
    return policy == DrainPolicy.ALWAYS or bool(disruptions)


def why(policy: DrainPolicy, disruptions: tuple[Disruption, ...]) -> str:
    """The words a drained switch records: its change's reasons, or the policy that asked for it."""
    reasons = ", ".join(dict.fromkeys(str(d.reason) for d in disruptions))
    if policy == DrainPolicy.ALWAYS:
        return f"--drain always ({reasons or 'hitless change'})"
    return reasons


class NoDrainerError(PushRefusedError):
    """Switches need a drain and this push has nothing to drain them with: nothing was changed."""

    def __init__(self, names: list[str], policy: DrainPolicy) -> None:
        self.names = names
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        super().__init__(
            f"{len(names)} switches need a drain (--drain {policy}: {', '.join(names[:3])}{more}) and this push "
            "has no drain mechanism; nothing was changed. Push with --drain never to change them undrained"
        )
