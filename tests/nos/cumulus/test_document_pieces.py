"""An NVUE document's ports and BGP sessions are written one piece each (a yaml_text.Form's text with the
entry's values); the same tree written line by line, as plain mappings, must give the same bytes, for
every Cumulus switch of every shipped example and every supported release."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import ALL_INTENTS, INVENTORY, example_plan, plan_doc, sized

from gpufabric.config.context import LinkIndex, build
from gpufabric.nos.cumulus.document import _entries, document, text, written
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.platforms.yaml_text import Filled


def _mismatches(plan: Plan) -> tuple[int, list[str]]:
    """(Cumulus switches seen, those whose text in pieces differs from the same tree line by line)."""
    index = LinkIndex(plan)
    seen, differ = 0, []
    for device in plan.devices():
        if device.platform != "cumulus":
            continue
        ctx = build(plan, device, index)
        seen += 1
        if text(ctx) != written(ctx, document(ctx)):
            differ.append(device.name)
    return seen, differ


@pytest.mark.parametrize("path", sized(ALL_INTENTS), ids=lambda p: p.stem)
def test_every_switch_in_pieces_is_the_same_text_line_by_line(path: Path):
    seen, differ = _mismatches(example_plan(path))
    assert differ == []
    if seen == 0:
        pytest.skip(f"{path.stem} has no Cumulus switch")


@pytest.mark.parametrize("release", platform("cumulus").facts.releases)
def test_every_release_in_pieces_is_the_same_text_line_by_line(release: str):
    """The releases name keys differently (`ip`/`ipv4`, `enable: on`/`state: enabled`): each its own forms."""
    doc = yaml.safe_load((INVENTORY / "examples" / "multi-vendor.yml").read_text())
    doc["platforms"] = {"cumulus": {"release": release}}
    seen, differ = _mismatches(plan_doc(doc, f"multi-vendor-{release}"))
    assert seen and differ == []


def test_the_pieces_are_in_use():
    """The comparisons above prove something only if the ports and sessions are written as pieces."""
    plan = example_plan(INVENTORY / "examples" / "superpod-1su.yml")
    index = LinkIndex(plan)
    device = next(d for d in plan.devices() if d.platform == "cumulus" and d.role == "leaf")
    ctx = build(plan, device, index)
    tree = _entries(ctx)
    pieces = [name for name, entry in tree["interface"].items() if type(entry) is Filled]
    assert pieces == [p.name for p in ctx.ports if p.kind != "peer"]
    sessions = tree["vrf"]["default"]["router"]["bgp"]["neighbor"]
    assert sessions and all(type(s) is Filled for s in sessions.values())
    assert not any(type(entry) is Filled for entry in document(ctx)["interface"].values())
