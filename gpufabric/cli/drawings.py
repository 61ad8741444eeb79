"""Writing a fabric's drawings (one DOT per plane, and its SVG where Graphviz can draw it): what
`export --drawing` and `diff --drawing` share."""

from __future__ import annotations

from pathlib import Path

import click

from gpufabric.cli.output import err
from gpufabric.export import drawing
from gpufabric.files import write_atomic


def write_drawings(files: dict[str, str], directory: Path, option: str) -> None:
    """Each plane's DOT, and its SVG where Graphviz is installed and the plane small enough to draw."""
    if directory.exists() and not directory.is_dir():
        raise click.BadParameter(
            f"{directory} is a file; drawing writes one file per plane into a directory", param_hint=option
        )
    svgs = 0
    for name, text in files.items():
        write_atomic(directory / name, text)
        image = drawing.svg(text, drawing.drawn_nodes(text))
        if image is not None:
            write_atomic(directory / name.replace(".dot", ".svg"), image)
            svgs += 1
    note = f" and {svgs} SVG" if svgs else " (no SVG: install graphviz for `dot`, or the plane is too large)"
    err.print(f"wrote {len(files)} DOT file(s){note} to {directory}")
