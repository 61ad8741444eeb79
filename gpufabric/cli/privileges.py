"""Commands that make namespaces, links and containers need root: say so before anything is touched."""

from __future__ import annotations

import os

import click


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise click.UsageError(f"{what}: run it as root")
