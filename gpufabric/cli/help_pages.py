"""The site's command pages: one per command, made of click's own help for the command and each of its
subcommands, so the pages say exactly what `--help` says. (Here, not in gpufabric/docsite/: only the
command line imports click.)"""

from __future__ import annotations

from collections.abc import Iterator

import click

from gpufabric.docsite.pages import Generated

MARKER = "Generated from the command's own `--help` by `gpufabric docs commands`"
FOLDER = "commands"
# The help is laid out for this many columns whatever the terminal that runs the generator: what
# `--help` prints on an 80-column terminal (or with no terminal), and what fits the site's page width.
WIDTH = 80


def _context(command: click.Command, name: str, parent: click.Context | None) -> click.Context:
    # The command's own context settings (the root's help option names, say), as click applies them.
    settings = {**command.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    return click.Context(command, info_name=name, parent=parent, **settings)


def _subcommands(ctx: click.Context) -> Iterator[click.Context]:
    """The visible subcommands of the command in `ctx`, each in a context of its own, in help order."""
    group = ctx.command
    if not isinstance(group, click.Group):
        return
    for name in group.list_commands(ctx):
        sub = group.get_command(ctx, name)
        if sub is not None and not sub.hidden:
            yield _context(sub, name, ctx)


def _walk(ctx: click.Context) -> Iterator[click.Context]:
    yield ctx
    for sub in _subcommands(ctx):
        yield from _walk(sub)


def _slug(path: str) -> str:
    """The anchor the site's table of contents gives a heading of plain words."""
    return path.lower().replace(" ", "-")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _page(ctx: click.Context, alias: str) -> str:
    name = ctx.info_name
    contexts = list(_walk(ctx))
    lines = [
        f"# {ctx.command_path}",
        "",
        f"{MARKER}; do not edit by hand. `{alias} {name}` is the same command.",
        "",
        ctx.command.get_short_help_str(limit=200),
        "",
    ]
    if len(contexts) > 1:
        lines += [f"- [{c.command_path}](#{_slug(c.command_path)})" for c in contexts[1:]] + [""]
    for sub in contexts:
        lines += [f"## {sub.command_path}", "", "```text", sub.command.get_help(sub).rstrip(), "```", ""]
    return "\n".join(lines)


def generate(root: click.Command, prog: str = "gpufabric", alias: str = "nornir") -> Generated:
    """Pages for every visible command under `root` (the program's click group), named `prog` in them."""
    top = _context(root, prog, None)
    pages: dict[str, str] = {}
    nav = [("Overview", "index.md")]
    subs = list(_subcommands(top))
    for sub in subs:
        pages[f"{sub.info_name}.md"] = _page(sub, alias)
        nav.append((sub.command_path, f"{sub.info_name}.md"))
    pages = {"index.md": _index(top, subs, alias)} | pages
    return Generated(MARKER, "gpufabric docs commands", pages, nav)


def _index(top: click.Context, subs: list[click.Context], alias: str) -> str:
    lines = [
        "# Command reference",
        "",
        f"{MARKER}; do not edit by hand.",
        "",
        f"`{top.info_name}` and `{alias}` are the same program. What each command is for, its exit codes and",
        "how a wrong intent is reported: [Commands](../commands.md).",
        "",
        "| command | what it does |",
        "| --- | --- |",
        *(f"| [{c.command_path}]({c.info_name}.md) | {_cell(c.command.get_short_help_str(limit=200))} |" for c in subs),
        "",
        "## " + top.command_path,
        "",
        "```text",
        top.command.get_help(top).rstrip(),
        "```",
        "",
    ]
    return "\n".join(lines)
