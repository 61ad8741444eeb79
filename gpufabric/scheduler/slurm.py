"""Slurm, through its own commands: `sinfo --json` and `squeue --json` to read, `scontrol update` to
drain and resume.

Slurm 22.05 (Debian 12) gives JSON from `sinfo` and `squeue` (its OpenAPI v0.0.38 form) but not from
`scontrol` (that came with 23.02), so nodes are read through `sinfo --json`, which lists every node
with its state, flags, reason and the user who set it. Both commands print the whole cluster
whatever their filters say; the nodes asked for are picked here. Every field read is checked for
its type, and an answer missing one is an error (`SchedulerOutputError`), never a guess.

A node is drained with `scontrol update NodeName=N State=DRAIN Reason="gpufabric <owner>: <subject>"`
(Slurm keeps the reason and shows who set it): running jobs go on, no new job starts. It holds the
node while a job that is not pending nor ended lists it, or while the node itself says it is
allocated, mixed or completing. Resume is `State=RESUME`, only while the reason is still our mark.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gpufabric.outputs import json_dumps
from gpufabric.scheduler.model import (
    Mark,
    NodeState,
    SchedulerError,
    SchedulerOutputError,
    checked_node,
)

# Job states that no longer (or not yet) hold a node; any other state with nodes holds them.
NOT_HOLDING = frozenset(
    {
        "PENDING",
        "COMPLETED",
        "CANCELLED",
        "FAILED",
        "TIMEOUT",
        "NODE_FAIL",
        "PREEMPTED",
        "BOOT_FAIL",
        "DEADLINE",
        "OUT_OF_MEMORY",
    }
)
BUSY_STATES = frozenset({"allocated", "mixed", "completing"})  # sinfo's node states while work is on it
BUSY_FLAGS = frozenset({"COMPLETING"})
OUT_FLAGS = frozenset({"DRAIN"})  # DRAIN is set for both DRAINING (jobs still on it) and DRAINED
TIMEOUT = 60.0  # seconds for one Slurm command

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]

_HOSTLIST_ITEM = re.compile(r"[A-Za-z0-9._-]*(\[[0-9,-]+\][A-Za-z0-9._-]*)*")
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")
MAX_EXPANDED = 1_000_000


def expand_hostlist(text: str) -> list[str]:
    """Slurm's hostlist expression (`gpu[01-03,07],stor01`) as names, strictly: anything else is an error."""
    if text == "":
        return []
    items: list[str] = []
    depth, start = 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth not in (0, 1):
            raise SchedulerOutputError(f"unreadable hostlist {text!r}")
        if char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    out: list[str] = []
    for item in items:
        if not item or not _HOSTLIST_ITEM.fullmatch(item):
            raise SchedulerOutputError(f"unreadable hostlist {text!r}")
        names = [""]
        for part in re.split(r"(\[[^\]]*\])", item):
            if part.startswith("["):
                numbers = _numbers(part[1:-1], text)
                names = [name + number for name in names for number in numbers]
            else:
                names = [name + part for name in names]
            if len(names) > MAX_EXPANDED:
                raise SchedulerOutputError(f"hostlist {text[:80]!r} names too many nodes")
        out.extend(names)
    return out


def _numbers(ranges: str, text: str) -> list[str]:
    out: list[str] = []
    for piece in ranges.split(","):
        found = _RANGE.fullmatch(piece)
        if found is None:
            raise SchedulerOutputError(f"unreadable hostlist {text!r}")
        first, last = found[1], found[2] or found[1]
        if int(last) < int(first) or int(last) - int(first) > MAX_EXPANDED:
            raise SchedulerOutputError(f"unreadable hostlist {text!r}")
        width = len(first) if first.startswith("0") else 0
        out.extend(str(n).zfill(width) for n in range(int(first), int(last) + 1))
    return out


def _field(record: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = record.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise SchedulerOutputError(f"{what}: field {key!r} missing or not {getattr(kind, '__name__', kind)}")
    return value


def _document(text: str, key: str, command: str) -> list[dict[str, Any]]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise SchedulerOutputError(f"{command} did not print JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise SchedulerOutputError(f"{command} printed JSON that is not an object")
    errors = doc.get("errors", [])
    if not isinstance(errors, list):
        raise SchedulerOutputError(f"{command}: field 'errors' is not a list")
    if errors:
        raise SchedulerError(f"{command} reported: {json_dumps(errors)[:300]}")
    records = doc.get(key)
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise SchedulerOutputError(f"{command}: field {key!r} missing or not a list of objects")
    return records


def read_nodes(text: str) -> dict[str, NodeState]:
    """`sinfo --json` as node name -> state (holders from the node's own state only)."""
    out: dict[str, NodeState] = {}
    for record in _document(text, "nodes", "sinfo --json"):
        name = _field(record, "name", str, "sinfo --json node")
        what = f"sinfo --json node {name!r}"
        state = _field(record, "state", str, what)
        flags = _field(record, "state_flags", list, what)
        if not all(isinstance(f, str) for f in flags):
            raise SchedulerOutputError(f"{what}: state_flags holds something that is not text")
        reason = _field(record, "reason", str, what)
        by = record.get("reason_set_by_user")
        busy = state in BUSY_STATES or bool(BUSY_FLAGS.intersection(flags))
        out[name] = NodeState(
            name,
            bool(OUT_FLAGS.intersection(flags)),
            reason,
            (f"node {state}{'+' + '+'.join(flags) if flags else ''}",) if busy else (),
            by if isinstance(by, str) else "",
        )
    return out


def read_jobs(text: str) -> dict[str, list[str]]:
    """`squeue --json` as node name -> the jobs holding it ("<id> <state>"), in the order listed."""
    out: dict[str, list[str]] = {}
    for record in _document(text, "jobs", "squeue --json"):
        job = _field(record, "job_id", int, "squeue --json job")
        what = f"squeue --json job {job}"
        state = _field(record, "job_state", str, what)
        nodes = _field(record, "nodes", str, what)
        if state in NOT_HOLDING:
            continue
        for node in expand_hostlist(nodes):
            out.setdefault(node, []).append(f"job {job} {state.lower()}")
    return out


class Slurm:
    """A Slurm cluster reached through its commands on this machine (`SLURM_CONF` when `conf` is given)."""

    kind = "slurm"

    def __init__(self, conf: Path | None = None, runner: Runner | None = None) -> None:
        self.conf = conf
        self._runner = runner or self._run

    def _run(self, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        binary = shutil.which(args[0])
        if binary is None:
            raise SchedulerError(f"{args[0]} is not installed here (Debian: slurm-client)")
        env = dict(os.environ)
        if self.conf is not None:
            env["SLURM_CONF"] = str(self.conf)
        try:
            return subprocess.run(
                [binary, *args[1:]], env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired:
            raise SchedulerError(f"{args[0]} did not answer within {TIMEOUT:.0f} s") from None

    def _call(self, *args: str) -> str:
        done = self._runner(list(args))
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            raise SchedulerError(f"{' '.join(args[:2])} failed (exit {done.returncode}): {said[-1] if said else ''}")
        return done.stdout

    def squeue(self) -> str:
        """`squeue --json` as Slurm printed it: every job of the cluster, for a reader of running jobs (read-only)."""
        return self._call("squeue", "--json")

    def nodes(self, names: Sequence[str]) -> dict[str, NodeState]:
        every = read_nodes(self._call("sinfo", "--json"))
        jobs = read_jobs(self._call("squeue", "--json")) if any(n in every for n in names) else {}
        out = {}
        for name in names:
            if name in every:
                state = every[name]
                # The jobs by id; a node still busy by its own state with no job listed (a job ending) by that.
                holders = tuple(jobs.get(name) or state.holders)
                out[name] = NodeState(name, state.out, state.reason, holders, state.set_by)
        return out

    def take_out(self, node: str, mark: Mark) -> None:
        self._call("scontrol", "update", f"NodeName={checked_node(node)}", "State=DRAIN", f"Reason={mark.text}")
        # Read back: a node drained at the same moment by someone else carries their reason, not ours.
        state = read_nodes(self._call("sinfo", "--json")).get(node)
        if state is None or not state.out or state.reason != mark.text:
            raise SchedulerError(f"slurm: {node} did not take the drain {mark.text!r}")

    def put_back(self, node: str, mark: Mark) -> bool:
        state = read_nodes(self._call("sinfo", "--json")).get(node)
        if state is None or not state.out or state.reason != mark.text:
            return False
        self._call("scontrol", "update", f"NodeName={checked_node(node)}", "State=RESUME")
        return True

    def move(self, states: dict[str, NodeState]) -> list[str]:
        return []  # Slurm lets a drained node's jobs run to their end: nothing is cancelled here

    def marked(self) -> list[NodeState]:
        return [s for s in read_nodes(self._call("sinfo", "--json")).values() if s.mark is not None]
