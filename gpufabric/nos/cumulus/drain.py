"""Cumulus Linux's own drain: NVUE maintenance units (5.13 on), the maintenance action before.

NVIDIA's Cumulus Linux user guide, "Maintenance Mode" (5.13 and later): `nv set maintenance unit
all-protocols mode enabled` makes every protocol that supports it shut down gracefully with its
neighbours (BGP sends GSHUT), `... mode disabled` brings them back; 5.12 and earlier have the action
`nv action enable|disable system maintenance mode` instead. The unit is configuration (NVUE's object
model holds it from 5.13, and the test suite judges the command with that model); the action is not.
"""

from __future__ import annotations

from gpufabric.nos.cumulus.dialect import _key
from gpufabric.platforms.spec import DrainSpec, DrainSteps

UNIT = "all-protocols"
SOURCE = (
    "NVIDIA Cumulus Linux User Guide, Maintenance Mode; NVUE Command Reference, System Maintenance "
    "(nv set maintenance unit, 5.13.0)"
)


def maintenance_units(release: str) -> bool:
    """5.13 introduced `maintenance unit` in NVUE's object model and deprecated the maintenance action."""
    return _key(release) >= (5, 13)


def steps(spec: DrainSpec) -> DrainSteps:
    if maintenance_units(spec.release):
        return DrainSteps(
            f"maintenance unit {UNIT}",
            "commands",
            f"nv set maintenance unit {UNIT} mode enabled\n",
            f"nv set maintenance unit {UNIT} mode disabled\n",
            SOURCE,
        )
    return DrainSteps(
        "system maintenance mode",
        "commands",
        "nv action enable system maintenance mode\n",
        "nv action disable system maintenance mode\n",
        SOURCE,
    )


def set_tree(command: str) -> dict[str, object]:
    """One `nv set PATH... VALUE` command as the NVUE document tree it sets (for NVIDIA's object model)."""
    words = command.split()
    if len(words) < 4 or words[:2] != ["nv", "set"]:
        raise ValueError(f"not an `nv set` command: {command!r}")
    tree: dict[str, object] = {}
    node = tree
    for word in words[2:-2]:
        child: dict[str, object] = {}
        node[word] = child
        node = child
    node[words[-2]] = words[-1]
    return tree
