"""The configuration a push loads onto each switch: the rendered files, secrets resolved in memory only."""

from __future__ import annotations

from collections.abc import Mapping

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.config.secrets import resolve_tokens
from gpufabric.drivers.frr_files import join_candidate
from gpufabric.plan.model import Plan


def candidate(plan: Plan, index: LinkIndex, name: str, secrets: Mapping[str, str] | None = None) -> str:
    """One text per switch, as its NAPALM driver takes it. Never written to disk: it may hold secrets."""
    device = index.devices[name]
    files = render_device(plan, device, index).files
    if device.platform == "frr":
        text = join_candidate(files[f"{name}.frr.conf"], files.get(f"{name}.nft"))
    elif device.platform == "cumulus":
        text = files[f"{name}.yaml"]
    else:
        text = files[f"{name}.cfg"]
    return resolve_tokens(text, secrets)
