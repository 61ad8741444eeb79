"""Arista EOS's own drain: maintenance mode, the `System` unit quiesced.

Arista EOS User Manual, "Maintenance Mode": under `maintenance`, `unit System` / `quiesce` puts the whole
switch into maintenance (BGP peers are told by GSHUT or a lowered preference, per the unit's profile, and
traffic drains); `no quiesce` brings it back. The block is configuration: the test suite renders the same
unit with Arista's AVD (`maintenance.units[].quiesce`) and compares.
"""

from __future__ import annotations

from gpufabric.platforms.spec import DrainSpec, DrainSteps

UNIT = "System"


def steps(spec: DrainSpec) -> DrainSteps:
    return DrainSteps(
        f"maintenance unit {UNIT}",
        "config",
        f"maintenance\n   unit {UNIT}\n      quiesce\n",
        f"maintenance\n   unit {UNIT}\n      no quiesce\n",
        "Arista EOS User Manual, Maintenance Mode (maintenance / unit System / quiesce)",
    )


def quiesced(section: str) -> bool:
    """`show running-config section maintenance`: `quiesce` (not `no quiesce`) under `unit System`."""
    unit = False
    for line in section.splitlines():
        words = line.split()
        if words[:1] == ["unit"]:
            unit = words[1:2] == [UNIT]
        elif unit and words == ["quiesce"]:
            return True
    return False
