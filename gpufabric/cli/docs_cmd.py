"""`gpufabric docs` (the intent reference, and the site's generated pages) and `gpufabric schema`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from gpufabric.cli import help_pages
from gpufabric.cli.errors import EXIT_FINDINGS
from gpufabric.cli.output import err, write_stdout
from gpufabric.docsite import examples, figures, pages, platforms
from gpufabric.docsite.pages import Generated, NavBlockError, stale_pages, with_nav_block, write_pages
from gpufabric.export import drawing
from gpufabric.files import write_atomic, write_if_changed
from gpufabric.intent import docs
from gpufabric.intent.model import Intent
from gpufabric.outputs import json_dumps


@click.group("docs", invoke_without_command=True)
@click.option("-o", "--output", type=click.Path(path_type=Path), help="Write here instead of stdout.")
@click.option("--check", is_flag=True, help="Exit 4 if the file at -o differs from the schema (for CI).")
@click.pass_context
def docs_cmd(ctx: click.Context, output: Path | None, check: bool) -> int:
    """Print the intent reference (docs/intent.md), generated from the schema.

    \b
    The documentation site's other generated pages:
      gpufabric docs platforms   one page per network OS, from the platform registry
      gpufabric docs commands    one page per command, from each command's --help
      gpufabric docs examples    one page per example intent, with each plane's drawing
      gpufabric docs figures     the front page's and the tutorial's drawings (docs/img/)
    """
    if ctx.invoked_subcommand is not None:
        if output is not None or check:
            sub = ctx.invoked_subcommand
            raise click.UsageError(f"give -o and --check after the subcommand: gpufabric docs {sub} ...")
        return 0
    text = docs.render()
    if output is None:
        write_stdout(text)
        return 0
    if check:
        current = pages.read_page(output) if output.exists() else ""
        if current != text:
            err.print(f"{output} is out of date: run `gpufabric docs -o {output}`")
            return EXIT_FINDINGS
        return 0
    write_atomic(output, text)
    err.print(f"wrote {output}")
    return 0


def _site_options(default_folder: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    def decorate(func: Callable[..., int]) -> Callable[..., int]:
        func = click.option(
            "--check", is_flag=True, help="Write nothing; exit 4 if a page or the nav block is out of date (for CI)."
        )(func)
        func = click.option(
            "--nav",
            "nav_file",
            type=click.Path(path_type=Path),
            default=Path("mkdocs.yml"),
            show_default=True,
            help="The site's configuration, whose generated nav block lists these pages.",
        )(func)
        return click.option(
            "-o",
            "--output",
            type=click.Path(file_okay=False, path_type=Path),
            default=Path("docs") / default_folder,
            show_default=True,
            help="The folder of the pages (under the site's docs folder).",
        )(func)

    return decorate


def _site_pages(name: str, generated: Generated, folder: Path, nav_file: Path, check: bool) -> int:
    """Write (or, with check, compare) the pages in `folder` and the nav block in `nav_file`."""
    config = pages.read_site_config(nav_file)
    try:
        wanted = with_nav_block(config, generated, folder.name, nav_file)
    except NavBlockError as exc:
        raise click.BadParameter(str(exc), param_hint="--nav") from exc
    if check:
        stale = [str(folder / page) for page in stale_pages(folder, generated)]
        stale += [str(nav_file)] if wanted != config else []
        if stale:
            err.print(f"out of date: {', '.join(stale)}: run `gpufabric docs {name} -o {folder} --nav {nav_file}`")
            return EXIT_FINDINGS
        return 0
    changed = [str(folder / page) for page in write_pages(folder, generated)]
    changed += [str(nav_file)] if write_if_changed(nav_file, wanted) else []
    done = f"updated {', '.join(changed)}" if changed else "all current"
    err.print(f"{len(generated.pages)} pages in {folder}; {done}")
    return 0


@docs_cmd.command("platforms")
@_site_options(platforms.FOLDER)
def platforms_cmd(output: Path, nav_file: Path, check: bool) -> int:
    """One page per network OS and an index table, from the platform registry."""
    return _site_pages("platforms", platforms.generate(), output, nav_file, check)


@docs_cmd.command("commands")
@_site_options(help_pages.FOLDER)
@click.pass_context
def commands_cmd(ctx: click.Context, output: Path, nav_file: Path, check: bool) -> int:
    """One page per command, made of each command's and subcommand's --help."""
    return _site_pages("commands", help_pages.generate(ctx.find_root().command), output, nav_file, check)


@docs_cmd.command("examples")
@_site_options(examples.FOLDER)
@click.option(
    "--inventory",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=Path("inventory"),
    show_default=True,
    help="The folder holding fabric.yml and examples/*.yml.",
)
def examples_cmd(output: Path, nav_file: Path, check: bool, inventory: Path) -> int:
    """One page per example intent (the file in full, its plan in numbers, each plane's drawing)."""
    generated, images = examples.generate(inventory)
    missing = [name for name in images if not (output / name).is_file()]
    if check:
        if missing:
            err.print(f"missing drawings in {output}: {', '.join(missing)}: run `gpufabric docs examples`")
            return EXIT_FINDINGS
        return _site_pages("examples", generated, output, nav_file, check)
    for name, dot in images.items():
        image = drawing.svg(dot, drawing.drawn_nodes(dot))
        if image is None:
            raise click.ClickException("Graphviz's `dot` is needed to draw the examples: install graphviz")
        write_if_changed(output / name, image.decode())
    return _site_pages("examples", generated, output, nav_file, check)


@docs_cmd.command("figures")
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("docs") / figures.FOLDER,
    show_default=True,
    help="The folder of the figures.",
)
@click.option("--check", is_flag=True, help="Exit 4 if a figure is missing or not drawn from today's intent.")
@click.option(
    "--inventory",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=Path("inventory"),
    show_default=True,
    help="The folder holding fabric.yml (the default fabric).",
)
@click.option(
    "--docs",
    "docs_folder",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=Path("docs"),
    show_default=True,
    help="The folder holding tutorial.md (its intent is the page's one YAML block).",
)
def figures_cmd(output: Path, check: bool, inventory: Path, docs_folder: Path) -> int:
    """The drawings of the front page and the tutorial: each one's compute plane, as SVG."""
    try:
        wanted = figures.figures(inventory, docs_folder)
    except figures.FigureError as exc:
        raise click.BadParameter(str(exc), param_hint="--docs") from exc
    if check:
        stale = [
            f.name for f in wanted if not (output / f.name).is_file() or not f.current((output / f.name).read_text())
        ]
        if stale:
            err.print(
                f"figures not drawn from today's intents in {output}: {', '.join(stale)}: run `gpufabric docs figures`"
            )
            return EXIT_FINDINGS
        return 0
    for figure in wanted:
        image = drawing.svg(figure.dot, drawing.drawn_nodes(figure.dot))
        if image is None:
            raise click.ClickException("Graphviz's `dot` is needed to draw the figures: install graphviz")
        write_if_changed(output / figure.name, figure.stamped(image.decode()))
    return 0


@click.command("schema")
def schema_cmd() -> int:
    """Print the intent's JSON Schema (point your editor's YAML language server at it)."""
    write_stdout(json_dumps(Intent.model_json_schema(), indent=2) + "\n")
    return 0
