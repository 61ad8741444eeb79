"""Render one switch's configuration as a Nornir task, so `render` and `push` run the same code."""

from __future__ import annotations

from pathlib import Path

from nornir.core.task import Result, Task

from gpufabric.config.batch import render_switch
from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.plan.model import Plan


def render_config(task: Task, plan: Plan, index: LinkIndex, out_dir: Path | None = None) -> Result:
    """Render task.host's configuration files; write them into out_dir when given (each whole or not at all).
    `changed` when a file was written with new content; a rendering error is Nornir's failed Result
    (the exception, as Nornir records it). No `diff`: the files may hold secrets' hashes."""
    if out_dir is None:
        return Result(host=task.host, result=render_device(plan, index.devices[task.host.name], index).files)
    files, written = render_switch(plan, index, task.host.name, out_dir)
    return Result(host=task.host, result=files, changed=written > 0)
