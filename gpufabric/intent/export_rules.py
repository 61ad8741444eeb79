"""Rules that keep what the exports say true: NVLink domains, cable reach, and the hardware a model has.

Each is a cross-field rule an intent can break while every field on its own is fine, and each used to
reach an export unchecked: a Slurm block of storage servers, a cable no medium reaches in the bill of
material, SONiC cabling onto cages the switch does not have. They live apart from rules.py so the two
sets can change independently; check_rules calls `export_rules`.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufabric import media
from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import DataPlane, InfinibandPlane, Intent, SwitchRole
from gpufabric.intent.types import ALL_PLANES
from gpufabric.platforms import platform


def export_rules(intent: Intent) -> list[Problem]:
    problems = nvlink_domains(intent)
    for name, plane in intent.data_planes():
        problems += cable_reach(name, plane)
    problems += switch_hardware(intent)
    return problems


def nvlink_domains(intent: Intent) -> list[Problem]:
    """`nvlink_domain` groups GPUs joined by NVLink: a group without GPUs has none, and the Slurm block
    topology and the Kubernetes accelerator label would place jobs on its servers as if it had."""
    problems: list[Problem] = []
    for gi, group in enumerate(intent.server_groups):
        if group.nvlink_domain is None or (group.kind == "gpu" and group.gpus > 0):
            continue
        what = f"its servers are `kind: {group.kind}`" if group.kind != "gpu" else "its servers have no GPUs (gpus: 0)"
        problems.append(
            Problem(
                ("server_groups", gi, "nvlink_domain"),
                f"group '{group.name}' has nvlink_domain: {group.nvlink_domain} but {what}: NVLink joins GPUs",
                "remove nvlink_domain from this group"
                + (", or give its servers their GPU count (gpus: 8)" if group.kind == "gpu" else ""),
            )
        )
    return problems


@dataclass(frozen=True)
class CableClass:
    """The cables of one position on a plane: the length the plan gives them, and their speed."""

    what: str  # what a person calls them
    key: str  # the `lengths` field whose value they take
    metres: int
    speed: int
    own_key: str = ""  # their own `lengths` field, when it is not given and they take `key`'s value


def cable_classes(plane: DataPlane) -> list[CableClass]:
    """Every kind of cable the planner lays on the plane, with the length the plan takes for it (as
    gpufabric.plan.model.link_length reads it) and its speed (as gpufabric.plan.fabric lays it)."""
    lengths, sw = plane.lengths, plane.switches
    if lengths is None or sw.leaf is None:
        return []
    leaf = sw.leaf
    found = [
        CableClass("server-to-leaf cables", "host", lengths.host, _downlink(leaf)),
        CableClass("leaf-to-spine cables", "leaf_spine", lengths.leaf_spine, _uplink(leaf)),
    ]
    if plane.host_links == "lacp":  # an MLAG pair's peer link runs where its hosts' cables do, at the full port speed
        found.append(CableClass("MLAG peer links", "host", lengths.host, leaf.port_speed))
    if plane.tiers == 3 and sw.spine is not None and sw.superspine is not None:
        own = lengths.spine_superspine
        found.append(
            CableClass(
                "spine-to-superspine cables",
                "spine_superspine" if own is not None else "leaf_spine",
                own if own is not None else lengths.leaf_spine,
                _uplink(sw.spine),
                "spine_superspine" if own is None else "",
            )
        )
    if sw.border is not None and plane.border is not None:
        own = lengths.edge
        found.append(
            CableClass(
                "border-to-edge-router cables",
                "edge" if own is not None else "leaf_spine",
                own if own is not None else lengths.leaf_spine,
                _downlink(sw.border),
                "edge" if own is None else "",
            )
        )
    return found


def _downlink(role: SwitchRole) -> int:
    return role.downlink_speed or role.port_speed


def _uplink(role: SwitchRole) -> int:
    return role.uplink_speed or role.port_speed


def cable_reach(name: str, plane: DataPlane) -> list[Problem]:
    """Every cable within some medium's reach at its speed: beyond, the bill of material and the cabling
    plan would name no cable that can be bought. Reported once per field and speed."""
    problems: list[Problem] = []
    seen: set[tuple[str, int]] = set()
    for cable in cable_classes(plane):
        reach = media.longest_reach(cable.speed)
        if cable.metres <= reach or (cable.key, cable.speed) in seen:
            continue
        seen.add((cable.key, cable.speed))
        taken = f" ({cable.what} take it: lengths.{cable.own_key} is not given)" if cable.own_key else ""
        fix = f"place the ends within {reach} m of each other"
        if cable.own_key:
            fix += f", or give lengths.{cable.own_key} their own length"
        problems.append(
            Problem(
                ("planes", name, "lengths", cable.key),
                f"{cable.metres} m at {cable.speed}G is beyond every medium's reach ({reach} m){taken}",
                fix,
            )
        )
    return problems


def switch_hardware(intent: Intent) -> list[Problem]:
    """Each switch role's model, ports and speeds against the facts its platform knows of the hardware
    (SONiC's SKU table): beyond them the plan would cable cages that do not exist and render would fail
    half-way through the fabric."""
    problems: list[Problem] = []
    for name in ALL_PLANES:
        plane = getattr(intent.planes, name)
        if plane is None or isinstance(plane, InfinibandPlane):  # InfiniBand switches are the plan's own models
            continue
        for role_name, role in plane.switches:
            if role is None:
                continue
            for key, message, fix in platform(role.platform).role_problems(role):
                at: Path = ("planes", name, "switches", role_name, key)
                problems.append(Problem(at, f"{role.platform} {role_name}: {message}", fix))
    return problems
