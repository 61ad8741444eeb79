"""Files written whole or not at all: a reader never sees half a config or half a plan.

The one way gpufabric writes a file (besides append-only logs and locks, which are opened without
following a link): a temporary file beside the target, renamed over it. A rename replaces whatever
is at the target's name, a link planted there included, and never writes through it.

The mode is what any Unix tool would give: a new file gets what the umask allows (0644 under 022,
0640 under 027), an existing file keeps its mode, so `export slurm -o /etc/slurm/topology.conf`
stays readable by the daemons that read it. A file holding a secret (a password hash, a login, a
host key pin) is written `PRIVATE` instead, whatever the umask or the mode of the file it replaces.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gpufabric.errors import GpufabricError

PRIVATE = 0o600  # the owner alone reads and writes it: for files that hold secrets
_NEW = 0o666  # what open(2) asks for a new file; the umask takes away the rest


def current_umask() -> int:
    """The process's umask. Read from /proc where Linux shows it: setting it to read it back, as
    os.umask must, would leave a moment in which another thread creates files world-writable."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o077)  # the strictest value for the moment it is held
    os.umask(umask)
    return umask


def _mode_for(path: Path) -> int:
    """An existing plain file's own mode, else what a new file gets under the umask."""
    try:
        st = path.lstat()
    except OSError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode)
    return _NEW & ~current_umask()


def write_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Write to a temporary file beside `path`, then rename: readers never see half a file, and a link
    at `path` is replaced, not followed. The mode: `mode` when given (PRIVATE for a secret), else the
    mode of the plain file being replaced, else what the umask gives a new file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    final = _mode_for(path) if mode is None else mode
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if final != PRIVATE:  # mkstemp's
            os.fchmod(fd, final)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_if_changed(path: Path, data: str, mode: int | None = None) -> bool:
    """write_atomic, unless the file already holds exactly `data`: a second render of a large fabric
    then creates no file (creating one is most of the cost of writing it) and keeps every unchanged
    file's modification time, so rsync and make see only what changed. True when written. Only a
    plain file is compared (read no further than `data`'s length): a link, a FIFO or a device at
    `path` is replaced."""
    from gpufabric.inputs import InputError, read_bytes  # the readers (subprocess, json): not at start-up

    encoded = data.encode()
    try:
        same = path.lstat().st_size == len(encoded) and encoded == read_bytes(
            path, what="a file being rewritten", max_bytes=len(encoded), follow_links=False
        )
    except (OSError, InputError):
        same = False  # absent, unreadable or not a plain file: write it
    if same:
        return False
    write_atomic(path, encoded, mode)
    return True


def write_new(path: Path, data: str, mode: int | None = None) -> bool:
    """Create `path` (which must not exist) holding `data`, with `mode` or else what the umask gives a
    new file: for a folder no reader can see yet (folder_written_whole). True."""
    # open(2) takes the umask off the mode asked: never more open than `mode`, and one call per
    # file (no chmod), which counts when a large fabric's configs are written.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _NEW if mode is None else mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data.encode())
    return True


@contextmanager
def folder_written_whole(folder: Path) -> Iterator[tuple[Path, bool]]:
    """Where to write the files of `folder`, and whether that place is new.

    A folder that does not exist yet is written under a temporary name beside it and renamed into
    place when the block ends without an error: it appears whole or not at all, and its files need
    no temporary names of their own (a create and a rename per file, twice the directory updates,
    were most of what writing a large fabric's configs cost). An existing folder is written in
    place, each file whole (write_if_changed)."""
    if folder.exists():
        yield folder, False
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".tmp", dir=folder.parent))
    try:
        yield staging, True
        staging.chmod(0o777 & ~current_umask())  # what mkdir would have made, not mkdtemp's owner-only mode
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


class AppendError(GpufabricError):
    """An append-only file that cannot be appended to safely: the reason, for the caller's own error."""


def append_line(path: Path, line: str) -> None:
    """Append `line` to an append-only file (created 0600, with its folder 0700): opened without
    following a link and without waiting on a FIFO, and refused unless it is a plain file, so a link
    planted in its place is never written through. One write: O_APPEND keeps the line whole."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # ~/.ssh may not exist yet
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise AppendError("it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise AppendError("it is not a plain file")
        os.set_blocking(fd, True)
        os.write(fd, line.encode())
    finally:
        os.close(fd)
