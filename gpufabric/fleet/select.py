"""Which planned switches `--plane/--device/--role` select. Light on purpose: `render` selects with it
without loading NAPALM or Nornir.

A plane is named as the intent names it (`compute`), or, for a compute plane built as several planes
(`planes.compute.multiplane`), one of them as the exports name it (`compute-p2`): that plane's switches only.
"""

from __future__ import annotations

from gpufabric.plan.model import Device, Plan
from gpufabric.plan.multiplane import part_of


def base_plane(plane: str) -> str:
    """The intent's plane a name belongs to: `compute` for `compute-p2`, the name itself otherwise."""
    part = part_of(plane)
    return part[0] if part else plane


def in_plane(plan: Plan, device: Device, plane: str) -> bool:
    """`device` is in `plane` (a plane's name, or `compute-pN`)."""
    part = part_of(plane)
    if part is None:
        return device.plane == plane
    base, index = part
    return device.plane == base and plan.planes[base].plane_of.get(device.name) == index


def select(plan: Plan, plane: str | None, devices: tuple[str, ...], role: str | None) -> list[Device]:
    return [
        d
        for d in plan.devices()
        if (plane is None or in_plane(plan, d, plane))
        and (role is None or d.role == role)
        and (not devices or d.name in devices)
    ]
