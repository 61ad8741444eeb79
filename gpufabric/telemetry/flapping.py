"""When a link flaps, as the rules say it (the switch ports' and the host NICs' alike)."""

from __future__ import annotations

# Carrier changes in the window past which a link flaps: a cut and its repair are two.
FLAPPING = 2


def flapping(counter: str, window: str) -> str:
    """More than FLAPPING changes of a carrier counter in `window`. `increase()` extrapolates to the window's
    edges (a cut and its repair seen over part of it can read 2.3) and the samples' own difference does
    not, but counts a counter's reset as a change: both must agree."""
    return (
        f"(increase({counter}[{window}]) > {FLAPPING})"
        f" and ((max_over_time({counter}[{window}]) - min_over_time({counter}[{window}])) > {FLAPPING})"
    )
