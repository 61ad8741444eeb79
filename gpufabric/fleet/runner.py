"""Run a task on some hosts in parallel with arguments of their own (Nornir gives every host the same ones)."""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from multiprocessing.connection import Connection
from typing import Any

from nornir.core import Nornir
from nornir.core.task import AggregatedResult, Result, Task
from nornir.plugins.runners import ThreadedRunner

from gpufabric.parallel import fork_map, forking, worker_signals


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


# Below this many hosts a second process costs more than the CPU it would share.
FORK_FROM = 64


def run_per_host_forked(
    nr: Nornir, names: list[str], task: Callable[..., Result], processes: int, **per_host: dict[str, Any]
) -> dict[str, Any]:
    """As `run_per_host`, with the hosts dealt out to `processes` forked processes (see
    `run_per_host_results_forked`)."""
    return {
        name: value
        for name, (value, _failed) in run_per_host_results_forked(nr, names, task, processes, **per_host).items()
    }


def run_per_host_results_forked(
    nr: Nornir, names: list[str], task: Callable[..., Result], processes: int, **per_host: dict[str, Any]
) -> dict[str, tuple[Any, bool]]:
    """`task` on each of `names`, dealt out to `processes` forked processes, each running its share on a
    runner with its share of `nr`'s workers: a read of a whole fabric is CPU in the interpreter (parsing
    every switch's configuration, the SSH sessions), which one process runs on one core at a time.
    Returns name -> (result, failed); a failed host is added to `nr.data.failed_hosts` as Nornir does.
    Below FORK_FROM hosts, or with one process, it runs in-process on `nr` itself.

    Only for tasks that change nothing and keep nothing: a host's session opens and ends in its process.
    The children run without `nr`'s processors (those belong to the parent's display). Call it with no
    other thread of the parent holding a lock a child could need (a fork copies only the calling thread)."""
    if processes <= 1 or len(names) < FORK_FROM:
        return {
            name: (multi[0].result, multi.failed)
            for name, multi in run_per_host_results(nr, names, task, **per_host).items()
        }
    shares = [names[i::processes] for i in range(processes)]  # dealt out: each share holds every role
    workers = max(1, getattr(nr.runner, "num_workers", 20) // processes)
    found: dict[str, tuple[Any, bool]] = {}
    for part in fork_map(partial(_share, nr.with_processors([]), task, per_host, workers), shares, processes):
        found.update(part)
    nr.data.failed_hosts.update(name for name, (_value, failed) in found.items() if failed)
    return found


Outcomes = dict[str, tuple[Any, bool]]  # host name -> (its task's result, whether it failed)


def run_checked_forked(
    nr: Nornir,
    names: list[str],
    check: Callable[..., Result],
    task: Callable[..., Result],
    processes: int,
    *,
    check_args: dict[str, dict[str, Any]],
    task_args: dict[str, dict[str, Any]],
    go: Callable[[Outcomes], bool],
) -> tuple[Outcomes, Outcomes]:
    """`check` on every one of `names`; then, once every host's check is in and `go(the checks)` says so,
    `task` on each host whose check did not fail, on the session its check opened (one login a host, not
    two). Dealt out to `processes` forked processes as `run_per_host_results_forked` does: each runs its
    share's checks, hands them over, and waits for the word of the parent, which has them all, before any
    of its hosts' tasks starts. Returns (the checks, the tasks: empty when `go` said no); failed hosts are
    added to `nr.data.failed_hosts`. Only for tasks that change nothing and keep nothing (see
    `run_per_host_results_forked`); below FORK_FROM hosts, or with one process, both run in-process on
    `nr` (whose sessions then stay open)."""
    if processes <= 1 or len(names) < FORK_FROM:
        here = _outcomes(run_per_host_results(nr, names, check, **check_args))
        if not go(here):
            return here, {}
        rest = [n for n in names if not here[n][1]]
        return here, _outcomes(run_per_host_results(nr, rest, task, **task_args))
    shares = [names[i::processes] for i in range(processes)]
    workers = max(1, getattr(nr.runner, "num_workers", 20) // processes)
    context = multiprocessing.get_context("fork")
    plain = nr.with_processors([])
    pipes: list[Connection] = []
    children: list[Any] = []
    checked: Outcomes = {}
    done: Outcomes = {}
    try:
        for share in shares:
            mine, theirs = context.Pipe()
            phases = _Phases(check, task, check_args, task_args, workers)
            child = context.Process(target=_checked_share, args=(plain, phases, share, theirs), daemon=True)
            with forking():
                child.start()
            theirs.close()
            pipes.append(mine)
            children.append(child)
        for pipe in pipes:
            checked.update(_answer(pipe))
        proceed = go(checked)
        for pipe in pipes:
            pipe.send(proceed)
        if proceed:
            for pipe in pipes:
                done.update(_answer(pipe))
    finally:
        for pipe in pipes:
            pipe.close()  # a child still waiting for the word reads the end of the pipe, and stops
        for child in children:
            child.join()
    nr.data.failed_hosts.update(name for name, (_value, failed) in {**checked, **done}.items() if failed)
    return checked, done


def _outcomes(results: AggregatedResult) -> Outcomes:
    return {name: (multi[0].result, multi.failed) for name, multi in results.items()}


def _answer(pipe: Connection) -> Outcomes:
    """A child's outcomes; what it raised, raised here (a child that died: an error naming it)."""
    try:
        kind, value = pipe.recv()
    except EOFError:
        raise RuntimeError("a forked reader ended without its answer") from None
    if kind == "error":
        raise RuntimeError(f"a forked reader failed: {value}")
    return dict(value)


@dataclass(frozen=True)
class _Phases:
    """What a forked reader of `run_checked_forked` runs, and with how many threads."""

    check: Callable[..., Result]
    task: Callable[..., Result]
    check_args: dict[str, dict[str, Any]]
    task_args: dict[str, dict[str, Any]]
    workers: int


def _checked_share(nr: Nornir, phases: _Phases, names: list[str], pipe: Connection) -> None:
    worker_signals()  # a daemon child: multiprocessing ends it with SIGTERM when the parent stops
    sys.setswitchinterval(READER_SWITCH_INTERVAL)  # this forked process's own
    reader = nr.with_runner(ThreadedRunner(num_workers=phases.workers))
    task, task_args = phases.task, phases.task_args
    try:
        checked = _outcomes(run_per_host_results(reader, names, phases.check, **phases.check_args))
        pipe.send(("ok", checked))
        try:
            proceed = bool(pipe.recv())
        except EOFError:  # the parent stopped: nothing more to do
            proceed = False
        if proceed:
            rest = [n for n in names if not checked[n][1]]
            pipe.send(("ok", _outcomes(run_per_host_results(reader, rest, _hanging_up(task), **task_args))))
    except Exception as exc:  # the parent raises it
        pipe.send(("error", f"{type(exc).__name__}: {exc}"[:500]))
    finally:
        for name in names:  # sessions end with the process; ended here, their threads first
            reader.inventory.hosts[name].close_connections()
        pipe.close()


# A forked reader's threads hand the interpreter over every 50 ms rather than every 5: its threads
# parse configurations of 2,000 lines side by side, and switching between them every 5 ms cost about
# 1.4x the CPU of parsing them one after another (bench/profiling/parse_threads.py: 33 ms a parse in 8 or 40
# threads, 23 ms in one; 22-28 ms at 50 ms).
# Threads waiting on a switch wait seconds; a few ms more for the interpreter changes nothing there.
READER_SWITCH_INTERVAL = 0.05


def _share(
    nr: Nornir, task: Callable[..., Result], per_host: dict[str, dict[str, Any]], workers: int, names: list[str]
) -> dict[str, tuple[Any, bool]]:
    sys.setswitchinterval(READER_SWITCH_INTERVAL)  # this forked process's own
    reader = nr.with_runner(ThreadedRunner(num_workers=workers))
    results = run_per_host_results(reader, names, _hanging_up(task), **per_host)
    return {name: (multi[0].result, multi.failed) for name, multi in results.items()}


def _hanging_up(task_fn: Callable[..., Result]) -> Callable[..., Result]:
    """The task, then the host's sessions end: the process ends with its share, and until then each open
    paramiko session keeps a thread polling its socket ten times a second."""

    def run(task: Task, **kwargs: Any) -> Result:
        try:
            return task_fn(task, **kwargs)
        finally:
            task.host.close_connections()

    run.__name__ = task_fn.__name__  # Nornir names the task after it
    return run
