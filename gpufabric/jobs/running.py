"""The jobs running now, as Slurm's `squeue --json` lists them: id, user and nodes of every job that holds nodes.

Read strictly, as the scheduler reader reads every answer: a field of another type, a hostlist that does not
parse, a user name that is not one, is an error for the whole answer (`SchedulerOutputError`), never a job
guessed or skipped. Slurm 22.05 (OpenAPI v0.0.38) writes `job_state` as a string; 23.02 and later as a list of
strings (the state and its flags): both are read. A job array's tasks are listed each with its own `job_id`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gpufabric.outputs import json_dumps
from gpufabric.scheduler.model import SchedulerError, SchedulerOutputError
from gpufabric.scheduler.slurm import NOT_HOLDING, expand_hostlist

# A login name as useradd accepts it (the shadow suite's default pattern, 32 characters at most): the only
# user text that reaches a label. Slurm prints the name it resolved; a uid it could not resolve is its number.
USER = re.compile(r"[a-z_][a-z0-9_.-]{0,30}\$?|[0-9]{1,10}")
MAX_JOBS = 200_000  # jobs in one answer: a larger listing is refused, not read into memory without end
MAX_NODES = 1_000_000  # node names over all running jobs together


@dataclass(frozen=True, slots=True)
class RunningJob:
    job_id: str  # decimal, as Slurm numbers jobs
    user: str  # "" when Slurm's answer names none
    nodes: tuple[str, ...]


def _state(record: dict[str, Any], what: str) -> str:
    state = record.get("job_state")
    if isinstance(state, list) and state and all(isinstance(s, str) for s in state):
        return state[0]  # 23.02+: the base state first, then its flags
    if isinstance(state, str):
        return state
    raise SchedulerOutputError(f"{what}: field 'job_state' missing or neither text nor a list of text")


def read_running(text: str) -> list[RunningJob]:
    """Every job of `squeue --json` that holds nodes now (not pending nor ended), in the order listed."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise SchedulerOutputError(f"squeue --json did not print JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise SchedulerOutputError("squeue --json printed JSON that is not an object")
    errors = doc.get("errors", [])
    if not isinstance(errors, list):
        raise SchedulerOutputError("squeue --json: field 'errors' is not a list")
    if errors:
        raise SchedulerError(f"squeue --json reported: {json_dumps(errors)[:300]}")
    records = doc.get("jobs")
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise SchedulerOutputError("squeue --json: field 'jobs' missing or not a list of objects")
    if len(records) > MAX_JOBS:
        raise SchedulerOutputError(f"squeue --json lists {len(records)} jobs, more than {MAX_JOBS} are read")
    out: list[RunningJob] = []
    total = 0
    for record in records:
        job = record.get("job_id")
        if not isinstance(job, int) or isinstance(job, bool) or not 0 < job < 1 << 32:
            raise SchedulerOutputError("squeue --json job: field 'job_id' missing or not a job number")
        what = f"squeue --json job {job}"
        if _state(record, what) in NOT_HOLDING:
            continue
        nodes = record.get("nodes")
        if not isinstance(nodes, str):
            raise SchedulerOutputError(f"{what}: field 'nodes' missing or not text")
        user = record.get("user_name", "")
        if not isinstance(user, str) or (user and not USER.fullmatch(user)):
            raise SchedulerOutputError(f"{what}: field 'user_name' is not a login name ({str(user)[:40]!r})")
        names = tuple(dict.fromkeys(expand_hostlist(nodes)))
        total += len(names)
        if total > MAX_NODES:
            raise SchedulerOutputError(f"squeue --json: the running jobs name more than {MAX_NODES} nodes")
        if names:
            out.append(RunningJob(str(job), user, names))
    return out
