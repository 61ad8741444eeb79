"""The root of every error gpufabric raises on purpose, and the located error of the intent and its inputs.

Ground floor: imports nothing of gpufabric, so any layer can raise these. A `GpufabricError` is a
refusal the library meant, with a message written for the operator; anything else reaching the
command line is a bug. The command line maps the families to exit codes in one place
(gpufabric/cli/errors.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

Path = tuple[str | int, ...]  # a field's place in a document: keys and list indexes

MAX_SHOWN = 50  # problems printed; the count says how many more there are


class GpufabricError(Exception):
    """Something gpufabric refuses or cannot do, said in words for the operator (not a bug)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a file: where, what, and what would be right."""

    path: Path
    message: str
    hint: str = ""

    @property
    def field(self) -> str:
        return dotted(self.path)


def printable(text: str) -> str:
    """`text` with every control character (terminal escape sequences among them) written as an escape:
    a value echoed in a message must not repaint or retitle the operator's terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def dotted(path: Path) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


@dataclass
class LocatedError(GpufabricError):
    """Problems in one file, each located by line and field: printed as `file:line: field: message`
    with a `fix:` hint, then what the command did about it (`OUTCOME`)."""

    file: str
    problems: list[Problem]
    lines: dict[Path, int] = field(default_factory=dict)

    OUTCOME = "nothing was written"

    def line_of(self, path: Path) -> int | None:
        """The line of the deepest part of `path` that exists in the file."""
        for cut in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:cut]))
            if line is not None:
                return line
        return None

    def render(self, limit: int = MAX_SHOWN) -> str:
        rows = []
        for p in self.problems[:limit]:
            line = self.line_of(p.path)
            file = printable(self.file)
            where = f"{file}:{line}" if line else file
            rows.append(f"error: {where}: {printable(p.field)}: {printable(p.message)}")
            if p.hint:
                rows.append(f"  fix: {printable(p.hint)}")
        n = len(self.problems)
        if n > limit:
            rows.append(f"... and {n - limit} more (the first {limit} are shown)")
        rows.append(f"{n} problem{'s' if n != 1 else ''} in {printable(self.file)}; {self.OUTCOME}.")
        return "\n".join(rows)

    def as_dicts(self) -> list[dict[str, object]]:
        return [
            {
                "file": self.file,
                "line": self.line_of(p.path),
                "field": printable(p.field),
                "message": printable(p.message),
                "hint": printable(p.hint),
            }
            for p in self.problems
        ]

    def __str__(self) -> str:
        return self.render()


@dataclass
class IntentError(LocatedError):
    """The intent cannot be planned. Carries every problem found, already located. An input file that
    cannot be read (gpufabric.inputs.InputError) is one too, so whoever refuses an unusable intent
    also refuses an unreadable one; it lives here, below the intent, so that the readers of outside
    input can raise it without importing the intent's package."""

    # What the command did about it, said last; an input read for a report or a push plans nothing.
    OUTCOME = "nothing was planned or written"
