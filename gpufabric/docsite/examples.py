"""One page per example intent: the file in full, what it plans to (switches by plane and role, servers,
cables), and a drawing of each plane (the `drawing` export through Graphviz), generated so the site shows
exactly the files the repository ships and the plans they make today."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from gpufabric.docsite.pages import MAX_PAGE, Generated
from gpufabric.export import drawing
from gpufabric.inputs import read_text
from gpufabric.intent import load_intent
from gpufabric.plan import Plan, build_plan

MARKER = "Generated from the example intents by `gpufabric docs examples`"
FOLDER = "examples"


def _title(path: Path, root: Path) -> str:
    return f"{root.name}/{path.relative_to(root)}"


def _summary(plan: Plan) -> list[str]:
    rows = ["| plane | topology | switches by role | cables |", "| --- | --- | --- | --- |"]
    for name, plane in plan.planes.items():
        roles = Counter(d.role for d in plane.devices)
        by_role = ", ".join(f"{n} {role}" for role, n in sorted(roles.items()))
        several = f", {plane.sizing['planes']} planes" if "planes" in plane.sizing else ""
        rows.append(f"| {name} | {plane.topology}{several} | {by_role} ({len(plane.devices)}) | {len(plane.links)} |")
    return rows


def drawings(plan: Plan, stem: str) -> dict[str, str]:
    """Image file name -> the DOT it is drawn from, for every plane small enough to draw."""
    out = {}
    for name, text in drawing.render_files(plan).items():
        if drawing.drawn_nodes(text) <= drawing.SVG_MAX_NODES:
            out[f"{stem}-{name.removesuffix('.dot')}.svg"] = text
    return out


def page(path: Path, root: Path, plan: Plan, images: list[str]) -> str:
    shown = _title(path, root)
    servers = len(plan.servers)
    lines = [
        f"# {shown}",
        "",
        f"<!-- {MARKER}: edit the intent, not this page. -->",
        "",
        f"Fabric `{plan.intent.fabric.name}`: {servers} servers, {len(plan.devices())} switches.",
        "",
        f"    gpufabric plan {shown}",
        "",
        *_summary(plan),
        "",
    ]
    for image in images:
        plane = image.removesuffix(".svg").rsplit("-", 1)[1]
        lines += [f"## The {plane} plane", "", f"![{plane} plane of {shown}]({image})", ""]
    text = read_text(path, what="an example intent", max_bytes=MAX_PAGE)
    lines += ["## The intent", "", "```yaml", text.rstrip("\n"), "```", ""]
    return "\n".join(lines)


def generate(root: Path) -> tuple[Generated, dict[str, str]]:
    """The pages for every example under `root` (the repository's inventory folder: fabric.yml and
    examples/*.yml), and the DOT of each image the pages show (drawn by the caller into SVG)."""
    paths = [root / "fabric.yml", *sorted((root / "examples").glob("*.yml"))]
    pages: dict[str, str] = {}
    nav: list[tuple[str, str]] = []
    images: dict[str, str] = {}
    index = [
        "# Example fabrics",
        "",
        f"<!-- {MARKER}. -->",
        "",
        "| intent | servers | switches |",
        "| --- | --- | --- |",
    ]
    for path in paths:
        stem = "default" if path.parent == root else path.stem
        plan = build_plan(load_intent(str(path)))
        mine = drawings(plan, stem)
        images.update(mine)
        pages[f"{stem}.md"] = page(path, root, plan, list(mine))  # in the plan's order of planes
        nav.append((_title(path, root), f"{stem}.md"))
        index.append(f"| [{_title(path, root)}]({stem}.md) | {len(plan.servers)} | {len(plan.devices())} |")
    pages["index.md"] = "\n".join(index) + "\n"
    return Generated(MARKER, "gpufabric docs examples", pages, [("Overview", "index.md"), *nav]), images
