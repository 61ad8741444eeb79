"""Render many switches into a folder, on every core the process may use (gpufabric.parallel)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.files import PRIVATE, folder_written_whole, write_if_changed, write_new
from gpufabric.gc_pause import gc_paused
from gpufabric.parallel import chunked, cores, fork_map, task_size
from gpufabric.plan.model import Plan

# Below this many switches a fork costs more than the render it would share.
PARALLEL_FROM = 64


def _new(path: Path, text: str) -> bool:
    # A switch's config holds its users' password hashes (and SNMP or BGP secrets): owner-only,
    # whatever the umask, like any file that holds a credential.
    return write_new(path, text, PRIVATE)


def _changed(path: Path, text: str) -> bool:
    return write_if_changed(path, text, PRIVATE)  # the same secrets as _new


@dataclass
class BatchResult:
    switches: int = 0
    files: int = 0
    written: int = 0  # files whose content changed (the others were left as they were)
    errors: dict[str, str] = field(default_factory=dict)  # switch -> what went wrong


def render_switch(
    plan: Plan, index: LinkIndex, name: str, out_dir: Path, write: Callable[[Path, str], bool] | None = None
) -> tuple[dict[str, str], int]:
    """One switch's files, written into out_dir (each whole, and only when changed): (files, how many written).
    What `render` does per switch, and what the Nornir task does for its host."""
    files = render_device(plan, index.devices[name], index).files
    write = write or _changed
    return files, sum(write(out_dir / file_name, text) for file_name, text in files.items())


def _render_chunk(plan: Plan, index: LinkIndex, out_dir: Path, fresh: bool, names: Sequence[str]) -> BatchResult:
    result = BatchResult()
    write = _new if fresh else _changed
    with gc_paused():
        for name in names:
            try:
                files, written = render_switch(plan, index, name, out_dir, write)
            except Exception as exc:  # reported per switch; the others still render
                result.errors[name] = f"{type(exc).__name__}: {exc}"
                continue
            result.switches += 1
            result.files += len(files)
            result.written += written
    return result


def render_all(
    plan: Plan,
    names: Sequence[str],
    index: LinkIndex,
    out_dir: Path,
    *,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> BatchResult:
    """Render and write every named switch; one switch's error does not stop the others. A new
    folder appears whole once every switch is written; in an existing one, only changed files are.

    `progress` is called with the number of switches finished so far, after each chunk.
    """
    workers = (workers or cores()) if len(names) >= PARALLEL_FROM else 1
    total = BatchResult()
    with folder_written_whole(out_dir) as (target, fresh):
        # 16 to 64 switches a task: at 16, the 131k-GPU example's 794 tasks woke the pool's threads in the
        # parent 5,400 times, 0.5 s of CPU taken from the cores the two workers render on.
        chunks = chunked(names, task_size(len(names), workers))
        for part in fork_map(partial(_render_chunk, plan, index, target, fresh), chunks, workers):
            total.switches += part.switches
            total.files += part.files
            total.written += part.written
            total.errors.update(part.errors)
            if progress is not None:
                progress(total.switches + len(total.errors))
    return total


def _texts_chunk(plan: Plan, index: LinkIndex, names: Sequence[str]) -> dict[str, str]:
    out = {}
    with gc_paused():
        for name in names:
            files = render_device(plan, index.devices[name], index).files
            out[name] = "".join(f"# --- {file_name}\n{text}" for file_name, text in sorted(files.items()))
    return out


def config_texts(plan: Plan, index: LinkIndex, names: Sequence[str]) -> dict[str, str]:
    """Every named switch's files as one text, in memory (what `diff` compares), on every core."""
    workers = cores() if len(names) >= PARALLEL_FROM else 1
    jobs = chunked(list(names), task_size(len(names), workers))
    out: dict[str, str] = {}
    for part in fork_map(partial(_texts_chunk, plan, index), jobs, workers):
        out |= part
    return out
