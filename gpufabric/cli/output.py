"""Where the CLI writes: consoles, and files written whole or not at all."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from rich.console import Console

# Results go to stdout, everything for people (progress, warnings, errors) to stderr,
# so `gpufabric plan --json | jq` always gets clean JSON.
# Tables piped to a file or CI log keep their full width instead of Rich's 80 columns.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, soft_wrap=True)


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


def write_stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
