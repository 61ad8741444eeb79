"""Rules of a Spectrum-X compute plane's NIC side: the SuperNICs are configured with the switches' adaptive routing.

NVIDIA's Spectrum-X pairs Spectrum switches' adaptive routing with SuperNICs that place packets arriving out of
order and run Spectrum-X congestion control. The NIC Configuration Operator applies its Spectrum-X settings to
ConnectX-8, ConnectX-9 and BlueField-3 SuperNICs only (its NicConfigurationTemplate CRD refuses any other NIC
type), selecting NICs by type on a node: every rule below keeps what gpufabric writes inside what it would apply.
"""

from __future__ import annotations

from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import DataPlane, Intent, SwitchRole
from gpufabric.intent.types import PlaneName
from gpufabric.platforms import platform

# The NICs NVIDIA's Spectrum-X NIC configuration covers (NIC Configuration Operator README, "Spectrum-X").
# The PFC priority NVIDIA's Spectrum-X profiles give the SuperNICs (runtime "PFC 00010000", trust DSCP: the
# NIC Configuration Operator's published RA1.3 and RA2.0 profiles); the plane's contract must use the same.
SPECTRUM_X_PFC_PRIORITY = 3
SUPERNICS: tuple[str | None, ...] = ("ConnectX-8", "ConnectX-9", "BlueField-3")
# How many planes the NIC Configuration Operator's Spectrum-X multi-plane modes configure (NicConfigurationTemplate
# `spectrumXOptimized.numberOfPlanes`: 1, 2 or 4 in its published CRD).
MULTIPLANE_PLANES = (2, 4)


def _spectrum_switches(roles: dict[str, SwitchRole]) -> bool:
    return all(platform(r.platform).spectrum_x(r.model) for r in roles.values())


def supernic_rules(
    intent: Intent, name: PlaneName, plane: DataPlane, roles: dict[str, SwitchRole], at: Path
) -> list[Problem]:
    attached = [(gi, g) for gi, g in enumerate(intent.server_groups) if name in g.nics]
    if plane.spectrum_x is None:
        # Adaptive routing on Spectrum-X switches toward SuperNICs: the NICs must take their part too.
        supernics = [gi for gi, g in attached if g.nics[name].model in SUPERNICS]
        if (
            name == "compute"
            and plane.load_balancing == "adaptive"
            and roles
            and _spectrum_switches(roles)
            and supernics
        ):
            return [
                Problem(
                    at,
                    "adaptive routing on Spectrum-X switches toward SuperNICs, whose side of it is not configured: "
                    "without it they take packets out of order as loss",
                    "add spectrum_x: {profile: <NVIDIA's Spectrum-X profile ConfigMap>, platform: <e.g. gb300>}",
                )
            ]
        return []
    where = (*at, "spectrum_x")
    if name != "compute":
        return [Problem(where, "only the compute plane is a Spectrum-X fabric here", "remove spectrum_x")]
    problems = []
    if plane.multiplane is not None and plane.multiplane.planes not in MULTIPLANE_PLANES:
        # The operator's multi-plane modes split a SuperNIC's ports over 2 or 4 planes (its numberOfPlanes).
        problems.append(
            Problem(
                (*at, "multiplane", "planes"),
                f"the SuperNICs' multi-plane mode spreads their ports over 2 or 4 planes, not "
                f"{plane.multiplane.planes}",
                "set multiplane.planes to 2 or 4, or remove spectrum_x",
            )
        )
    if plane.load_balancing != "adaptive":
        problems.append(
            Problem(
                where,
                "the SuperNICs' Spectrum-X settings go with the switches' adaptive routing, which is off",
                "set load_balancing: adaptive, or remove spectrum_x",
            )
        )
    for role_name, role in roles.items():
        if not platform(role.platform).spectrum_x(role.model):
            problems.append(
                Problem(
                    (*at, "switches", role_name, "model"),
                    f"{role.platform} {role.model} is not an NVIDIA Spectrum-X switch",
                    "use NVIDIA Spectrum-4 switches (SN5000 series) with Cumulus Linux, or remove spectrum_x",
                )
            )
    profile = intent.qos_profiles.get(plane.qos) if plane.qos is not None else None
    if plane.qos is not None and profile is not None and profile.roce_priority != SPECTRUM_X_PFC_PRIORITY:
        problems.append(
            Problem(
                ("qos_profiles", plane.qos, "roce_priority"),
                f"RoCE on priority {profile.roce_priority}: NVIDIA's Spectrum-X profiles set the SuperNICs' PFC on "
                f"priority {SPECTRUM_X_PFC_PRIORITY}",
                f"use roce_priority: {SPECTRUM_X_PFC_PRIORITY} on a Spectrum-X plane",
            )
        )
    for gi, group in attached:
        nics = group.nics[name]
        if nics.model not in SUPERNICS:
            what = "no NIC model is given" if nics.model is None else f"{nics.model} is not a SuperNIC"
            problems.append(
                Problem(
                    ("server_groups", gi, "nics", name, "model"),
                    f"{what}: NVIDIA's Spectrum-X NIC configuration covers {', '.join(map(str, SUPERNICS))}",
                    f"give the compute NICs' model (one of {', '.join(map(str, SUPERNICS))})",
                )
            )
            continue
        for other, other_nics in group.nics.items():
            if other != name and other_nics.model == nics.model:
                problems.append(
                    Problem(
                        ("server_groups", gi, "nics", other, "model"),
                        f"the {other} NICs are {nics.model}s too: the NIC Configuration Operator selects a node's "
                        "NICs by type, so they would take the compute plane's Spectrum-X settings",
                        "use NICs of another model on this plane, or keep the compute NICs apart in another group",
                    )
                )
    return problems
