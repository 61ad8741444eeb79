"""A switch's lossless counters (PFC pauses, watchdog trips, ECN marks, queue drops), however its OS
exposes them: the platform's own reader (EOS, NX-OS show commands), or `ethtool -S` through the
driver where the switch runs Linux (FRR, Cumulus)."""

from __future__ import annotations

from typing import Any

from gpufabric.platforms import platform as platform_spec
from gpufabric.verify.running.ethtool import PortCounters, parse_ethtool


def read_lossless(conn: Any, platform: str, ports: list[str]) -> dict[str, PortCounters] | None:
    """Per port, or None when neither the platform nor the driver can read them."""
    found = platform_spec(platform).read_lossless(conn, ports)
    if found is not None:
        return found
    stats = getattr(conn, "get_ethtool_stats", None)
    if stats is None:
        return None
    return {port: parse_ethtool(text) for port, text in stats(ports).items()}
