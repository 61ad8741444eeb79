"""Render one switch's configuration as a Nornir task, so `render` and `push` run the same code."""

from __future__ import annotations

from pathlib import Path

from nornir.core.task import Result, Task

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.export.atomic import write_atomic
from gpufabric.plan.model import Plan


def render_config(task: Task, plan: Plan, index: LinkIndex, out_dir: Path | None = None) -> Result:
    """Render task.host's configuration files; write them into out_dir when given (each whole or not at all)."""
    rendered = render_device(plan, index.devices[task.host.name], index)
    if out_dir is not None:
        for name, text in rendered.files.items():
            write_atomic(out_dir / name, text)
    return Result(host=task.host, result=rendered.files)
