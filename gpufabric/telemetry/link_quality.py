"""A switch's optics and link-quality reading, however its OS exposes it: the platform's own reader
(EOS, NX-OS show commands), or ethtool through the driver where the switch runs Linux (FRR, Cumulus)."""

from __future__ import annotations

from typing import Any

from gpufabric.platforms import platform as platform_spec
from gpufabric.telemetry.optics import Optics, from_linux


def read_link_quality(conn: Any, platform: str, ports: list[str]) -> dict[str, Optics] | None:
    """Per port that reported something, or None when neither the platform nor the driver can read it."""
    read = platform_spec(platform).read_optics(conn, ports)
    if read is not None:
        return {port: found for port, found in read.items() if not found.is_empty()}
    text = getattr(conn, "get_link_quality_text", None)
    if text is None:
        return None
    out = {}
    for port, sections in text(ports).items():
        # A switch ASIC's `ethtool -S` has no ConnectX PHY counters: the FEC statistics stand for them.
        found = from_linux(sections)
        if not found.is_empty():
            out[port] = found
    return out
