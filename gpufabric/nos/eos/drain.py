"""Arista EOS's own drain: maintenance mode, the `System` unit quiesced.

Arista EOS User Manual, "Maintenance Mode": under `maintenance`, `unit System` / `quiesce` puts the whole
switch into maintenance (BGP peers are told by GSHUT or a lowered preference, per the unit's profile, and
traffic drains); `no quiesce` brings it back. The block is configuration: the test suite renders the same
unit with Arista's AVD (`maintenance.units[].quiesce`) and compares.

Because the block is configuration, a push (a config session replacing the whole running configuration)
would drop it and bring the switch back into service halfway: the candidate of a drained switch carries
the block (`keep`). `no quiesce` is the unit's default, which EOS's running configuration does not show
(assumed, not shown on a switch: docs/not-shown.md), so the undrain leaves nothing the plan lacks.
"""

from __future__ import annotations

from gpufabric.platforms.spec import DrainSpec, DrainSteps

# Arista EOS User Manual, "Maintenance Mode": `System` is the built-in unit that stands for the whole switch
# (Arista TOI "Maintenance Mode", EOS 4.15.2F). AVD's schema takes any unit name (`maintenance.units[].name` is
# free text), so no model here checks this spelling (docs/not-shown.md); `quiesce` is AVD's to render.
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


def keep(candidate: str, spec: DrainSpec) -> str:
    """`candidate` (EOS configuration text) with the drain's block added before its closing `end` (at its end
    when it has none). A candidate that has a `maintenance` section already is left as it is when that section
    quiesces the System unit, and refused otherwise: the plan never writes one."""
    lines = candidate.splitlines()
    if any(line.rstrip() == "maintenance" for line in lines):
        section = _section(lines, "maintenance")
        if quiesced(section):
            return candidate
        raise ValueError("the candidate configures EOS maintenance itself: a drain cannot be kept in it")
    block = ["!", *steps(spec).drain.rstrip("\n").splitlines()]
    at = max((i for i, line in enumerate(lines) if line.strip() == "end"), default=len(lines))
    return "\n".join([*lines[:at], *block, *lines[at:]]) + "\n"


def _section(lines: list[str], header: str) -> str:
    out: list[str] = []
    inside = False
    for line in lines:
        if not line.startswith(" "):
            inside = line.rstrip() == header
        if inside:
            out.append(line)
    return "\n".join(out)
