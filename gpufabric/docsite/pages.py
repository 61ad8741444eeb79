"""A folder of generated pages, and the block of mkdocs.yml's nav that lists them.

Pages are a mapping of file name to text. A generated page says so in its first lines (`marker`), so
writing a folder removes only the stale pages it made itself, never a page someone wrote by hand.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpufabric.errors import GpufabricError
from gpufabric.files import write_if_changed
from gpufabric.inputs import InputError, MiB, read_text

MAX_PAGE = 16 * MiB  # a generated page is tens of KiB


def read_page(path: Path) -> str:
    """A page of the site as it is on disk, read the one way outside input is read (a FIFO or a device
    in its place is refused, not waited on)."""
    return read_text(path, what="a page of the documentation site", max_bytes=MAX_PAGE)


def read_site_config(path: Path) -> str:
    """The site's configuration (mkdocs.yml), whose nav block lists the generated pages."""
    return read_text(path, what="the site's configuration (mkdocs.yml)", max_bytes=MAX_PAGE)


Pages = Mapping[str, str]


class NavBlockError(ValueError, GpufabricError):
    """The site configuration has no (or a broken) generated block for these pages."""


@dataclass(frozen=True)
class Generated:
    """What one generator makes: its pages and their nav entries (title, file name), in nav order."""

    marker: str  # the words every page of this generator carries
    block: str  # the name of its nav block in the site's configuration (`# begin: <block>`)
    pages: Pages
    nav: Sequence[tuple[str, str]]


def _made_here(path: Path, marker: str) -> bool:
    try:
        head = read_page(path)[:2000]
    except InputError:  # not a page this generator wrote, whatever it is
        return False
    return marker in head


def stale_pages(folder: Path, generated: Generated) -> list[str]:
    """Pages that differ from what the generator makes now, are missing, or are left over from
    something that no longer exists (a removed platform or command): names relative to `folder`."""
    stale = []
    for name, text in generated.pages.items():
        path = folder / name
        current = read_page(path) if path.exists() else None
        if current != text:
            stale.append(name)
    if folder.is_dir():
        for path in sorted(folder.glob("*.md")):
            if path.name not in generated.pages and _made_here(path, generated.marker):
                stale.append(path.name)
    return stale


def write_pages(folder: Path, generated: Generated) -> list[str]:
    """Write every page that changed and remove the leftovers this generator made; what changed."""
    changed = [name for name in generated.pages if write_if_changed(folder / name, generated.pages[name])]
    for path in sorted(folder.glob("*.md")):
        if path.name not in generated.pages and _made_here(path, generated.marker):
            path.unlink()
            changed.append(path.name)
    return changed


def _bounds(lines: list[str], marker: str, where: Path) -> tuple[int, int]:
    begin = [i for i, line in enumerate(lines) if line.strip() == f"# begin: {marker}"]
    end = [i for i, line in enumerate(lines) if line.strip() == f"# end: {marker}"]
    if len(begin) != 1 or len(end) != 1 or end[0] < begin[0]:
        raise NavBlockError(
            f"{where}: needs exactly one '# begin: {marker}' line and one '# end: {marker}' line after it, "
            "inside the nav where the generated pages belong"
        )
    return begin[0], end[0]


def with_nav_block(text: str, generated: Generated, folder: str, where: Path) -> str:
    """The site configuration `text` with the generated nav block replaced by entries for these pages,
    at the indentation of the block's begin line. Titles are JSON strings, which YAML reads as written."""
    lines = text.splitlines(keepends=True)
    begin, end = _bounds(lines, generated.block, where)
    indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
    entries = [f"{indent}- {json.dumps(title)}: {folder}/{name}\n" for title, name in generated.nav]
    return "".join(lines[: begin + 1] + entries + lines[end:])
