"""The part of a POSIX shell the drivers' command lines use: `;`, `&&`, `||`, `>` (and `2>`) redirects,
quoting. Each simple command goes to the switch's own `run`; anything else is "command not found",
so a driver that starts sending something new fails loudly instead of being answered wrongly."""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass
class Result:
    rc: int = 0
    stdout: str = ""
    stderr: str = ""


@dataclass
class Simple:
    argv: list[str]
    stdout_to: str | None = None
    stderr_to: str | None = None


@dataclass
class Step:
    op: str  # how it joins the step before it: ";", "&&", "||" (the first: ";")
    command: Simple = field(default_factory=lambda: Simple([]))


class ShellSyntaxError(ValueError):
    pass


def parse(line: str) -> list[Step]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|>")
    lexer.whitespace_split = True
    tokens = list(lexer)
    steps = [Step(";")]
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        current = steps[-1].command
        if tok in (";", "&&", "||"):
            steps.append(Step(tok))
        elif tok == ">":
            if i + 1 >= len(tokens):
                raise ShellSyntaxError("redirect without a file")
            if current.argv and current.argv[-1] == "2":  # `2>`: the lexer split the descriptor off
                current.argv.pop()
                current.stderr_to = tokens[i + 1]
            else:
                current.stdout_to = tokens[i + 1]
            i += 1
        elif tok in ("|", "&", ">>", "&>"):
            raise ShellSyntaxError(f"`{tok}` is not simulated")
        else:
            current.argv.append(tok)
        i += 1
    return [s for s in steps if s.command.argv]


Runner = Callable[[list[str], str | None], Awaitable[Result]]
Writer = Callable[[str, str], None]


async def run_line(line: str, stdin: str | None, run: Runner, write: Writer) -> Result:
    """Run a command line: `run(argv, stdin)` for each simple command, `write(path, text)` for `>`."""
    try:
        steps = parse(line)
    except (ValueError, ShellSyntaxError) as exc:
        return Result(2, "", f"sh: {exc}\n")
    out, err = [], []
    last = Result()
    for step in steps:
        if (step.op == "&&" and last.rc != 0) or (step.op == "||" and last.rc == 0):
            continue
        last = await run(step.command.argv, stdin)
        if step.command.stdout_to is not None:
            if step.command.stdout_to != "/dev/null":
                write(step.command.stdout_to, last.stdout)
        else:
            out.append(last.stdout)
        if step.command.stderr_to is None:
            err.append(last.stderr)
    return Result(last.rc, "".join(out), "".join(err))
