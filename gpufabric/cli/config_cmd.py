"""`gpufabric config show`: every option's value as a command would get it, and where it came from."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from gpufabric.cli import settings
from gpufabric.cli.errors import EXIT_INPUT, EXIT_OK
from gpufabric.cli.output import write_stdout
from gpufabric.errors import printable
from gpufabric.outputs import json_dumps

NOT_SHOWN = "(a secret: not shown)"


@click.group("config")
def config_cmd() -> None:
    """The settings: a default for every option of every command, from ./gpufabric.toml (or
    pyproject.toml's [tool.gpufabric]) and GPUFABRIC_<COMMAND>_<OPTION> variables (docs/settings.md).

    The command line wins over the environment, the environment over the file, the file over the
    built-in default.
    """


@config_cmd.command("show", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--json", "as_json", is_flag=True, help="Print the values and their sources as JSON.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[COMMAND]... [ARGS]...")
@click.pass_context
def show_cmd(ctx: click.Context, as_json: bool, command: tuple[str, ...]) -> int:
    """Print every option's value per command, as the command would get it, and where it came from: the
    command line, an environment variable (named), the settings file (file:line) or the built-in
    default. COMMAND (`push`, `lab up`) shows that command only (a group: its commands too); ARGS after
    it are read as its command line, as the command reads them (`config show push --timeout 30`). The
    text is TOML a settings file can take (the sources are comments); a secret's value is never shown.

    Exit codes: 0 shown; 2 the settings file is wrong (located), a variable holds a secret, or a value
    from the command line or a variable is not valid for its option (marked in the listing).
    """
    top, rest = _reach(ctx.find_root(), list(command))
    contexts = list(settings.walk(top)) if not rest else [top]
    sections = [s for s in map(_section, contexts) if s["options"]]
    table = ctx.find_root().default_map
    file = table.origin.file if isinstance(table, settings.Table) else None
    if as_json:
        write_stdout(json_dumps({"settings_file": file, "commands": sections}, indent=2) + "\n")
    else:
        write_stdout(_text(file, sections))
    invalid = any(o.get("invalid") for s in sections for o in s["options"])
    return EXIT_INPUT if invalid else EXIT_OK


def _reach(ctx: click.Context, words: list[str]) -> tuple[click.Context, list[str]]:
    """The context of the command the leading words name (made as running it would make it, settings
    checked), and the words after them, parsed as that command's own command line."""
    while words and isinstance(ctx.command, click.Group) and not words[0].startswith("-"):
        name, words = words[0], words[1:]
        sub = ctx.command.get_command(ctx, name)
        if sub is None:
            raise click.UsageError(f"no such command: {ctx.command_path} {name}", ctx)
        descend = bool(words) and isinstance(sub, click.Group) and not words[0].startswith("-")
        if descend or not words:
            ctx = sub.make_context(name, [], parent=ctx, resilient_parsing=True)
            continue
        try:  # the words as the command reads them: an unknown option or a refused value exits 2
            return sub.make_context(name, list(words), parent=ctx), words
        except click.MissingParameter:  # a required option nothing gives is shown as not set
            return sub.make_context(name, list(words), parent=ctx, resilient_parsing=True), words
    return ctx, words


def _table(ctx: click.Context) -> str:
    names: list[str] = []
    while ctx.parent is not None:
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    return ".".join(names)


def _plain(value: Any) -> Any:
    """A value as JSON and TOML can say it."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, Path):
        return str(value)
    return settings.masked(str(value))


def _option(ctx: click.Context, param: click.Option) -> dict[str, Any]:
    kind, detail = settings.where(ctx, param)
    value = ctx.params.get(param.name or "")
    row: dict[str, Any] = {
        "key": param.name,
        "option": param.opts[0],
        "value": _plain(value),
        "source": kind,
        "from": detail,
        "env": settings.env_names(param, ctx),
    }
    if settings.is_secret(param) and value is not None:
        row["value"], row["secret"] = None, True
    if value is None and kind in ("env", "command line"):  # a value click could not take (resilient parsing)
        row["invalid"] = _why(ctx, param) if kind == "env" else "not a valid value: run the command to see why"
    return row


def _why(ctx: click.Context, param: click.Option) -> str:
    try:
        param.process_value(ctx, param.value_from_envvar(ctx))
    except click.BadParameter as exc:
        return exc.message
    return "not a valid value"


def _section(ctx: click.Context) -> dict[str, Any]:
    options = settings.settable(ctx.command).values()
    return {"command": ctx.command_path, "table": _table(ctx), "options": [_option(ctx, p) for p in options]}


def _lines(section: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for row in section["options"]:
        said = row["source"] + (f" {row['from']}" if row["from"] else "")
        comment = f"{row['option']}: {said}"
        if row.get("secret"):
            yield f"# {row['key']} = {NOT_SHOWN}", comment
        elif row.get("invalid"):
            yield f"# {row['key']}: {row['invalid']}", comment
        elif row["value"] is None:
            yield f"# {row['key']}: not set", comment
        else:
            yield f"{row['key']} = {_toml(row['value'])}", comment


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json_dumps(value)  # a TOML basic string: JSON's escapes (ASCII only, DEL and controls escaped) are TOML's


def _text(file: str | None, sections: list[dict[str, Any]]) -> str:
    out = [f"# settings file: {file or 'none'} (the command line wins, then the environment, the file, the default)"]
    for section in sections:
        out.append("")
        table = section["table"]
        out.append(f"[{table}]  # {section['command']}" if table else f"# {section['command']} (top level)")
        rows = list(_lines(section))
        width = max(len(left) for left, _ in rows)
        out += [f"{left.ljust(width)}  # {comment}" for left, comment in rows]
    return printable_lines("\n".join(out) + "\n")


def printable_lines(text: str) -> str:
    """Every line of `text` with its control characters escaped (a value from a file or a variable must
    not repaint the terminal)."""
    return "\n".join(printable(line) for line in text.split("\n"))
