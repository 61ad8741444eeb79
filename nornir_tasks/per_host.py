"""Run a task on some hosts in parallel with arguments of their own (Nornir gives every host the same ones)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nornir.core import Nornir
from nornir.core.task import AggregatedResult, Result, Task


class PerHost(dict[str, dict[str, Any]]):
    """Keyword -> (host name -> that host's value). Nornir logs a task's arguments (`Running task ...
    with args ...`, at INFO); these hold candidates with secrets resolved, so they never show."""

    def __repr__(self) -> str:
        return f"<per-host arguments: {', '.join(self)}>"

    __str__ = __repr__


def run_per_host_results(
    nr: Nornir, names: list[str], task: Callable[..., Result], **per_host: dict[str, Any]
) -> AggregatedResult:
    """`task` on each of `names`, as Nornir runs a task: named after `task` (processors and logs see
    `preview`, `stage`, ...), on hosts an earlier task failed too, never raising for a failed host
    (each host's Result says; Nornir adds the failed ones to `nr.data.failed_hosts`)."""
    wanted = set(names)
    return nr.filter(filter_func=lambda h: h.name in wanted).run(
        task=_dispatch,
        name=task.__name__,
        task_fn=task,
        per_host=PerHost(per_host),
        on_failed=True,
        raise_on_error=False,
    )


def run_per_host(
    nr: Nornir, names: list[str], task: Callable[..., Result], **per_host: dict[str, Any]
) -> dict[str, Any]:
    """`task` on each of `names`; every keyword is a mapping host name -> that host's value (it may hold
    other hosts too: only those of `names` are read). Returns name -> result."""
    return {name: multi[0].result for name, multi in run_per_host_results(nr, names, task, **per_host).items()}


def _dispatch(task: Task, task_fn: Callable[..., Result], per_host: dict[str, dict[str, Any]]) -> Result:
    return task_fn(task, **{key: values[task.host.name] for key, values in per_host.items()})
