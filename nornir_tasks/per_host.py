"""Run a task on some hosts in parallel with arguments of their own (Nornir gives every host the same ones)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nornir.core import Nornir
from nornir.core.task import Result, Task


def run_per_host(
    nr: Nornir, names: list[str], task: Callable[..., Result], **per_host: dict[str, Any]
) -> dict[str, Any]:
    """`task` on each of `names`; every keyword is a mapping host name -> that host's value. Returns name -> result."""
    wanted = set(names)
    result = nr.filter(filter_func=lambda h: h.name in wanted).run(
        task=_dispatch, task_fn=task, per_host=per_host, on_failed=True
    )
    return {name: multi[0].result for name, multi in result.items()}


def _dispatch(task: Task, task_fn: Callable[..., Result], per_host: dict[str, dict[str, Any]]) -> Result:
    return task_fn(task, **{key: values[task.host.name] for key, values in per_host.items()})
