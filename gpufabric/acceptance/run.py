"""Run the suite's pair jobs over SSH, one pair at a time (a pair must have its NICs to itself):
the server side starts in the background, the client side runs and its output is the result.
Collectives (nccl-tests) need MPI or Slurm: `acceptance scripts` writes them."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from gpufabric.acceptance.model import PerfJob, Suite
from gpufabric.files import write_atomic

RunOnHost = Callable[[str, str], str]  # (server, shell command) -> stdout
SETTLE = "sleep 1"  # the listener binds before the client connects


def _server_side(job: PerfJob) -> str | None:
    cmd = job.command("server")
    if not cmd:
        return None
    # Detached, bounded: a listener whose client never comes ends by itself.
    return f"nohup timeout 60 {shlex.join(cmd)} >/dev/null 2>&1 </dev/null & {SETTLE}"


def run_suite(suite: Suite, shell: RunOnHost, results: Path, progress: Callable[[PerfJob], None] | None = None) -> int:
    """Run every pair job; write `<job id>.txt` per job. Returns how many produced output."""
    results.mkdir(parents=True, exist_ok=True)
    done = 0
    for job in suite.perf:
        if progress is not None:
            progress(job)
        server = _server_side(job)
        try:
            if server is not None:
                shell(job.server.server, server)
            output = shell(job.client.server, f"timeout 120 {shlex.join(job.command('client'))} 2>&1")
        except Exception as exc:  # one pair that cannot run is its own missing result, not the end of the run
            output = f"gpufabric: could not run the job: {type(exc).__name__}: {exc}\n"
        write_atomic(results / f"{job.id}.txt", output)
        done += bool(output.strip())
    return done
