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

UNIT = "all-protocols"
SOURCE = (
    "NVIDIA Cumulus Linux User Guide, Maintenance Mode; NVUE Command Reference, System Maintenance "
    "(nv set maintenance unit, 5.13.0)"
)


APPLY = "nv config apply -y\n"
KEPT: dict[str, object] = {"maintenance": {"unit": {UNIT: {"mode": "enabled"}}}}


def maintenance_units(release: str) -> bool:
    """5.13 introduced `maintenance unit` in NVUE's object model and deprecated the maintenance action."""
    return _key(release) >= (5, 13)


def steps(spec: DrainSpec) -> DrainSteps:
    if maintenance_units(spec.release):
        return DrainSteps(
            f"maintenance unit {UNIT}",
            "commands",
            f"nv set maintenance unit {UNIT} mode enabled\n{APPLY}",
            # NVIDIA's documented way back first; the unit then leaves the configuration, as planned.
            f"nv set maintenance unit {UNIT} mode disabled\n{APPLY}nv unset maintenance unit {UNIT}\n{APPLY}",
            SOURCE,
        )
    return DrainSteps(
        "system maintenance mode",
        "commands",
        "nv action enable system maintenance mode\n",
        "nv action disable system maintenance mode\n",
        SOURCE,
    )


def keep(candidate: str, spec: DrainSpec) -> str:
    """`candidate` (an NVUE startup document) with the all-protocols unit enabled in its `set` document, from
    5.13; before, the maintenance action is no configuration and a replace leaves it alone (assumed: NVIDIA
    documents the action, not how an apply treats it). A candidate that sets maintenance itself is refused:
    the plan never does, so such a file is not one gpufabric rendered."""
    if not maintenance_units(spec.release):
        return candidate
    present = nvue_tree(candidate).get("maintenance")
    if present is not None:
        if present == KEPT["maintenance"]:
            return candidate
        raise ValueError("the candidate configures NVUE maintenance itself: a drain cannot be kept in it")
    lines = candidate.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.rstrip() == "- set:"), None)
    if at is None:
        raise ValueError("the candidate has no `- set:` document to keep the drain in")
    unit: list[str] = []
    mapping_lines(KEPT, 4, unit)
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
