"""Reading the simulator's event log: what was down, and when."""

from __future__ import annotations

from collections import defaultdict
from typing import Any


def max_domains_down(events: list[dict[str, Any]], domain_of: dict[str, tuple[str, str]]) -> int:
    """The most failure domains of one plane with a switch committed and not yet confirmed, at any moment."""
    down: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    worst = 0
    for ev in sorted(events, key=lambda e: (e["time"], e["event"] == "commit")):  # an end before a start
        plane, domain = domain_of[ev["switch"]]
        if ev["event"] == "commit":
            down[plane][domain] += 1
        elif ev["event"] in ("confirm", "revert", "abort"):
            down[plane][domain] -= 1
            if not down[plane][domain]:
                del down[plane][domain]
        worst = max(worst, len(down[plane]))
    return worst
