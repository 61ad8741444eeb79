"""Where the CLI writes: stdout for results, stderr for people."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from rich.console import Console
from rich.text import Text

from gpufabric.files import write_atomic

# Results go to stdout, everything for people (progress, warnings, errors) to stderr,
# so `gpufabric plan --json | jq` always gets clean JSON.
# Tables piped to a file or CI log keep their full width instead of Rich's 80 columns.
# No emoji codes, ever: Rich turns `:100:` into an emoji even with markup off, so `FILE:100: field`
# printed as `FILE💯 field`, and a switch's or a file's `:name:` would change the same way. These two
# consoles are the only ones the commands print through (Progress bars are given one of them).
out = Console(highlight=False, emoji=False, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False, emoji=False, soft_wrap=True)


def shown(text: object, style: str = "") -> Text:
    """Text that came from outside (a switch's answer, a file, a tool's output) as Rich prints it: a
    `Text`, so `[/]` or `[bold red]` in it is never read as markup (markup that does not parse would
    crash the report) nor `:name:` as an emoji, and every control character written as an escape (an
    ESC sequence from a switch must not recolour, clear or retitle the operator's terminal). `style` is
    our own colour around it."""
    from gpufabric.intent.errors import printable  # the intent package: only where outside text is shown

    return Text(printable(str(text)), style=style)


def shown_lines(text: str, style: str = "") -> Text:
    """Outside text of several lines (a switch's diff) as `shown` gives one line: each line's control
    characters escaped, the line breaks kept (a CR before one is a Windows line end, dropped)."""
    from gpufabric.intent.errors import printable

    return Text("\n".join(printable(line.removesuffix("\r")) for line in text.split("\n")), style=style)


def write_stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def emit(text: str, output: Path | None) -> None:
    """A result to stdout, or written whole to `output` with a note for people."""
    if output is None:
        write_stdout(text)
    else:
        write_atomic(output, text)
        err.print(shown(f"wrote {output}"))


def write_files(directory: Path, files: Mapping[str, str]) -> int:
    """Each file (name -> text) written whole into `directory`; returns how many, for the caller's note."""
    for name, text in files.items():
        write_atomic(directory / name, text)
    return len(files)
