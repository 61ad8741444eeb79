"""A stand-in for FRR's watchfrr with a job running: a real process whose child (its start job) runs until the
test ends it, named in a pathspace's watchfrr.pid as FRR's init script leaves it. The waits on watchfrr's jobs
(the lab's start, the FRR driver's restart) find its child with pgrep, as they find the real one's."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def watchfrr_with_a_job(run_dir: Path, pathspace: str) -> Iterator[tuple[subprocess.Popen[bytes], Callable[[], None]]]:
    """Yields the stand-in and what ends its job; on the way out both end, also when the test failed."""
    done = run_dir / f"{pathspace}.job-done"
    job = f'while [ ! -e "{done}" ]; do sleep 0.05; done'
    watchfrr = subprocess.Popen(["sh", "-c", f"sh -c '{job}' & wait"])
    try:
        (run_dir / pathspace).mkdir()
        (run_dir / pathspace / "watchfrr.pid").write_text(f"{watchfrr.pid}\n")
        deadline = time.monotonic() + 10
        while subprocess.run(["pgrep", "-P", str(watchfrr.pid)], capture_output=True, check=False).returncode:
            assert time.monotonic() < deadline, "the stand-in's job never started"
            time.sleep(0.05)
        yield watchfrr, done.touch
    finally:  # the job ends by itself once told; then its parent
        done.touch()
        watchfrr.wait(timeout=10)
