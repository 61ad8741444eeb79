"""The two shapes of command a driver sends that are more than one line of simple commands: a script on
stdin (`sh -s`: gpufabric.drivers.transport.put_files and the drains' change_script) and several reads
framed in one round trip (gpufabric.drivers.transport.read_each). Each is taken apart into the simple
commands the switch answers (shell.run_line); anything else of the shell stays unsimulated, so a driver
that starts sending something new fails loudly.

A script runs line by line: `set -e` stops it at the first command that fails (its status is the
script's); `( ... )` runs its commands in place (no state a subshell could keep is simulated); a
here-document (`<<'WORD'` to a line `WORD`) is its command's stdin."""

from __future__ import annotations

import base64
import re

from bench.fleet_sim.shell import Result, Runner, Writer, run_line

# One framed read of gpufabric.drivers.transport.read_each: the command, then its status, base64 between
# two markers naming the call's token and the command's place.
_FRAME = re.compile(
    r"printf '\\n@gf-(?P<token>[0-9a-f]+)-(?P<i>\d+):'; \{ \( (?P<command>[^\n]*)\n\) </dev/null 2>/dev/null; "
    r"printf '\\n%d' \"\$\?\"; \} \| base64 -w0; printf ':(?P=token)\\n'\n"
)
_HEREDOC = re.compile(r"\s*<<\s*'?(?P<word>[A-Za-z_][A-Za-z0-9_]*)'?\s*$")


def framed_reads(line: str) -> list[tuple[str, int, str]] | None:
    """The (token, place, command) of each framed read when `line` is read_each's script, else None."""
    found: list[tuple[str, int, str]] = []
    at = 0
    while at < len(line):
        m = _FRAME.match(line, at)
        if m is None or int(m["i"]) != len(found) or (found and m["token"] != found[0][0]):
            return None
        found.append((m["token"], int(m["i"]), m["command"]))
        at = m.end()
    return found or None


async def run(line: str, stdin: str | None, runner: Runner, write: Writer) -> Result:
    """A command line as the switch's login shell runs it (for the shapes above, and shell.run_line's)."""
    reads = framed_reads(line)
    if reads is not None:
        return await _framed(reads, runner, write)
    if line.strip() == "sh -s":
        return await _script(stdin or "", runner, write)
    return await run_line(line, stdin, runner, write)


async def _framed(reads: list[tuple[str, int, str]], runner: Runner, write: Writer) -> Result:
    out = []
    for token, i, command in reads:
        result = await run_line(command, None, runner, write)  # stdin /dev/null, stderr dropped
        body = base64.b64encode(f"{result.stdout}\n{result.rc}".encode()).decode()
        out.append(f"\n@gf-{token}-{i}:{body}:{token}\n")
    return Result(0, "".join(out))


async def _script(text: str, runner: Runner, write: Writer) -> Result:
    lines = text.split("\n")
    errexit = False
    out: list[str] = []
    err: list[str] = []
    last = Result()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line == ")":
            continue
        if line == "set -e":
            errexit = True
            continue
        if line.startswith("("):
            line = line[1:].strip()
        body: str | None = None
        heredoc = _HEREDOC.search(line)
        if heredoc is not None:
            line = line[: heredoc.start()]
            end = lines.index(heredoc["word"], i) if heredoc["word"] in lines[i:] else -1
            if end < 0:
                return Result(2, "".join(out), "".join(err) + f"sh: here-document ended before {heredoc['word']}\n")
            body = "".join(f"{ln}\n" for ln in lines[i:end])
            i = end + 1
        last = await run_line(line, body, runner, write)
        out.append(last.stdout)
        err.append(last.stderr)
        if errexit and last.rc != 0:
            break
    return Result(last.rc, "".join(out), "".join(err))
