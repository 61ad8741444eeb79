"""One push per fabric at a time, on this controller.

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

import errno
import fcntl
import logging
import os
import pwd
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from gpufabric.push.errors import PushRefusedError

log = logging.getLogger(__name__)

SYSTEM_DIR = Path("/run/lock/gpufabric")  # root's pushes; /run/lock is a tmpfs every Linux has
USER_DIR = ".gpufabric/lock"  # under a non-root user's home directory


class FabricBusyError(PushRefusedError):
    """Another process holds this fabric's push lock."""


class LockPathError(PushRefusedError):
    """The lock's folder or file is not safe to use (owned by someone else, writable by others, a link)."""


MakeError = Callable[[str], Exception]  # the error a caller's module raises, from its message


def lock_dir(uid: int | None = None) -> Path:
    """The one folder this user's push locks live in."""
    uid = os.geteuid() if uid is None else uid
    if uid == 0:
        return SYSTEM_DIR
    return Path(pwd.getpwuid(uid).pw_dir) / USER_DIR


def owned_dir(path: Path, uid: int, what: str = "the push lock folder", error: MakeError = LockPathError) -> None:
    """Make `path` (0700) if it is missing, then refuse it unless it is a real folder of `uid` that
    no one else may write to: only then can no one else plant a file or a link in it. `what` names it
    in the error, which is raised as `error` (the push lock's, the audit trail's)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise error(f"cannot make {what} {path}: {exc.strerror}") from None
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise error(f"{what} {path} is not a folder (a link or a file is there): remove it")
    if info.st_uid != uid:
        raise error(f"{what} {path} belongs to uid {info.st_uid}, not {uid}: remove it (someone else made it)")
    if info.st_mode & 0o022:
        raise error(f"{what} {path} is writable by others (mode {stat.S_IMODE(info.st_mode):04o}): chmod 700 {path}")


def open_owned(path: Path, uid: int, flags: int, what: str = "the push lock", error: MakeError = LockPathError) -> int:
    """`path` opened (created 0600 if missing) with `flags`, never through a link, never blocking on
    a FIFO, and refused unless what was opened is a plain file of `uid` with one name: a file or link
    planted there is never written through. In a folder checked by `owned_dir`."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise error(f"{what} {path} is a symbolic link: refusing to follow it; remove it") from None
        raise error(f"cannot open {what} {path}: {exc.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != uid or info.st_nlink != 1:
        os.close(fd)
        raise error(
            f"{what} {path} is not a plain file of uid {uid} with one name (a planted file or hard link): remove it"
        )
    os.set_blocking(fd, True)
    return fd


@contextmanager
def fabric_lock(fabric: str, directory: Path | None = None, uid: int | None = None) -> Iterator[Path]:
    """Hold the fabric's push lock for the `with` block. `directory` and `uid` default to this user's
    lock folder and id (tests give their own)."""
    uid = os.geteuid() if uid is None else uid
    folder = directory or lock_dir(uid)
    owned_dir(folder, uid)
    path = folder / f"gpufabric-push-{fabric}.lock"
    fd = open_owned(path, uid, os.O_RDWR)
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
        log.info("lock %s taken", path)
        yield path
    finally:
        os.close(fd)  # closing releases the lock
        log.debug("lock %s closed", path)
