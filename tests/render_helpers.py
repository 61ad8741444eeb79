"""Render a plan into a folder the way `nornir render` does, for tests that then read it back."""

from __future__ import annotations

from pathlib import Path

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.config.secrets import PasswordHasher
from gpufabric.plan.model import Plan


def render_all(plan: Plan, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Every switch's files, name -> text, with the secrets read from `environ` (default: the environment)."""
    index = LinkIndex(plan, PasswordHasher.for_intent(plan.intent, environ))
    files: dict[str, str] = {}
    for device in plan.devices():
        files |= render_device(plan, device, index).files
    return files


def render_into(plan: Plan, folder: Path, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Every switch's files, written into `folder`; returns name -> text."""
    folder.mkdir(parents=True, exist_ok=True)
    files = render_all(plan, environ)
    for name, text in files.items():
        (folder / name).write_text(text)
    return files
