"""gpufabric's own reader of an OpenSSH client config (`--ssh-config`, else `~/.ssh/config`), for the few
keywords the jump hosts need: `Host`, `Match`, `Include`, `HostName`, `User`, `Port`, `IdentityFile`,
`UserKnownHostsFile`, `ProxyJump`. Every other keyword is read past (it is ssh's business, not ours).

Why not paramiko's `SSHConfig`: its `lookup()` runs a `Match exec` line's command through a shell
(with `invoke`) on the controller, which holds the switches' password, the vault password and the
source of truth's token; the config, `~/.ssh/config` included, is read by default. Here nothing in a
config is ever run. A config holding a line that would run something when ssh reads it (`Match exec`,
`ProxyCommand`, `LocalCommand`, `KnownHostsCommand`, a `PKCS11Provider` or `SecurityKeyProvider`
library) is refused whole, naming its file and line, whatever host the line is for: gpufabric cannot
tell what ssh would have run, and will not guess which lines it may skip.

The syntax is ssh_config(5)'s (OpenSSH 9.x): one keyword a line, its arguments after blanks or one
`=`, double quotes around an argument with blanks, `#` comments; keywords in any case; the first value
found for a keyword wins (IdentityFile adds up). `Host` patterns take `*`, `?` and `!` (a negated
pattern that matches excludes the block). `Match` takes `all`, `host` (the name a HostName found so far
gives), `originalhost` (the name looked up), `user` and `localuser` (other criteria are refused at
their line: gpufabric cannot evaluate them as ssh would).
`Include` reads further files (globs; a relative name is under ~/.ssh), nested at most 4 deep, each
file read with the same bounds: a regular file (never a FIFO or device), 1 MiB, 4 KiB a line, UTF-8.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import pwd
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gpufabric.errors import Problem
from gpufabric.inputs import InputError, read_lines

MAX_BYTES = 1 << 20  # bytes of one config file
MAX_LINE = 4096  # bytes of one line
MAX_LINES = 20_000  # lines over every file of one config, includes too
MAX_DEPTH = 4  # Include nested in Include
MAX_FILES = 64  # files one config reads, includes too
WHAT = "an SSH client config file"

# The keywords whose value ssh runs, or loads as code, on the machine that reads the config
# (ssh_config(5): ProxyCommand, LocalCommand, KnownHostsCommand run a command through the user's
# shell; PKCS11Provider and SecurityKeyProvider load a shared library). `none` disables each.
RUNS = {
    k.lower(): k for k in ("ProxyCommand", "LocalCommand", "KnownHostsCommand", "PKCS11Provider", "SecurityKeyProvider")
}
READ = frozenset({"hostname", "user", "port", "identityfile", "userknownhostsfile", "proxyjump"})
MATCH_READ = frozenset({"host", "originalhost", "user", "localuser"})


class SshConfigError(InputError):
    """An SSH client config gpufabric will not use: a line that would run a command, a criterion it
    cannot evaluate, a line it cannot read. Located (file, line); nothing was logged in to."""


def _refuse(file: str | Path, line: int, keyword: str, message: str, hint: str) -> SshConfigError:
    return SshConfigError(str(file), [Problem((keyword,), message, hint)], {(keyword,): line})


@dataclass(frozen=True)
class Setting:
    keyword: str  # lower case
    args: tuple[str, ...]
    file: str
    line: int


@dataclass(frozen=True)
class Condition:
    """One `Host` line or one `Match` criterion (ANDed with the others of its block)."""

    kind: str  # "host", "originalhost", "user", "localuser", "all"
    patterns: tuple[str, ...] = ()


@dataclass
class Block:
    """Lines that apply when every condition holds (an Include inside a block keeps its conditions)."""

    conditions: tuple[Condition, ...]
    settings: list[Setting] = field(default_factory=list)


def _match_list(value: str, patterns: tuple[str, ...]) -> bool:
    """ssh's pattern list: some pattern matches, and no negated one does."""
    hit = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        if fnmatch.fnmatchcase(value.lower(), pattern.removeprefix("!").lower()):
            if negated:
                return False
            hit = True
    return hit


def _split(text: str, file: str | Path, number: int) -> tuple[str, tuple[str, ...]] | None:
    """(keyword in lower case, arguments) of one line, or None for a blank line or a comment."""
    stripped = text.strip()
    if not stripped or stripped.startswith("#"):
        return None
    keyword, _, rest = stripped.replace("\t", " ").partition(" ")
    if "=" in keyword:  # `Keyword=value`
        keyword, _, more = keyword.partition("=")
        rest = f"{more} {rest}"
    rest = rest.strip().removeprefix("=").strip()
    try:
        words = shlex.split(rest, comments=True, posix=True) if rest else []
    except ValueError as exc:
        raise _refuse(file, number, keyword, f"cannot be read ({exc})", "close the quotes on this line") from None
    if not keyword.isascii() or not keyword.isalnum():
        raise _refuse(file, number, keyword[:40], "is not an ssh_config keyword", "fix or remove this line")
    return keyword.lower(), tuple(words)


@dataclass
class _Reader:
    lines: int = 0
    files: int = 0
    blocks: list[Block] = field(default_factory=list)

    def read(self, path: Path, base: tuple[Condition, ...], depth: int) -> None:
        self.files += 1
        if self.files > MAX_FILES:
            raise _refuse(path, 0, "Include", f"more than {MAX_FILES} files included", "include fewer files")
        block = Block(base)
        self.blocks.append(block)
        for number, text in read_lines(path, what=WHAT, max_line=MAX_LINE, max_bytes=MAX_BYTES):
            self.lines += 1
            if self.lines > MAX_LINES:
                raise _refuse(path, number, "(file)", f"more than {MAX_LINES} lines in all", "name a smaller config")
            parsed = _split(text, path, number)
            if parsed is None:
                continue
            keyword, args = parsed
            if keyword in RUNS and [a.lower() for a in args] != ["none"]:
                raise _runs(path, number, RUNS[keyword])
            if keyword == "host":
                block = Block((*base, Condition("host", args or ("",))))
                self.blocks.append(block)
            elif keyword == "match":
                block = Block((*base, *_criteria(args, path, number)))
                self.blocks.append(block)
            elif keyword == "include":
                if depth >= MAX_DEPTH:
                    raise _refuse(path, number, "Include", f"Include nested deeper than {MAX_DEPTH}", "nest less")
                for name in args:
                    for found in _expand(name, path, number):
                        self.read(found, block.conditions, depth + 1)
                block = Block(block.conditions)  # what follows the Include is in the same block again
                self.blocks.append(block)
            elif keyword in READ:
                if not args:
                    raise _refuse(path, number, keyword, "has no value", "give it one or remove the line")
                block.settings.append(Setting(keyword, args, str(path), number))


def _runs(path: Path, number: int, keyword: str) -> SshConfigError:
    return _refuse(
        path,
        number,
        keyword,
        f"{keyword} would run a command (or load code) on this machine; gpufabric never runs one, and refuses "
        "a config that holds one",
        "name the jump host with ProxyJump (or --jump-host); or give gpufabric a config of its own (--ssh-config "
        "FILE), or none (--ssh-config none)",
    )


def _criteria(args: tuple[str, ...], path: Path, number: int) -> list[Condition]:
    """A Match line's criteria, each `all` or a criterion with its pattern list; any other is refused."""
    out: list[Condition] = []
    words = list(args)
    while words:
        word = words.pop(0).lower()
        negated = word.startswith("!")
        kind = word.removeprefix("!")
        if kind == "exec":
            raise _refuse(
                path, number, "Match",
                "Match exec would run a command on this machine; gpufabric never runs one, and refuses a config "
                "that holds one",
                "remove the Match exec block, or give gpufabric a config of its own with --ssh-config",
            )  # fmt: skip
        if kind == "all" and not negated:
            out.append(Condition("all"))
            continue
        if negated or kind not in MATCH_READ or not words:
            raise _refuse(
                path, number, "Match",
                f"Match {word} cannot be evaluated by gpufabric (it reads Match all, host, originalhost, user, "
                "localuser)",
                "write the block as a Host block, or give gpufabric a config of its own with --ssh-config",
            )  # fmt: skip
        out.append(Condition(kind, tuple(words.pop(0).split(","))))
    if not out:
        raise _refuse(path, number, "Match", "has no criteria", "give it one (Match host PATTERN) or remove it")
    return out


def _expand(name: str, path: Path, number: int) -> Iterator[Path]:
    """The files an Include names: ~ expanded, a relative name under ~/.ssh (as ssh reads the user's
    config), globs in sorted order; a name that matches nothing is skipped, as ssh does."""
    if any(c in name for c in "\0\n") or "%" in name or "$" in name:
        raise _refuse(path, number, "Include", f"{name[:80]!r} is not a file name gpufabric reads", "name a file")
    full = os.path.expanduser(name)
    if not os.path.isabs(full):
        full = str(Path.home() / ".ssh" / full)
    yield from (Path(p) for p in sorted(glob.glob(full)))


@dataclass(frozen=True)
class Found:
    """What the config says of one host: each keyword's first value (IdentityFile: every one), with the
    file and line it came from."""

    values: dict[str, Setting]
    identity_files: tuple[Setting, ...] = ()

    def get(self, keyword: str) -> Setting | None:
        return self.values.get(keyword)


@dataclass(frozen=True)
class SshConfig:
    path: Path
    blocks: tuple[Block, ...]

    def lookup(self, host: str) -> Found:
        """ssh's lookup of `host`: every block whose conditions hold, in file order; first value wins."""
        values: dict[str, Setting] = {}
        identity: list[Setting] = []
        local_user = local_user_name()
        for block in self.blocks:
            if not all(self._holds(c, host, values, local_user) for c in block.conditions):
                continue
            for s in block.settings:
                if s.keyword == "identityfile":
                    identity.append(s)
                else:
                    values.setdefault(s.keyword, s)
        return Found(values, tuple(identity))

    @staticmethod
    def _holds(condition: Condition, host: str, values: dict[str, Setting], local_user: str) -> bool:
        if condition.kind == "all":
            return True
        if condition.kind == "originalhost":
            return _match_list(host, condition.patterns)
        if condition.kind == "host":  # ssh_config(5): the name after a HostName found so far replaced it
            name = values["hostname"].args[0].replace("%h", host) if "hostname" in values else host
            return _match_list(name, condition.patterns)
        if condition.kind == "user":  # the remote user as known so far, as ssh and paramiko evaluate it
            user = values["user"].args[0] if "user" in values else local_user
            return _match_list(user, condition.patterns)
        return _match_list(local_user, condition.patterns)  # localuser


def local_user_name() -> str:
    """This account's name as ssh takes it: from the password database, not from $USER or $LOGNAME."""
    return pwd.getpwuid(os.getuid()).pw_name


def read_ssh_config(path: Path) -> SshConfig:
    """The config at `path` and every file it includes, read within the bounds; a line that would run
    something, anywhere in them, refuses the whole config (SshConfigError, located)."""
    reader = _Reader()
    reader.read(path, (), 0)
    return SshConfig(path, tuple(reader.blocks))
