"""Cumulus Linux's own drain: NVUE maintenance units (5.13 on), the maintenance action before.

NVIDIA's Cumulus Linux user guide, "Maintenance Mode" (5.13 and later): `nv set maintenance unit
all-protocols mode enabled` makes every protocol that supports it shut down gracefully with its
neighbours (BGP sends GSHUT), `... mode disabled` brings them back; 5.12 and earlier have the action
`nv action enable|disable system maintenance mode` instead. The unit is configuration (NVUE's object
model holds it from 5.13, and the test suite judges the command with that model); the action is not.

Because the unit is configuration, two things follow. A push replaces the whole configuration (`nv config
replace`), so while a switch is drained its candidate carries the unit enabled (`keep`), or the push would
put it back into service halfway. And `mode disabled` stays in the applied configuration, which the planned
document does not hold, so the undrain removes the unit once the protocols are back (`nv unset`, which
the NVUE Command Reference describes as removing what the matching `nv set` configured): the next push
then finds nothing to change.
"""

from __future__ import annotations

from gpufabric.nos.cumulus.dialect import _key
from gpufabric.nos.cumulus.nvue import set_tree as nvue_tree
from gpufabric.platforms.spec import DrainSpec, DrainSteps
from gpufabric.platforms.yaml_text import mapping_lines

# Vendor strings, each from the document beside it. NVUE's object model holds maintenance units as a map
# keyed by any name, so it accepts a misspelt unit: the name rests on the document alone (docs/not-shown.md,
# "Vendor strings no model checks"). The mode values are checked by the model (tests/oracles).
# NVIDIA Cumulus Linux User Guide 5.14, "Maintenance Mode"; NVUE Command Reference, "System Maintenance":
# `nv set maintenance unit all-protocols mode enabled|disabled` (introduced in 5.13.0).
UNIT = "all-protocols"
MODE_ENABLED, MODE_DISABLED = "enabled", "disabled"
# The same page: 5.12 and earlier have `nv action enable|disable system maintenance mode`, which 5.13
# deprecates. An action is no configuration: no object model describes it.
ACTION_ENABLE = "nv action enable system maintenance mode"
ACTION_DISABLE = "nv action disable system maintenance mode"
# NVUE Command Reference, Show Commands, "System": `nv show maintenance` (5.13.0 on) lists each unit with its
# state (`all-protocols  maintenance`); 5.12 and earlier answer `nv show system maintenance` instead.
SHOW = "nv show maintenance"
SHOW_BEFORE_UNITS = "nv show system maintenance"
STATE_IN_MAINTENANCE = "maintenance"
SOURCE = (
    "NVIDIA Cumulus Linux User Guide, Maintenance Mode; NVUE Command Reference, System Maintenance "
    "(nv set maintenance unit, 5.13.0)"
)


APPLY = "nv config apply -y\n"


def kept() -> dict[str, object]:
    """The unit enabled, as a candidate's `set` document carries it while the switch is drained."""
    return {"maintenance": {"unit": {UNIT: {"mode": MODE_ENABLED}}}}


def maintenance_units(release: str) -> bool:
    """5.13 introduced `maintenance unit` in NVUE's object model and deprecated the maintenance action."""
    return _key(release) >= (5, 13)


def steps(spec: DrainSpec) -> DrainSteps:
    if maintenance_units(spec.release):
        return DrainSteps(
            f"maintenance unit {UNIT}",
            "commands",
            f"nv set maintenance unit {UNIT} mode {MODE_ENABLED}\n{APPLY}",
            # NVIDIA's documented way back first; the unit then leaves the configuration, as planned.
            f"nv set maintenance unit {UNIT} mode {MODE_DISABLED}\n{APPLY}nv unset maintenance unit {UNIT}\n{APPLY}",
            SOURCE,
        )
    return DrainSteps("system maintenance mode", "commands", f"{ACTION_ENABLE}\n", f"{ACTION_DISABLE}\n", SOURCE)


def keep(candidate: str, spec: DrainSpec) -> str:
    """`candidate` (an NVUE startup document) with the all-protocols unit enabled in its `set` document, from
    5.13; before, the maintenance action is no configuration and a replace leaves it alone (assumed: NVIDIA
    documents the action, not how an apply treats it). A candidate that sets maintenance itself is refused:
    the plan never does, so such a file is not one gpufabric rendered."""
    if not maintenance_units(spec.release):
        return candidate
    wanted = kept()
    present = nvue_tree(candidate).get("maintenance")
    if present is not None:
        if present == wanted["maintenance"]:
            return candidate
        raise ValueError("the candidate configures NVUE maintenance itself: a drain cannot be kept in it")
    lines = candidate.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.rstrip() == "- set:"), None)
    if at is None:
        raise ValueError("the candidate has no `- set:` document to keep the drain in")
    unit: list[str] = []
    mapping_lines(wanted, 4, unit)
    return "".join([*lines[: at + 1], *(f"{line}\n" for line in unit), *lines[at + 1 :]])


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
