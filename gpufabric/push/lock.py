"""One push per fabric at a time, on this controller.

Two pushes of one fabric would interleave their batches, and each would take the other's changes
for drift. The lock is an advisory `flock` on a file named for the fabric, held for the whole
push and released by the kernel when the process ends, however it ends: a crashed push never
leaves the fabric locked.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class FabricBusyError(Exception):
    """Another process holds this fabric's push lock."""


def lock_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        return Path(runtime)
    if os.geteuid() == 0 and Path("/run/lock").is_dir():
        return Path("/run/lock")
    return Path(tempfile.gettempdir())


@contextmanager
def fabric_lock(fabric: str, directory: Path | None = None) -> Iterator[Path]:
    path = (directory or lock_dir()) / f"gpufabric-push-{fabric}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise FabricBusyError(
                f"another push of fabric '{fabric}' is running (pid {holder}, lock {path}): "
                "wait for it to finish; a second push would interleave with it"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)  # closing releases the lock
