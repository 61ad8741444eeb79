"""Files written whole or not at all: a reader never sees half a config or half a plan."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write to a temporary file beside `path`, then rename: readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_if_changed(path: Path, data: str) -> bool:
    """write_atomic, unless the file already holds exactly `data`: a second render of a large fabric
    then creates no file (creating one is most of the cost of writing it) and keeps every unchanged
    file's modification time, so rsync and make see only what changed. True when written."""
    encoded = data.encode()
    try:
        if path.stat().st_size == len(encoded) and path.read_bytes() == encoded:
            return False
    except OSError:
        pass  # absent or unreadable: write it
    write_atomic(path, encoded)
    return True
