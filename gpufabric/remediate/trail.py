"""The remediation trail: one JSON line per thing the loop decides or does, each on disk before the
loop goes on.

- A drain or a resume is written twice: the intent ("about to drain gpu01 because ...") before any
  scheduler is asked, the outcome after. A line is one write(2) with O_APPEND, then fsync(2): when the
  intent cannot be written (a full disk, a file replaced by a folder), nothing is asked of a scheduler.
- The trail is checked when the receiver starts (`Trail.check`): its folder must belong to this account
  and be writable by no one else (`owned_files.owned_dir`, as the push's audit trail), and the file must
  be a plain file of this account with one name, writable by no one else. A FIFO, a device (/dev/full),
  a folder or a link in its place is refused by name: the receiver does not start on a trail it cannot
  keep.
- Every line reopens the file the same way (without following a link, without blocking on a FIFO): a
  trail rotated away (logrotate's `create`) is followed to its new file, and one replaced by anything
  but a plain file of ours is a `TrailError`, never a line written elsewhere or skipped.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gpufabric.errors import GpufabricError
from gpufabric.owned_files import open_owned, owned_dir


class TrailError(GpufabricError):
    """The trail or the record cannot be written: the loop acts on nothing more (the receiver answers 503)."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a plain file"


class Trail:
    """The trail's file at `path`, written one fsynced line at a time by this account (`uid`)."""

    def __init__(self, path: Path, uid: int | None = None) -> None:
        self.path = path
        self.uid = os.geteuid() if uid is None else uid

    def _fail(self, why: str) -> TrailError:
        return TrailError(
            f"the remediation trail {self.path} {why}; the loop acts only when it can record what it does "
            "(choose another file with --audit-log)"
        )

    def _folder_fail(self, why: str) -> TrailError:
        return TrailError(f"{why}; the loop acts only when it can record what it does (or choose another --audit-log)")

    def _open(self) -> int:
        """The file opened for appending (created 0600 if missing), refused unless a plain file of ours."""
        owned_dir(self.path.parent, self.uid, "the folder of the remediation trail", self._folder_fail)
        try:
            seen = os.lstat(self.path)
        except FileNotFoundError:
            seen = None
        except OSError as exc:
            raise self._fail(f"cannot be looked at: {exc.strerror}") from None
        # Named before opening: a FIFO or a device is never opened.
        if seen is not None and not stat.S_ISREG(seen.st_mode):
            raise self._fail(f"is {_kind(seen.st_mode)}, not a plain file: remove it, or name a file")
        # open_owned: without following a link, without blocking on a FIFO swapped in since the look above,
        # and refused unless a plain file of `uid` with one name.
        fd = open_owned(self.path, self.uid, os.O_WRONLY | os.O_APPEND, "the remediation trail", self._folder_fail)
        info = os.fstat(fd)
        if info.st_mode & 0o022:
            os.close(fd)
            raise self._fail(f"may be written by others (mode {stat.S_IMODE(info.st_mode):04o}): chmod 600 {self.path}")
        if seen is None:  # a new file: its name must survive a crash as well as its lines
            _sync_folder(self.path.parent)
        return fd

    def check(self) -> None:
        """Refuse (TrailError) a trail that cannot be written, before anything is acted on."""
        os.close(self._open())

    def append(self, line: str) -> None:
        """Write `line` (one JSON line with its newline) whole and on disk, or raise TrailError."""
        data = line.encode()
        fd = self._open()
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise self._fail(f"took {written} of {len(data)} bytes of a line (the disk is full?)")
            os.fsync(fd)
        except OSError as exc:
            raise self._fail(f"cannot be written: {exc.strerror}") from None
        finally:
            os.close(fd)


def _sync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return  # the line's own fsync still holds; a folder that cannot be opened is checked by owned_dir
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the file's own fsync is what counts
    finally:
        os.close(fd)
