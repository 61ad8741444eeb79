"""The configuration a push loads onto each switch: the rendered files, secrets resolved in memory only."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.config.secrets import declared, resolve_tokens
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.push.errors import RenderedFilesMissingError


def candidate(
    plan: Plan, index: LinkIndex, name: str, secrets: Mapping[str, str] | None = None, folder: Path | None = None
) -> str:
    """One text per switch, as its NAPALM driver takes it. Never written to disk: it may hold secrets.

    With `folder`, the files `render` wrote there (reviewed, perhaps) instead of rendering again.
    """
    device = index.devices[name]
    files = _from_folder(folder, name) if folder else render_device(plan, device, index).files
    spec = platform(device.platform)
    if spec.assemble_candidate is not None:
        text = spec.assemble_candidate(name, files)
    else:
        text = files[f"{name}{spec.candidate_suffix}"]
    return resolve_tokens(text, secrets, declared(plan.intent))


def _from_folder(folder: Path, name: str) -> dict[str, str]:
    files = {p.name: p.read_text() for p in folder.glob(f"{name}.*") if p.is_file()}
    if not files:
        raise RenderedFilesMissingError(
            f"{folder} has no rendered file for {name} (run `gpufabric render -o {folder}`)"
        )
    return files
