"""Spread CPU-bound work over the cores this process may use, by forking.

Rendering and reading back a large fabric is pure Python: threads would only take turns on the
interpreter lock. Forked workers inherit the plan and the task from the parent (no copy, no
pickling of either); only a chunk's number goes out and the chunk's small result comes back.
Where fork is missing, or one worker would do, the work runs in-process, in the same order.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# The running job, read by forked workers (set before the pool forks them).
_JOBS: list[tuple[Callable[[Any], Any], Sequence[Any]]] = []


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def chunked(items: Sequence[T], size: int) -> list[Sequence[T]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def task_size(items: int, workers: int, least: int = 16, most: int = 64, per_worker: int = 32) -> int:
    """Items a task: a large job in fewer, larger tasks (about `per_worker` a worker), since each task costs
    the parent a message both ways and a wake-up of the pool's threads, on the cores the workers use;
    at most `most`, as the last task is the time one worker may wait on the other."""
    return max(least, min(most, items // (max(workers, 1) * per_worker)))


def _run(number: int) -> Any:
    task, chunks = _JOBS[-1]
    return task(chunks[number])


TERM = {signal.SIGTERM}


@contextlib.contextmanager
def forking() -> Iterator[None]:
    """Around the forks of workers: SIGTERM is held (blocked) in this thread, so a child cannot take it before
    `worker_signals` has run there. The parent may turn SIGTERM into an exception, so that its own cleanups
    run (the command line does). A worker would inherit that handler: a pool ending a worker that had not yet
    started (its tasks all taken by the others) made it raise there, and at times left it waiting on the task
    queue, with the pool waiting for it forever. A SIGTERM for the parent in the meantime is kept and taken
    when this ends."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, TERM)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def worker_signals() -> None:
    """First thing in a forked worker: SIGTERM ends it, as a pool or multiprocessing ends its workers with it
    (a SIGTERM held since the fork ends it now)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, TERM)


def fork_map(task: Callable[[T], R], chunks: Sequence[T], workers: int) -> Iterator[R]:
    """task(chunk) for every chunk, results in chunk order."""
    workers = min(workers, len(chunks))
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield from map(task, chunks)
        return
    _JOBS.append((task, chunks))
    try:
        with forking():  # the pool forks every worker as it is made, and its threads (which fork any later one)
            pool = multiprocessing.get_context("fork").Pool(workers, initializer=worker_signals)
        with pool:
            yield from pool.imap(_run, range(len(chunks)))
    finally:
        _JOBS.pop()
