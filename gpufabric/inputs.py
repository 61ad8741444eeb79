"""The one way gpufabric reads input it did not write in this run: intents, design files, discovered
fabrics, tools' outputs, switch snapshots, the audit trail, git blobs.

Every such input is hostile until read: a path may name a FIFO (a read blocks forever), /dev/zero
(memory fills), a link planted where a file was expected, a file of gigabytes, or bytes that are not
UTF-8. Each reader here checks the kind of what it opens, after opening it (the name may have been
swapped since a check), never blocks on the open, reads at most a bound, and turns every failure
into a located `InputError` (file, what is wrong, what would be right) that the command line shows
and exits 2 on. Structured text is parsed with bounds too: YAML by YAML 1.2's core schema with the
intent's depth and alias limits, JSON without NaN or Infinity and without unbounded nesting.

`tests/intent/test_input_readers.py` lists every place in the package that opens a file, and fails on one
that does not come through here (or is not on its short list of reads that are not outside input).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import accumulate
from pathlib import Path
from typing import IO, Any

from gpufabric.errors import IntentError, Problem
from gpufabric.errors import Path as FieldPath

__all__ = [
    "InputError",
    "MiB",
    "decode_text",
    "git_blob",
    "json_text",
    "open_input",
    "read_bytes",
    "read_json",
    "read_lines",
    "read_stream",
    "read_text",
    "read_yaml",
    "yaml_text",
]

MiB = 1 << 20
GIT_TIMEOUT = 60.0  # seconds for one git command; a repository on a hung mount must not hang a CI gate
JSON_MAX_DEPTH = 200  # well above any file gpufabric reads; Python's own parser recurses per level


class InputError(IntentError):
    """Input that cannot be read as what it should be. Located like an intent's problems (file,
    line, field), so the command line prints it the same way and exits 2."""

    OUTCOME = "nothing was written"


def _error(file: str | Path, message: str, hint: str = "", line: int | None = None) -> InputError:
    return InputError(str(file), [Problem((), message, hint)], {(): line} if line else {})


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a device"


@contextmanager
def open_input(path: str | Path, *, what: str, follow_links: bool = True) -> Iterator[IO[bytes]]:
    """`path` opened for reading, as a regular file and nothing else. Without `follow_links` a link in
    the last component is refused (a planted link must not redirect a read of a file gpufabric owns).
    The open never blocks (O_NONBLOCK: a FIFO would), and the kind is checked on what was opened."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_links else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise _error(path, f"no such file (expected {what})", "name an existing file") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise _error(
                path, f"is a symbolic link; {what} is read only from a regular file", "remove the link"
            ) from None
        raise _error(path, f"cannot be read: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _error(
                path,
                f"is {_kind(mode)}, not a regular file (expected {what})",
                "name the file itself (write what you have to a file first)",
            )
        os.set_blocking(fd, True)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield fh


def _read_at_most(fh: IO[bytes], limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size < limit:
        chunk = fh.read(min(MiB, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _size(n: int) -> str:
    """MiB when that is exact, else bytes: a blob one byte over 4 MiB must not read as "4 MiB"."""
    return f"{n // MiB} MiB" if n >= MiB and n % MiB == 0 else f"{n:,} bytes"


def read_bytes(path: str | Path, *, what: str, max_bytes: int, follow_links: bool = True) -> bytes:
    """The bytes of `path`, a regular file of at most `max_bytes` (refused, not cut, when larger)."""
    with open_input(path, what=what, follow_links=follow_links) as fh:
        return _bounded_read(fh, path, f"is larger than {_size(max_bytes)}, more than {what} can be", max_bytes)


def _bounded_read(fh: IO[bytes], name: str | Path, too_large: str, max_bytes: int) -> bytes:
    """At most `max_bytes` of `fh`; more is refused (never cut), as `too_large` says."""
    try:
        raw = _read_at_most(fh, max_bytes + 1)
    except OSError as exc:
        raise _error(name, f"cannot be read: {exc.strerror}") from None
    if len(raw) > max_bytes:
        raise _error(name, too_large, "name the right input")
    return raw


def decode_text(raw: bytes, file: str | Path, what: str, first_line: int = 1) -> str:
    """UTF-8 text, or a located error naming the first byte that is not (Latin-1 and UTF-16 files
    included: the fix is to save the file as UTF-8, never to guess its encoding). `first_line`: the
    line `raw` starts at, when it is a part of a file."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + first_line
        hint = "save it as UTF-8" + (" (it looks like UTF-16)" if raw[:2] in {b"\xff\xfe", b"\xfe\xff"} else "")
        raise _error(file, f"{what} is not UTF-8 text (byte {exc.start})", hint, line) from None


def read_text(path: str | Path, *, what: str, max_bytes: int, follow_links: bool = True) -> str:
    """read_bytes, decoded as UTF-8."""
    return decode_text(read_bytes(path, what=what, max_bytes=max_bytes, follow_links=follow_links), path, what)


def read_stream(stream: IO[bytes], *, name: str, what: str, max_bytes: int) -> str:
    """What an already open stream (standard input) holds, read as read_text reads a file: at most
    `max_bytes` (refused, not cut, when more arrives), decoded as UTF-8. A stream has no kind to check:
    its end is what the writer says it is."""
    raw = _bounded_read(stream, name, f"holds more than {_size(max_bytes)}, more than {what} can be", max_bytes)
    return decode_text(raw, name, what)


def read_lines(
    path: str | Path, *, what: str, max_line: int, max_bytes: int, follow_links: bool = True
) -> Iterator[tuple[int, str]]:
    """(line number, its text without the newline) for each line of `path`, a regular file read one
    line at a time, for files too large to hold whole (a log that grows with every run). A line longer
    than `max_line` bytes, a file longer than `max_bytes` and a line that is not UTF-8 are refused at
    their line; nothing past a bound is read."""
    with open_input(path, what=what, follow_links=follow_links) as fh:
        total = 0
        number = 0
        while True:
            number += 1
            try:
                raw = fh.readline(max_line + 1)
            except OSError as exc:
                raise _error(path, f"cannot be read: {exc.strerror}", line=number) from None
            if not raw:
                return
            total += len(raw)
            if len(raw) > max_line and not raw.endswith(b"\n"):  # readline stopped at the bound, not a newline
                message = f"line {number} is longer than {_size(max_line)}, more than {what} has"
                raise _error(path, message, "name the right file", number)
            if total > max_bytes:
                raise _error(path, f"is larger than {_size(max_bytes)}, more than {what} can be", "", number)
            yield number, decode_text(raw, path, what, number).removesuffix("\n").removesuffix("\r")


def yaml_text(text: str, file: str) -> tuple[Any, dict[FieldPath, int]]:
    """YAML by the intent's rules: YAML 1.2's core schema (`0101` is no octal, `"false"` no boolean,
    `yes` is text), only the core tags, duplicate keys refused, depth and aliases bounded. The data and
    a map from each field's path to its line."""
    from gpufabric.yaml_lines import load_yaml  # PyYAML is not needed by every reader: loaded when used

    return load_yaml(text, file, core_schema=True)


def read_yaml(
    path: str | Path, *, what: str, max_bytes: int = 4 * MiB, follow_links: bool = True
) -> tuple[Any, dict[FieldPath, int]]:
    return yaml_text(read_text(path, what=what, max_bytes=max_bytes, follow_links=follow_links), str(path))


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")


def _json_depth(text: str) -> int:
    """The deepest nesting of brackets in `text`: a cheap bound before the recursive parse (brackets
    inside strings only overcount). Done on the bytes, the brackets kept by a C loop: a switch's routing
    table is tens of megabytes, and a loop over its characters cost three times the parse itself."""
    brackets = text.encode("utf-8", "surrogatepass").translate(None, _NOT_BRACKETS)
    steps = brackets.replace(b"{", b"[").replace(b"}", b"]")
    return max(accumulate(1 if c == 0x5B else -1 for c in steps), default=0)


def json_text(text: str, file: str | Path, what: str) -> Any:
    """JSON as RFC 8259 has it: NaN and Infinity refused (Python's reader takes them), and nesting
    bounded (its reader recurses once per level)."""
    if _json_depth(text) > JSON_MAX_DEPTH:
        raise _error(file, f"{what} nests deeper than {JSON_MAX_DEPTH} levels", "name the right file")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise _error(
            file, f"{what} is not valid JSON: {exc.msg}", "fix the JSON at the line shown", exc.lineno
        ) from None
    except (ValueError, RecursionError) as exc:
        raise _error(file, f"{what} is not valid JSON: {exc}") from None


def read_json(path: str | Path, *, what: str, max_bytes: int, follow_links: bool = True) -> Any:
    return json_text(read_text(path, what=what, max_bytes=max_bytes, follow_links=follow_links), path, what)


# A revision as git's rev-parse takes one, without option-like or path-like starts: never `-x`.
_REV = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/~^@{}-]{0,99}")


def git_blob(rev: str, path: str, *, what: str, max_bytes: int, cwd: str | Path | None = None) -> str:
    """The text of PATH at REV, from git's object store only (never a working-tree file of that
    name): its type and size are asked first, so a blob larger than `max_bytes` is never read, and
    it is decoded as read_text decodes."""
    spec = f"{rev}:{path}"
    if not _REV.fullmatch(rev) or "\0" in path or "\n" in path or not path:
        raise _error(spec, "is not of the form REV:PATH", "name a revision and a path, e.g. HEAD:inventory/fabric.yml")
    kind = _git(["cat-file", "-t", spec], spec, cwd).strip()
    if kind != "blob":
        raise _error(spec, f"is a git {kind}, not a file", "name a file at that revision")
    size = int(_git(["cat-file", "-s", spec], spec, cwd).strip() or "0")
    if size > max_bytes:
        raise _error(
            spec, f"is {_size(size)} in git, more than {what} can be ({_size(max_bytes)})", "name the right file"
        )
    raw = _git_bytes(["cat-file", "blob", spec], spec, cwd, max_bytes)
    return decode_text(raw, spec, what)


def _git(args: list[str], spec: str, cwd: str | Path | None) -> str:
    return _git_bytes(args, spec, cwd, 64 * 1024).decode("ascii", "replace")


def _git_bytes(args: list[str], spec: str, cwd: str | Path | None, limit: int) -> bytes:
    try:
        done = subprocess.run(["git", *args], capture_output=True, check=False, timeout=GIT_TIMEOUT, cwd=cwd)
    except FileNotFoundError:
        raise _error(spec, "cannot be read from git: git is not installed", "install git, or name a file") from None
    except subprocess.TimeoutExpired:
        raise _error(spec, f"git did not answer within {GIT_TIMEOUT:g} s") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines() or ["git failed"]
        raise _error(spec, f"cannot be read from git: {said[-1][:300]}", "name a revision and a path git knows")
    if len(done.stdout) > limit:
        raise _error(spec, f"git answered more than {_size(limit)}")
    return done.stdout
