"""One push per fabric at a time, on this controller (per target: the real switches, or one lab of the fabric).

Two pushes of one fabric would interleave their batches, and each would take the other's changes
for drift. The lock is an advisory `flock` on a file named for the fabric, held for the whole
push and released by the kernel when the process ends, however it ends: a crashed push never
leaves the fabric locked.

Where it lives does not depend on the environment (a cron job has no $XDG_RUNTIME_DIR; an
interactive shell has one): root's pushes lock in SYSTEM_DIR, every other user's in a folder of
their own under their home directory (from the password database, not $HOME). Either folder must
belong to that user and be writable by nobody else, and the lock file is opened without following
a link: a file or link planted there by another user is refused, never written through. This lock
holds between the pushes of one account on one machine; the pending-push check on the switches
(see rollout) is what holds between controllers.
"""

from __future__ import annotations

import fcntl
import logging
import os
import pwd
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gpufabric import owned_files as files
from gpufabric.fleet.errors import PushRefusedError
from gpufabric.owned_files import MakeError

log = logging.getLogger(__name__)

SYSTEM_DIR = Path("/run/lock/gpufabric")  # root's pushes; /run/lock is a tmpfs every Linux has
USER_DIR = ".gpufabric/lock"  # under a non-root user's home directory


class FabricBusyError(PushRefusedError):
    """Another process holds this fabric's push lock."""


class LockPathError(PushRefusedError):
    """The lock's folder or file is not safe to use (owned by someone else, writable by others, a link)."""


def lock_dir(uid: int | None = None) -> Path:
    """The one folder this user's push locks live in."""
    uid = os.geteuid() if uid is None else uid
    if uid == 0:
        return SYSTEM_DIR
    return Path(pwd.getpwuid(uid).pw_dir) / USER_DIR


def owned_dir(path: Path, uid: int, what: str = "the push lock folder", error: MakeError = LockPathError) -> None:
    """`owned_files.owned_dir`, refusing with the push lock's error unless told otherwise."""
    files.owned_dir(path, uid, what, error)


def open_owned(path: Path, uid: int, flags: int, what: str = "the push lock", error: MakeError = LockPathError) -> int:
    """`owned_files.open_owned`, refusing with the push lock's error unless told otherwise."""
    return files.open_owned(path, uid, flags, what, error)


@contextmanager
def fabric_lock(
    fabric: str, directory: Path | None = None, uid: int | None = None, target: str = "switches"
) -> Iterator[Path]:
    """Hold the fabric's push lock for the `with` block. `target`: the real switches, or a lab of the fabric
    (`lab-<name>`: two labs of one fabric side by side are two targets). `directory` and `uid` default to this
    user's lock folder and id (tests give their own)."""
    uid = os.geteuid() if uid is None else uid
    folder = directory or lock_dir(uid)
    owned_dir(folder, uid)
    path = folder / (
        f"gpufabric-push-{fabric}.lock" if target == "switches" else f"gpufabric-push-{fabric}@{target}.lock"
    )
    fd = open_owned(path, uid, os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            raise FabricBusyError(
                f"another push of fabric '{fabric}'{'' if target == 'switches' else ' to ' + target} is running "
                f"(pid {holder}, lock {path}): "
                "wait for it to finish; a second push would interleave with it"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        log.info("lock %s taken", path)
        yield path
    finally:
        os.close(fd)  # closing releases the lock
        log.debug("lock %s closed", path)
