"""Rules of a compute plane built as several planes (`multiplane:`), each located at the field to change."""

from __future__ import annotations

from math import ceil, log2

from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import DataPlane, Intent
from gpufabric.intent.types import PlaneName

MAX_RAILS = 16  # rails a plane's NICs may serve (per plane of a compute plane built as several)


def rails_per_plane(intent: Intent) -> list[Problem]:
    """At most 16 rails on a plane: 16 interfaces, or 16 per plane where the compute plane is several."""
    problems: list[Problem] = []
    for gi, group in enumerate(intent.server_groups):
        for name, nics in group.nics.items():
            plane = getattr(intent.planes, name, None)
            planes = plane.multiplane.planes if isinstance(plane, DataPlane) and plane.multiplane else 1
            if len(nics.interfaces) > MAX_RAILS * planes:
                over = f" over {planes} planes" if planes > 1 else ""
                problems.append(
                    Problem(
                        ("server_groups", gi, "nics", name, "interfaces"),
                        f"{len(nics.interfaces)} interfaces{over}: more than the {MAX_RAILS} rails a plane can have",
                        f"list at most {MAX_RAILS * planes} interfaces",
                    )
                )
    return problems


def multiplane_rules(intent: Intent, name: PlaneName, plane: DataPlane) -> list[Problem]:
    mp = plane.multiplane
    if mp is None:
        return []
    at: Path = ("planes", name, "multiplane")
    if name != "compute":
        return [
            Problem(
                at,
                f"only the compute plane can be built as several planes, not the {name} plane",
                "remove multiplane here (storage and business planes are one fabric each)",
            )
        ]
    problems: list[Problem] = []
    n = mp.planes
    if plane.host_links == "lacp":
        problems.append(
            Problem(
                (*at, "planes"),
                "multiplane hosts reach each plane over a routed port; host_links: lacp bonds two ports to one "
                "leaf pair",
                "set host_links: routed, or remove multiplane",
            )
        )
    for gi, group in enumerate(intent.server_groups):
        nics = group.nics.get(name)
        if nics is None:
            continue
        nat: Path = ("server_groups", gi, "nics", name)
        count = len(nics.interfaces)
        if count % n:
            problems.append(
                Problem(
                    (*nat, "interfaces"),
                    f"{count} compute interfaces do not share out evenly over {n} planes",
                    f"list a multiple of {n} interfaces (each plane takes the same number of rails), or change "
                    f"planes.{name}.multiplane.planes",
                )
            )
        if nics.rails is not None:
            problems.append(
                Problem(
                    (*nat, "rails"),
                    "with multiplane, an interface's plane and rail follow from its place in the list "
                    f"(planes.{name}.multiplane.ports)",
                    "remove rails and list the interfaces in plane and rail order",
                )
            )
    bits = ceil(log2(n))
    for key in ("loopbacks", "p2p", "hosts"):
        net = getattr(plane.addressing, key)
        if net is not None and net.prefixlen + bits > 31:
            problems.append(
                Problem(
                    ("planes", name, "addressing", key),
                    f"{net} cannot be cut into {2**bits} shares of at least a /31, one per plane",
                    f"use a pool of /{31 - bits} or larger",
                )
            )
    pool = plane.routing.asn_pool
    if pool.size < n:
        problems.append(
            Problem(
                ("planes", name, "routing", "asn_pool"),
                f"{pool.size} ASNs cannot be shared out over {n} planes",
                "use a larger ASN range: each plane takes an equal share",
            )
        )
    return problems
