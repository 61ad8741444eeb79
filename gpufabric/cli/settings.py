"""Settings: a default for every option of every command, from a file and from the environment.

`gpufabric.toml` in the working folder (or a `[tool.gpufabric]` table in its pyproject.toml) holds one
table per command, nested as the commands are (`[push]`, `[lab.up]`, `[telemetry.alertmanager]`), and
the top-level options at its top; its keys are the options' names (`known_hosts`, `as_json` for
`--json`). `GPUFABRIC_<COMMAND>_<OPTION>` environment variables (`GPUFABRIC_PUSH_KNOWN_HOSTS`,
`GPUFABRIC_LAB_UP_STATE_DIR`) give the same defaults. They reach click as its `default_map` and
`auto_envvar_prefix`, so click's own order holds: the command line, then the environment, then the
file, then the option's built-in default. The variables an option already named (`GPUFABRIC_AUDIT_LOG`,
`GPUFABRIC_SOT_URL`, `GPUFABRIC_LOG_LEVEL`) keep working and are read before the generic name.

Commands are imported lazily, so the file is checked a table at a time: the root's when the program
starts (its keys are the top-level options and the command names, known without importing them), a
command's when its context is made, before any of its options is parsed (every command the root or a
group resolves gets this module's context class). A wrong key, a value of the wrong kind and a value
the option's type refuses are located errors (file, line, key, what would be right), exit 2.

Secrets are only referenced: an option whose name says it carries a secret value (a password, a
token) and any URL with a password in it are refused in the file and in the environment; the options
that name a variable or a file holding a secret (`--token-env`, `--vault-password-file`) are references
and welcome. `gpufabric config show` never prints such a value.

tomllib gives no line numbers: `key_lines` scans the text for table headers and `key =` lines (with
multi-line strings skipped), which places every key a settings file has; a key it cannot place (inside
an inline table) is reported at its table's line.
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from gpufabric.errors import GpufabricError, Problem
from gpufabric.errors import Path as FieldPath

if TYPE_CHECKING:
    from gpufabric.inputs import InputError

PREFIX = "GPUFABRIC"  # the environment variables' prefix: GPUFABRIC_PUSH_KNOWN_HOSTS
FILE_NAME = "gpufabric.toml"
PYPROJECT = "pyproject.toml"
PYPROJECT_TABLE = ("tool", "gpufabric")
MAX_BYTES = 1 << 20  # a settings file is a few hundred lines; more is not one

Key = FieldPath  # a key's place in the TOML document: ("push", "known_hosts")


class SettingsError(GpufabricError):
    """A setting in the environment that cannot be used (a secret's value): exit 2, naming the variable."""


@dataclass(frozen=True)
class Origin:
    """The file the settings came from, and the line of each key in it."""

    file: str
    lines: dict[Key, int]

    def where(self, key: Key) -> str:
        line = self.line_of(key)
        return f"{self.file}:{line}" if line else self.file

    def line_of(self, key: Key) -> int | None:
        for cut in range(len(key), -1, -1):
            line = self.lines.get(key[:cut])
            if line is not None:
                return line
        return None


class Table(dict[str, Any]):
    """One command's table of the settings file: the default_map click hands from a group's context to
    its subcommand's (`default_map.get(name)`), knowing where it stands in the file."""

    def __init__(self, data: dict[str, Any], origin: Origin, key: Key) -> None:
        super().__init__(
            (name, Table(value, origin, (*key, name)) if isinstance(value, dict) else value)
            for name, value in data.items()
        )
        self.origin = origin
        self.key = key


# --- reading the file ------------------------------------------------------------------------------

_BARE = r"[A-Za-z0-9_-]+"
_PART = rf"""(?:{_BARE}|"(?:[^"\\]|\\.)*"|'[^']*')"""
_DOTTED = rf"{_PART}(?:[ \t]*\.[ \t]*{_PART})*"


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """A table header, an assignment, a key's parts (compiled when a file is read, not at every start)."""
    return re.compile(rf"\[\[?[ \t]*({_DOTTED})[ \t]*\]"), re.compile(rf"({_DOTTED})[ \t]*="), re.compile(_PART)


def _unquote(part: str) -> str:
    if part.startswith('"'):
        import json

        try:
            return str(json.loads(part))  # TOML's basic strings escape as JSON's do (\uXXXX, \n, \")
        except ValueError:
            return part[1:-1]
    return part[1:-1] if part.startswith("'") else part


def _parts(dotted: str) -> Key:
    return tuple(_unquote(p) for p in _patterns()[2].findall(dotted))


def key_lines(text: str) -> dict[Key, int]:
    """The line of each table header and each `key = value` of a TOML text, by the key's full path.
    A scan, not a parser (the parser is tomllib, which has no line numbers): it reads headers and
    assignments at the start of a line, and skips the inside of multi-line strings, where a line that
    looks like `key = value` is text."""
    header_line, assignment, _ = _patterns()
    lines: dict[Key, int] = {}
    table: Key = ()
    open_string = ""
    for number, line in enumerate(text.splitlines(), 1):
        if open_string:
            if line.count(open_string) % 2 == 1:
                open_string = ""
            continue
        stripped = line.strip()
        header = header_line.match(stripped)
        if header:
            table = _parts(header.group(1))
            lines.setdefault(table, number)
            continue
        assign = assignment.match(stripped)
        if not assign:
            continue
        key = (*table, *_parts(assign.group(1)))
        for cut in range(len(table) + 1, len(key) + 1):
            lines.setdefault(key[:cut], number)
        rest = stripped[assign.end() :]
        for quotes in ('"""', "'''"):
            if rest.count(quotes) % 2 == 1:
                open_string = quotes
    return lines


def _input_error(file: str, problems: list[Problem], lines: dict[Key, int] | None = None) -> InputError:
    from gpufabric.inputs import InputError

    return InputError(file, problems, lines or {})


def _read(path: Path) -> tuple[str, int]:
    """The text of a settings file, read as every outside input is (gpufabric/inputs.py), and its mode."""
    from gpufabric.inputs import decode_text, open_input  # only where a settings file is there

    with open_input(path, what="a settings file") as fh:
        mode = os.fstat(fh.fileno()).st_mode
        raw = fh.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise _input_error(str(path), [Problem((), "is larger than 1 MiB, more than a settings file can be")])
    return decode_text(raw, path, "a settings file"), mode


def _owned(file: str, mode: int, origin: Origin, key: Key) -> None:
    """Refuse settings others may write: they choose known-hosts files, jump hosts and CAs."""
    if mode & stat.S_IWOTH:
        message = f"is writable by others (mode {stat.S_IMODE(mode):04o}): anyone could choose this account's "
        message += "known-hosts file, jump host or CA"
        raise _input_error(file, [Problem(key, message, f"chmod o-w {file}")], origin.lines)


def _parse(text: str, file: str) -> dict[str, Any]:
    import tomllib  # only where a settings file is there

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"at line (\d+)", str(exc))
        line = int(found.group(1)) if found else None
        message = f"is not valid TOML: {exc}"
        raise _input_error(
            file, [Problem((), message, "fix the TOML at the line shown")], {(): line} if line else {}
        ) from None
    except RecursionError:
        raise _input_error(file, [Problem((), "is not valid TOML: it nests too deep")]) from None


def load(folder: Path = Path()) -> Table | None:
    """The settings of the working folder: gpufabric.toml, else pyproject.toml's [tool.gpufabric]
    table, else none. Both at once is refused: which one holds would be a guess."""
    own, project = folder / FILE_NAME, folder / PYPROJECT
    settings: Table | None = None
    if os.path.lexists(own):
        text, mode = _read(own)
        origin = Origin(FILE_NAME, key_lines(text))
        settings = Table(_parse(text, FILE_NAME), origin, ())
        _owned(FILE_NAME, mode, origin, ())
    if not os.path.lexists(project):
        return settings
    text, mode = _read(project)
    if "gpufabric" not in text:  # no table of ours: the cheap test spares parsing every pyproject
        return settings
    tool = _parse(text, PYPROJECT).get("tool")
    table = tool.get("gpufabric") if isinstance(tool, dict) else None
    if table is None:
        return settings
    origin = Origin(PYPROJECT, key_lines(text))
    if settings is not None:
        message = f"settings are in {FILE_NAME} too; only one place may hold them"
        hint = f"keep them in one of the two (remove [tool.gpufabric] or {FILE_NAME})"
        raise _input_error(PYPROJECT, [Problem(PYPROJECT_TABLE, message, hint)], origin.lines)
    if not isinstance(table, dict):
        raise _input_error(
            PYPROJECT, [Problem(PYPROJECT_TABLE, "is not a table", "write [tool.gpufabric]")], origin.lines
        )
    _owned(PYPROJECT, mode, origin, PYPROJECT_TABLE)
    return Table(table, origin, PYPROJECT_TABLE)


# --- what may be set, and how ------------------------------------------------------------------------

_SECRET_WORD = re.compile(
    r"(?:^|_)(?:password|passwd|passphrase|secret|token|api_key|apikey|community|psk|private_key|credentials?)(?:_|$)"
)
_REFERENCE = re.compile(r"_(?:env|file|path|dir|var)$")  # names a variable or a file holding the secret
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:)([^/@\s]+)(@)")


def is_secret(param: click.Parameter) -> bool:
    """An option whose value is itself a secret (a password, a token), not a reference to one."""
    name = param.name or ""
    return bool(_SECRET_WORD.search(name)) and not _REFERENCE.search(name)


def has_url_password(value: object) -> bool:
    values = value if isinstance(value, list | tuple) else [value]
    return any(isinstance(v, str) and _URL_PASSWORD.search(v) for v in values)


def masked(text: str) -> str:
    """`text` with the password of every URL in it replaced: https://user:***@host."""
    return _URL_PASSWORD.sub(r"\1***\3", text)


def settable(command: click.Command) -> dict[str, click.Option]:
    """The options of `command` a file or a variable may give a default: every visible option with a
    value (not --help, --version, nor the hidden -v every subcommand takes after its name)."""
    return {
        p.name: p for p in command.params if isinstance(p, click.Option) and p.expose_value and not p.hidden and p.name
    }


def subcommands(command: click.Command, ctx: click.Context) -> list[str]:
    return command.list_commands(ctx) if isinstance(command, click.Group) else []


def env_names(param: click.Option, ctx: click.Context) -> list[str]:
    """The variables `param` is read from, in click's order: the ones it names, then the generic one."""
    named = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ())
    if param.allow_from_autoenv and ctx.auto_envvar_prefix:
        named.append(f"{ctx.auto_envvar_prefix}_{(param.name or '').upper()}")
    return named


def env_source(param: click.Option, ctx: click.Context) -> str | None:
    """The variable that gave `param` its value (the first of `env_names` that is set and not empty)."""
    return next((name for name in env_names(param, ctx) if os.environ.get(name)), None)


def _kind(param: click.Option) -> tuple[tuple[type, ...], str]:
    """The TOML values an option's single value may be, and how to say so."""
    kind = param.type
    if param.is_flag and not param.count:
        return (bool,), "true or false"
    if param.count or isinstance(kind, click.types.IntParamType):
        return (int,), f"a whole number: {param.name} = 3"
    if isinstance(kind, click.types.FloatParamType):
        return (int, float), f"a number: {param.name} = 1.5"
    if isinstance(kind, click.types.BoolParamType):
        return (bool,), "true or false"
    if isinstance(kind, click.types.StringParamType | click.Path | click.Choice | click.File):
        return (str,), f'a string in quotes: {param.name} = "..."'
    return (str, int, float), f'a value: {param.name} = "..."'  # a type of our own: its convert judges


def _toml_kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return f"a {type(value).__name__}"  # a date or a time


def _expand(param: click.Option, value: object) -> object:
    """A path from the file (or each of a list) with `~` at its start expanded, as a shell does on the
    command line."""
    if isinstance(value, list):
        return [_expand(param, v) for v in value]
    if isinstance(param.type, click.Path) and isinstance(value, str) and value.startswith("~"):
        return os.path.expanduser(value)
    return value


def _value_problem(param: click.Option, value: object, ctx: click.Context) -> tuple[str, str] | None:
    """What is wrong with `value` for `param` (message, hint), or None."""
    flag = param.opts[0] if param.opts else param.name
    if is_secret(param):
        return (
            f"{flag} carries a secret, which a settings file never holds",
            "give it on the command line, or keep it where the option's reference points (a variable, a vault)",
        )
    kinds, hint = _kind(param)
    many = param.multiple or param.nargs != 1
    if many and not isinstance(value, list):
        return f"is {_toml_kind(value)}; {flag} takes several values: a list", f"{param.name} = [...]"
    items = value if many and isinstance(value, list) else [value]
    for item in items:
        if not isinstance(item, kinds) or (isinstance(item, bool) and bool not in kinds):
            return f"is {_toml_kind(item)}; {flag} takes {hint.split(':')[0]}", hint
        if isinstance(item, float) and math.isnan(item):  # TOML has nan; no option means it (range checks pass it)
            return f"is nan, not a number; {flag} takes {hint.split(':')[0]}", hint
        if has_url_password(item):
            return (
                "is a URL with a password in it: a secret, which a settings file never holds",
                "write the URL without user:password@ (the command says how it takes credentials)",
            )
        try:
            param.type.convert(_expand(param, item), param, ctx)
        except click.BadParameter as exc:
            choices = getattr(param.type, "choices", None)
            said = f"one of: {', '.join(map(str, choices))}" if choices else f"what {flag} takes (see --help)"
            if isinstance(param.type, click.Path) and param.type.exists:
                said = "name a path that exists (a relative one is read from the working folder)"
            return exc.message, said
    return None


def _unknown_hint(name: str, command: click.Command, ctx: click.Context) -> str:
    options = settable(command)
    if name.replace("-", "_") in options:
        return f"write {name.replace('-', '_')} (the option's name, with underscores)"
    for option in options.values():
        if f"--{name.replace('_', '-')}" in option.opts:
            return f"the key of --{name.replace('_', '-')} is {option.name}"
    if any(p.name == name for p in command.params if isinstance(p, click.Argument)):
        return f"{name.upper()} is an argument: give it on the command line"
    if name == "verbose":
        return "set verbose at the top of the file (before any table)"
    commands = subcommands(command, ctx)
    import difflib

    close = difflib.get_close_matches(name, [*options, *commands], n=1)
    said = f"did you mean {close[0]}? " if close else ""
    said += f"its options: {', '.join(options) or 'none'}"
    return said + (f"; its commands (as tables): {', '.join(commands)}" if commands else "")


def table_problems(table: Table, command: click.Command, ctx: click.Context) -> list[Problem]:
    """Every problem of one command's table, before click reads it. Values are normalised in place
    (`~` in a path expanded), so click reads what was checked."""
    problems: list[Problem] = []
    options, commands = settable(command), subcommands(command, ctx)
    for name, value in list(table.items()):
        key = (*table.key, name)
        if name in commands:
            if not isinstance(value, Table):
                problems.append(
                    Problem(key, "is a command: its settings are a table", f"write [{'.'.join(map(str, key))}]")
                )
        elif name in options:
            wrong = _value_problem(options[name], value, ctx)
            if wrong:
                problems.append(Problem(key, *wrong))
            else:
                table[name] = _expand(options[name], value)
        else:
            what = "command" if isinstance(value, Table) else "option"
            problems.append(Problem(key, f"is no {what} of `{ctx.command_path}`", _unknown_hint(name, command, ctx)))
    return problems


def env_problems(command: click.Command, ctx: click.Context) -> list[str]:
    """The variables that would give one of `command`'s options a secret's value."""
    refused = []
    for param in settable(command).values():
        for name in env_names(param, ctx):
            value = os.environ.get(name)
            if not value:
                continue
            if is_secret(param):
                said = f"{name} would give {param.opts[0]} a secret's value; only references are read from the "
                refused.append(said + "environment: give it on the command line")
            elif has_url_password(value):
                refused.append(f"{name} holds a URL with a password in it (a secret): write it without user:password@")
    return refused


def check(ctx: click.Context) -> None:
    """Refuse the settings `ctx`'s command would read, before it parses anything."""
    table = ctx.default_map
    if isinstance(table, Table):
        problems = table_problems(table, ctx.command, ctx)
        if problems:
            raise _input_error(table.origin.file, problems, table.origin.lines)
    refused = env_problems(ctx.command, ctx)
    if refused:
        raise SettingsError("; ".join(refused))


class SettingsContext(click.Context):
    """A context that checks the settings of its command as it is made (before its options are parsed)."""

    def __init__(self, command: click.Command, *args: Any, **kwargs: Any) -> None:
        super().__init__(command, *args, **kwargs)
        if self.auto_envvar_prefix is not None or self.default_map is not None:
            check(self)


def adopt(command: click.Command) -> None:
    """Make `command`'s contexts check its settings (the root and every group call this on what they resolve)."""
    current = command.context_class
    if issubclass(current, SettingsContext):
        return
    command.context_class = (
        SettingsContext
        if current is click.Context
        else type(f"Settings{current.__name__}", (SettingsContext, current), {})
    )


def where(ctx: click.Context, param: click.Option) -> tuple[str, str]:
    """Where `param`'s value in `ctx` came from: ("command line" | "env" | "file" | "default", detail)."""
    source = ctx.get_parameter_source(param.name or "")
    if source is ParameterSource.COMMANDLINE:
        return "command line", ""
    if source is ParameterSource.ENVIRONMENT:
        return "env", env_source(param, ctx) or ""
    if source is ParameterSource.DEFAULT_MAP and isinstance(ctx.default_map, Table):
        table = ctx.default_map
        return "file", table.origin.where((*table.key, param.name or ""))
    return "default", ""


def locate(exc: click.ClickException) -> None:
    """Say in a refused value's message where the value came from, when not from the command line
    (click's message names only the option): the variable, or the file, line and key."""
    if not isinstance(exc, click.BadParameter) or exc.ctx is None or not isinstance(exc.param, click.Option):
        return
    kind, detail = where(exc.ctx, exc.param)
    if kind == "env":
        exc.message += f" (from the environment variable {detail})"  # type: ignore[misc]
    elif kind == "file" and isinstance(exc.ctx.default_map, Table):
        key = ".".join(map(str, (*exc.ctx.default_map.key, exc.param.name or "")))
        exc.message += f" (from {detail}, key {key})"  # type: ignore[misc]


def walk(ctx: click.Context) -> Iterator[click.Context]:
    """`ctx` and a context for every command under it, made as running them would make them (settings
    checked and read) but parsing nothing: for `config show`."""
    yield ctx
    for name in subcommands(ctx.command, ctx):
        sub = ctx.command.get_command(ctx, name)  # type: ignore[attr-defined]
        if sub is not None:
            yield from walk(sub.make_context(name, [], parent=ctx, resilient_parsing=True))
