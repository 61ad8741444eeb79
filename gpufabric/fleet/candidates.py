"""The configuration a push loads onto each switch: the rendered files, secrets resolved in memory only."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_context
from gpufabric.config.secrets import declared, resolve_tokens
from gpufabric.fleet.context import SwitchContexts, contexts_of
from gpufabric.fleet.errors import RenderedFilesMissingError
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.verify.facts import read_rendered


def candidate(
    plan: Plan,
    index: LinkIndex,
    name: str,
    secrets: Mapping[str, str] | None = None,
    folder: Path | None = None,
    *,
    contexts: SwitchContexts | None = None,
) -> str:
    """One text per switch, as its NAPALM driver takes it. Never written to disk: it may hold secrets.

    With `folder`, the files `render` wrote there (reviewed, perhaps) instead of rendering again;
    else rendered from the command's `contexts` (the same ones its checks read).
    """
    device = index.devices[name]
    spec = platform(device.platform)
    main = f"{name}{spec.facts.candidate_suffix}"
    if folder is not None:
        files = _from_folder(folder, name, spec.files(name), main)
    else:
        files = render_context(contexts_of(plan, index, contexts)[name])
    text = spec.candidate(name, files)
    return resolve_tokens(text, secrets, declared(plan.intent))


def _from_folder(folder: Path, name: str, expected: list[str], main: str) -> dict[str, str]:
    """The switch's rendered files that are in `folder`, each read as outside input (gpufabric.inputs:
    a FIFO or a device in a file's place is refused by name, never waited on; each bounded and UTF-8)."""
    files = {file: read_rendered(folder / file) for file in expected if (folder / file).exists()}
    if not files:
        raise RenderedFilesMissingError(
            f"{folder} has no rendered file for {name} (run `gpufabric render -o {folder}`)"
        )
    if main not in files:  # the configuration itself; the others (FRR's nftables, ...) may be left out
        raise RenderedFilesMissingError(f"{folder} has no {main} for {name} (run `gpufabric render -o {folder}`)")
    return files
