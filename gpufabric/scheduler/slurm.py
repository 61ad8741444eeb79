"""Slurm, through its own commands: `sinfo --json` and `squeue --json` to read (and `sacct --json` for a job
that ended), `scontrol update` to drain and resume.

Slurm 22.05 (Debian 12) gives JSON from `sinfo` and `squeue` (its OpenAPI v0.0.38 form) but not from
`scontrol` (that came with 23.02), so nodes are read through `sinfo --json`, which lists every node
with its state, flags, reason and the user who set it. Both commands print the whole cluster
whatever their filters say; the nodes asked for are picked here. Every field read is checked for
its type, and an answer missing one is an error (`SchedulerOutputError`), never a guess.

A node is drained with `scontrol update NodeName=N State=DRAIN Reason="gpufabric <owner>: <subject>"`
(Slurm keeps the reason and shows who set it): running jobs go on, no new job starts. It holds the
node while a job that is not pending nor ended lists it, or while the node itself says it is
allocated, mixed or completing. Resume is `State=RESUME`, only while the reason is still our mark.

Slurm's answers are outside input, read with bounds (docs/security.md): each command runs at most
`TIMEOUT` seconds, whole, and prints at most `MAX_ANSWER` bytes (it is stopped, not read to its end,
when it prints more); its JSON nests at most `gpufabric.inputs.JSON_MAX_DEPTH` levels; a hostlist is
counted before it is expanded. Each failure is a `SchedulerError` naming the command and the bound.

Bytes that are not UTF-8 are read as U+FFFD, not refused: Slurm stores a node's reason as the bytes
`scontrol` was given and prints them unchanged, so a reason typed in Latin-1 on one node would
otherwise stop every drain of every other node. Nothing is decided on such text: the only strings
compared are node names against the plan's and reasons against gpufabric's mark, both ASCII patterns
a replaced byte can never match. Every string read is kept with its control characters escaped
(`gpufabric.errors.printable`), so a reason reaches a log, the audit trail or a terminal as text.
"""

from __future__ import annotations

import os
import re
import selectors
import shutil
import subprocess
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufabric.errors import printable
from gpufabric.inputs import InputError, MiB, json_text
from gpufabric.outputs import json_dumps, shown
from gpufabric.scheduler.model import (
    NODE,
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
TIMEOUT = 60.0  # seconds for one Slurm command, from its start to its exit: a whole-command deadline
# Bytes of one answer. `sinfo --json` (22.05) prints about 1.2 KB per node and `squeue --json` about 3 KB per
# job, every node and job of the cluster whatever the filters (tests/recorded/slurm/): 256 MiB holds a
# 65,536-node cluster's sinfo three times over, and squeue's 80,000 jobs (running, pending and those ended
# within MinJobAge; Slurm's default MaxJobCount is 10,000).
MAX_ANSWER = 256 * MiB
MAX_STDERR = 64 * 1024  # of a command's stderr, the end is kept: only its last line is shown
# Names in one hostlist: a job on every node of a 65,536-node cluster (sixteen times the servers of the
# largest example, 32k GPUs). Counted from the ranges before anything is expanded.
MAX_HOSTLIST = 65_536
# Names expanded from one squeue answer, all jobs together: sixteen jobs on every node of such a cluster.
MAX_JOB_NODES = 16 * MAX_HOSTLIST

# The drain and resume commands' words, from Slurm's scontrol(1) man page (22.05), "NODES - SPECIFICATIONS FOR
# UPDATE COMMAND": `update NodeName=<name> State=<state> Reason=<reason>`; State=DRAIN starts no new job on the
# node and lets the running ones end; RESUME is no state of its own: it takes a node that is drained, draining,
# down or rebooting back to idle. scontrol's own parser refuses a misspelt keyword or state before it asks
# slurmctld anything (tests/oracles/test_vendor_strings.py runs it).
SCONTROL_UPDATE = ("scontrol", "update")
NODE_NAME, STATE, REASON = "NodeName", "State", "Reason"
STATE_DRAIN, STATE_RESUME = "DRAIN", "RESUME"

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[bytes]"]

# A hostlist: items joined by commas, each item name characters and bracketed ranges (`gpu[01-03,07]-ib`). Read
# with C-speed regular expressions, never a loop over its characters: one job's `nodes` may be a whole answer long.
# Possessive (`++`): no backtracking, and a run of name characters is one step (a group per character took
# 50 s on 100 MB of them).
_ITEM = r"(?:[A-Za-z0-9._-]++|\[[0-9,-]++\])++"
_HOSTLIST = re.compile(rf"{_ITEM}(?:,{_ITEM})*+")
_ITEMS = re.compile(_ITEM)
_BRACKETS = re.compile(r"\[([0-9,-]+)\]")
_PIECES = re.compile(r"[^,]*")
# Slurm's hostlist keeps a range's ends in an unsigned long (hostlist.c, struct hostrange): 20 digits at most.
# A longer run of digits is no range of Slurm's, and must not reach int() (which refuses 4,300 digits).
_RANGE = re.compile(r"([0-9]{1,20})(?:-([0-9]{1,20}))?")

Range = tuple[str, int, int]  # (the first as written, first, last)


def _hostlist_error(text: str, problem: str) -> SchedulerOutputError:
    return SchedulerOutputError(f"hostlist {shown(text, 80)!r} {problem}")


def _ranges(inside: str, text: str, limit: int) -> tuple[list[Range], int]:
    """The ranges between one pair of brackets and how many numbers they hold; read only until they hold more
    than `limit` (each range holds one at least, so at most `limit` + 1 are read)."""
    out: list[Range] = []
    count = 0
    for piece in _PIECES.finditer(inside):
        if piece.start() and inside[piece.start() - 1] != ",":
            continue  # the empty match finditer gives at the end of each piece
        found = _RANGE.fullmatch(piece[0])
        if found is None:
            raise _hostlist_error(text, f"is unreadable: [{shown(inside, 40)}] is not ranges of at most 20 digits")
        first, last = int(found[1]), int(found[2] or found[1])
        if last < first:
            raise _hostlist_error(text, f"is unreadable: the range {piece[0]} runs backwards")
        out.append((found[1], first, last))
        count += last - first + 1
        if count > limit:
            break
    return out, count


def _items(text: str, limit: int) -> list[tuple[str, list[list[Range]]]]:
    """Each item of the hostlist with its brackets' ranges, counted as they are read: past `limit` names the
    hostlist is refused before any name is made."""
    if not _HOSTLIST.fullmatch(text):
        raise _hostlist_error(text, "is unreadable: not names with [ranges] of digits, joined by commas")
    out = []
    total = 0
    for item in _ITEMS.finditer(text):
        count = 1
        brackets = []
        for bracket in _BRACKETS.finditer(item[0]):
            ranges, numbers = _ranges(bracket[1], text, limit)
            brackets.append(ranges)
            count *= numbers
            if total + count > limit:  # refused at once: no product of huge numbers, no bracket read past it
                raise _hostlist_error(text, f"names more than {limit:,} nodes (no cluster has that many)")
        total += count
        if total > limit:
            raise _hostlist_error(text, f"names more than {limit:,} nodes (no cluster has that many)")
        out.append((item[0], brackets))
    return out


def expand_hostlist(text: str, limit: int = MAX_HOSTLIST) -> list[str]:
    """Slurm's hostlist expression (`gpu[01-03,07],stor01`) as names, strictly: anything else is an error,
    and so is an expression of more than `limit` names (counted before any is made)."""
    if text == "":
        return []
    out: list[str] = []
    for item, brackets in _items(text, limit):
        names = [""]
        for part, ranges in zip(_BRACKETS.split(item)[::2], [*brackets, None], strict=True):
            names = [name + part for name in names]
            if ranges is not None:
                numbers = _numbers(ranges)
                names = [name + number for name in names for number in numbers]
        out.extend(names)
    return out


def _numbers(ranges: list[Range]) -> list[str]:
    out: list[str] = []
    for written, first, last in ranges:
        width = len(written) if written.startswith("0") else 0  # gpu[01-10]: as wide as the first is written
        out.extend(str(n).zfill(width) for n in range(first, last + 1))
    return out


def _text(value: str) -> str:
    """A string of Slurm's as it may be kept and shown: a lone surrogate (JSON's `\\udce9`) as U+FFFD, as
    an undecodable byte already is, and control characters escaped."""
    return printable(value.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))


def _field(record: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = record.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise SchedulerOutputError(f"{what}: field {key!r} missing or not {getattr(kind, '__name__', kind)}")
    return _text(value) if isinstance(value, str) else value


def decode(raw: bytes | str) -> str:
    """A command's output as text: UTF-8, each byte that is not read as U+FFFD (see the module's text)."""
    return raw if isinstance(raw, str) else raw.decode("utf-8", "replace")


def _document(text: str, key: str, command: str) -> list[dict[str, Any]]:
    try:
        doc = json_text(text, command, "the answer")  # no NaN or Infinity; nesting bounded
    except InputError as exc:
        problem = exc.problems[0]
        line = exc.line_of(problem.path)
        raise SchedulerOutputError(f"{command}: {problem.message}{f' (line {line})' if line else ''}") from None
    if not isinstance(doc, dict):
        raise SchedulerOutputError(f"{command} printed JSON that is not an object")
    errors = doc.get("errors", [])
    if not isinstance(errors, list):
        raise SchedulerOutputError(f"{command}: field 'errors' is not a list")
    if errors:
        raise SchedulerError(f"{command} reported: {shown(json_dumps(errors), 300)}")
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
        flags = [_text(f) for f in flags]
        reason = _field(record, "reason", str, what)
        by = record.get("reason_set_by_user")
        by = _text(by) if isinstance(by, str) else ""
        busy = state in BUSY_STATES or bool(BUSY_FLAGS.intersection(flags))
        out[name] = NodeState(
            name,
            bool(OUT_FLAGS.intersection(flags)),
            reason,
            (f"node {state}{'+' + '+'.join(flags) if flags else ''}",) if busy else (),
            by,
        )
    return out


def read_jobs(text: str, only: Collection[str] | None = None) -> dict[str, list[str]]:
    """`squeue --json` as node name -> the jobs holding it ("<id> <state>"), in the order listed; `only`:
    the nodes asked about (the others are counted against the bound, not kept)."""
    out: dict[str, list[str]] = {}
    left = MAX_JOB_NODES
    for record in _document(text, "jobs", "squeue --json"):
        job = _field(record, "job_id", int, "squeue --json job")
        what = f"squeue --json job {job}"
        state = _field(record, "job_state", str, what)
        nodes = _field(record, "nodes", str, what)
        if state in NOT_HOLDING:
            continue
        try:
            names = expand_hostlist(nodes, min(MAX_HOSTLIST, left))
        except SchedulerOutputError as exc:
            bound = "" if left >= MAX_HOSTLIST else f" ({MAX_JOB_NODES:,} names in all the answer's jobs)"
            raise SchedulerOutputError(f"{what}: field 'nodes': {exc}{bound}") from None
        left -= len(names)
        for node in names:
            if only is None or node in only:
                out.setdefault(node, []).append(f"job {job} {state.lower()}")
    return out


# `sacct --json`: Slurm's accounting (slurmdbd) of one job, running or ended. Its layout is Slurm's OpenAPI job
# record, per release, as Slurm's source declares its fields (the parser tables, `add_parse(TYPE, field, "path")`):
# - 22.05, src/plugins/openapi/dbv0.0.38/parse.c: `time/start`, `time/end` UINT32 (numbers), `state/current`
#   JOB_STATE (text);
# - 23.02, src/plugins/data_parser/v0.0.39/parsers.c: the times UINT64 (numbers), JOB_STATE dumped as
#   job_state_string() (text);
# - 23.11 on, data_parser v0.0.40 to v0.0.44: the times TIMESTAMP (dumped as UINT64: numbers), `state/current` a
#   bit flag array (["COMPLETED"]). A time written as {set, infinite, number} (TIMESTAMP_NO_VAL, a step's) is read
#   too.
# Every release: `job_id` an integer, `nodes` a hostlist ("None assigned" for a job that never ran:
# accounting_storage/mysql/as_mysql_job.c), 0 for a time not set (an end while the job runs).
JOB_ID = re.compile(r"[0-9]{1,10}")
JOB_STATE = re.compile(r"[A-Z][A-Z_]{0,39}")  # COMPLETED, OUT_OF_MEMORY, ...
NONE_ASSIGNED = "None assigned"


@dataclass(frozen=True)
class AccountedJob:
    """One job as `sacct --json` shows it."""

    job_id: int
    state: str  # `state.current`, a list's flags joined by "+"
    nodes: tuple[str, ...]  # empty: it never ran on any
    start: int | None  # seconds since 1970; None: not started
    end: int | None  # None: still running (or never started)


def _epoch(record: dict[str, Any], key: str, what: str) -> int | None:
    value = record.get(key)
    if isinstance(value, dict):  # {set, infinite, number}: 23.02's form for numbers, read the same for times
        if value.get("set") is False or value.get("infinite") is True:
            return None
        value = value.get("number")
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 40:
        raise SchedulerOutputError(f"{what}: field 'time.{key}' is not a time (seconds since 1970)")
    return value or None


def _state(record: dict[str, Any], what: str) -> str:
    state = record.get("state")
    current = state.get("current") if isinstance(state, dict) else None
    flags: list[Any] = current if isinstance(current, list) else [current]
    if not flags or not all(isinstance(f, str) and JOB_STATE.fullmatch(f) for f in flags):
        raise SchedulerOutputError(f"{what}: field 'state.current' is not a job state (COMPLETED, or a list of them)")
    return "+".join(str(f) for f in flags)


def read_accounted(text: str, job: int) -> AccountedJob:
    """`sacct --json -j JOB` as the job's record: its last one listed (sacct lists a requeued job's latest
    last); every field read checked, the hostlist counted before it is expanded."""
    records = _document(text, "jobs", "sacct --json")
    mine = [r for r in records if _field(r, "job_id", int, "sacct --json job") == job]
    if not mine:
        raise SchedulerError(f"sacct shows no job {job} (not a job of this cluster, or purged from its accounting)")
    record = mine[-1]
    what = f"sacct --json job {job}"
    nodes = _field(record, "nodes", str, what)
    try:
        names = () if nodes == NONE_ASSIGNED else tuple(expand_hostlist(nodes))
    except SchedulerOutputError as exc:
        raise SchedulerOutputError(f"{what}: field 'nodes': {exc}") from None
    times = _field(record, "time", dict, what)
    return AccountedJob(job, _state(record, what), names, _epoch(times, "start", what), _epoch(times, "end", what))


def run_bounded(
    argv: Sequence[str], env: dict[str, str], max_bytes: int, timeout: float
) -> subprocess.CompletedProcess[bytes]:
    """`argv` run to its end within `timeout` seconds, its stdout read as it comes and at most `max_bytes` of
    it: a command that prints more, or runs longer, is killed (it is ours: started here) and named in a
    `SchedulerError`, never read whole nor waited for. Of stderr, the last MAX_STDERR bytes are kept."""
    command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv[:2]))
    try:
        proc = subprocess.Popen(
            list(argv), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as exc:
        raise SchedulerError(f"{command} cannot be run: {exc.strerror}") from None
    out, err = bytearray(), bytearray()
    deadline = time.monotonic() + timeout
    try:
        with selectors.DefaultSelector() as pipes:
            pipes.register(proc.stdout.fileno(), selectors.EVENT_READ, out)  # type: ignore[union-attr]
            pipes.register(proc.stderr.fileno(), selectors.EVENT_READ, err)  # type: ignore[union-attr]
            while pipes.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SchedulerError(f"{command} did not answer within {timeout:g} s: stopped")
                for key, _ in pipes.select(left):
                    chunk = os.read(key.fd, MiB)
                    if not chunk:
                        pipes.unregister(key.fd)
                        continue
                    key.data.extend(chunk)
                    if len(out) > max_bytes:
                        raise SchedulerOutputError(
                            f"{command} printed more than {max_bytes:,} bytes, more than any cluster's answer: stopped"
                        )
                    del err[:-MAX_STDERR]
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise SchedulerError(f"{command} did not end within {timeout:g} s: stopped") from None
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    return subprocess.CompletedProcess(list(argv), proc.returncode, bytes(out), bytes(err))


class Slurm:
    """A Slurm cluster reached through its commands on this machine (`SLURM_CONF` when `conf` is given).
    `max_bytes` and `timeout` bound each command (MAX_ANSWER, TIMEOUT)."""

    kind = "slurm"

    def __init__(
        self,
        conf: Path | None = None,
        runner: Runner | None = None,
        *,
        max_bytes: int = MAX_ANSWER,
        timeout: float = TIMEOUT,
    ) -> None:
        self.conf = conf
        self.max_bytes = max_bytes
        self.timeout = timeout
        self._runner = runner or self._run

    def _run(self, args: Sequence[str]) -> subprocess.CompletedProcess[bytes]:
        binary = shutil.which(args[0])
        if binary is None:
            raise SchedulerError(f"{args[0]} is not installed here (Debian: slurm-client)")
        env = dict(os.environ)
        if self.conf is not None:
            env["SLURM_CONF"] = str(self.conf)
        return run_bounded([binary, *args[1:]], env, self.max_bytes, self.timeout)

    def _call(self, *args: str) -> str:
        done = self._runner(list(args))
        if done.returncode != 0:
            said = decode(done.stderr or done.stdout or b"")[-MAX_STDERR:].strip().splitlines()
            last = shown(said[-1], 300) if said else ""
            raise SchedulerError(f"{' '.join(args[:2])} failed (exit {done.returncode}): {last}")
        if len(done.stdout) > self.max_bytes:  # a runner given by the caller is held to the same bound
            raise SchedulerOutputError(f"{' '.join(args[:2])} printed more than {self.max_bytes:,} bytes")
        return decode(done.stdout)

    def squeue(self) -> str:
        """`squeue --json` as Slurm printed it: every job of the cluster, for a reader of running jobs (read-only)."""
        return self._call("squeue", "--json")

    def sacct(self, job: str) -> AccountedJob:
        """One job, running or ended, from Slurm's accounting: `sacct --json -j JOB` (read-only; slurmdbd answers
        it: without accounting storage sacct says it is disabled, a SchedulerError naming that)."""
        if not JOB_ID.fullmatch(job):
            raise SchedulerError(f"{shown(job, 40)!r} is not a Slurm job id (digits)")
        return read_accounted(self._call("sacct", "--json", "-j", job), int(job))

    def nodes(self, names: Sequence[str]) -> dict[str, NodeState]:
        every = read_nodes(self._call("sinfo", "--json"))
        wanted = set(names)
        jobs = read_jobs(self._call("squeue", "--json"), wanted) if wanted.intersection(every) else {}
        out = {}
        for name in names:
            if name in every:
                state = every[name]
                # The jobs by id; a node still busy by its own state with no job listed (a job ending) by that.
                holders = tuple(jobs.get(name) or state.holders)
                out[name] = NodeState(name, state.out, state.reason, holders, state.set_by)
        return out

    def take_out(self, node: str, mark: Mark) -> None:
        node_arg = f"{NODE_NAME}={checked_node(node)}"
        self._call(*SCONTROL_UPDATE, node_arg, f"{STATE}={STATE_DRAIN}", f"{REASON}={mark.text}")
        # Read back: a node drained at the same moment by someone else carries their reason, not ours.
        state = read_nodes(self._call("sinfo", "--json")).get(node)
        if state is None or not state.out or state.reason != mark.text:
            raise SchedulerError(f"slurm: {node} did not take the drain {mark.text!r}")

    def put_back(self, node: str, mark: Mark) -> bool:
        state = read_nodes(self._call("sinfo", "--json")).get(node)
        if state is None or not state.out or state.reason != mark.text:
            return False
        self._call(*SCONTROL_UPDATE, f"{NODE_NAME}={checked_node(node)}", f"{STATE}={STATE_RESUME}")
        return True

    def move(self, states: dict[str, NodeState]) -> list[str]:
        return []  # Slurm lets a drained node's jobs run to their end: nothing is cancelled here

    def marked(self) -> list[NodeState]:
        # A node whose name no scheduler command accepts cannot be resumed by us (nor was it drained by us):
        # left out, so that it cannot stop the resume of the others.
        nodes = read_nodes(self._call("sinfo", "--json")).values()
        return [s for s in nodes if s.mark is not None and NODE.fullmatch(s.name)]
