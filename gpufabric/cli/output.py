"""Where the CLI writes: stdout for results, stderr for people."""

from __future__ import annotations

import sys

from rich.console import Console

# Results go to stdout, everything for people (progress, warnings, errors) to stderr,
# so `gpufabric plan --json | jq` always gets clean JSON.
# Tables piped to a file or CI log keep their full width instead of Rich's 80 columns.
out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def write_stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
