"""What a push loads onto a SONiC switch: its config_db.json, then its frr.conf after a marker line.

One text, as every NAPALM driver takes one candidate: CONFIG_DB (for `config replace`) and FRR's file
(for frr-reload in the bgp container) are one change, committed and reverted together.
"""

from __future__ import annotations

from collections.abc import Mapping

FRR_MARKER = "! gpufabric: frr.conf"


def join(name: str, files: Mapping[str, str]) -> str:
    return f"{files[f'{name}.config_db.json'].rstrip()}\n{FRR_MARKER}\n{files.get(f'{name}.frr.conf', '')}"


def split(text: str) -> tuple[str, str | None]:
    """(CONFIG_DB JSON, frr.conf or None)."""
    head, marker, tail = text.partition(f"\n{FRR_MARKER}\n")
    return (head + "\n", tail) if marker else (text, None)
