"""The drawings the front page and the tutorial show (`gpufabric docs figures`): the compute plane of the
default fabric (inventory/fabric.yml) and of the tutorial's intent (the one YAML block of docs/tutorial.md),
drawn by the `drawing` export through Graphviz.

Each SVG carries, in a comment, the SHA-256 of the DOT it was drawn from; `--check` makes the DOT again
from today's intent and compares: an edited intent or a changed drawing fails the check until the figure
is drawn again, whatever Graphviz release drew it (its output differs between releases, the DOT does not).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from gpufabric.errors import GpufabricError
from gpufabric.export import drawing
from gpufabric.inputs import read_text
from gpufabric.intent import load_intent
from gpufabric.intent.loader import load_intent_text
from gpufabric.plan import Plan, build_plan

FOLDER = "img"
PLANE = "compute"
MARKER = "gpufabric docs figures: drawn from DOT sha256"
_STAMP = re.compile(rf"<!-- {MARKER} ([0-9a-f]{{64}}) -->")
_YAML_BLOCK = re.compile(r"```yaml\n(.*?)```", re.S)
MAX_PAGE = 1_000_000


class FigureError(ValueError, GpufabricError):
    """A figure's source cannot be read (the tutorial page has not exactly one YAML block)."""


@dataclass(frozen=True)
class Figure:
    name: str  # the SVG's file name under docs/img/
    dot: str  # what it is drawn from

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.dot.encode()).hexdigest()

    def stamped(self, svg: str) -> str:
        """The SVG with the DOT's digest in a comment after its XML declaration."""
        stamp = f"<!-- {MARKER} {self.digest} -->\n"
        head, sep, rest = svg.partition("?>\n")
        return head + sep + stamp + rest if sep else stamp + svg

    def current(self, svg: str) -> bool:
        found = _STAMP.search(svg)
        return found is not None and found.group(1) == self.digest


def _plane_dot(plan: Plan) -> str:
    return drawing.render_files(plan)[f"{PLANE}.dot"]


def tutorial_intent(docs: Path) -> str:
    page = read_text(docs / "tutorial.md", what="the tutorial", max_bytes=MAX_PAGE)
    blocks = _YAML_BLOCK.findall(page)
    if len(blocks) != 1:
        raise FigureError(f"{docs / 'tutorial.md'}: {len(blocks)} YAML blocks, the tutorial's intent is the one")
    return str(blocks[0])


def figures(inventory: Path, docs: Path) -> list[Figure]:
    """The default fabric's and the tutorial's compute plane, as DOT."""
    default = build_plan(load_intent(str(inventory / "fabric.yml")))
    tutorial = build_plan(load_intent_text(tutorial_intent(docs), str(docs / "tutorial.md")))
    return [Figure("default-fabric.svg", _plane_dot(default)), Figure("tutorial-fabric.svg", _plane_dot(tutorial))]
