"""Where the CLI writes: stdout for results, stderr for people."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from rich.console import Console

from gpufabric.export.atomic import write_atomic

# Results go to stdout, everything for people (progress, warnings, errors) to stderr,
# so `gpufabric plan --json | jq` always gets clean JSON.
# Tables piped to a file or CI log keep their full width instead of Rich's 80 columns.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def write_stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def emit(text: str, output: Path | None) -> None:
    """A result to stdout, or written whole to `output` with a note for people."""
    if output is None:
        write_stdout(text)
    else:
        write_atomic(output, text)
        err.print(f"wrote {output}")


def write_files(directory: Path, files: Mapping[str, str]) -> int:
    """Each file (name -> text) written whole into `directory`; returns how many, for the caller's note."""
    for name, text in files.items():
        write_atomic(directory / name, text)
    return len(files)
