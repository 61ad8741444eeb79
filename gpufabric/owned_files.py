"""Files and folders only their owner can have planted: made or opened without following a link, and
refused unless they belong to the one user and no one else may write them. The push lock, the audit
trail, the lab's daemon logs and its image build lock are all opened this way."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

MakeError = Callable[[str], Exception]  # the error a caller's module raises, from its message


def owned_dir(path: Path, uid: int, what: str, error: MakeError) -> None:
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


def open_owned(path: Path, uid: int, flags: int, what: str, error: MakeError) -> int:
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
