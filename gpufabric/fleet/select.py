"""Which planned switches `--plane/--device/--role` select. Light on purpose: `render` selects with it
without loading NAPALM or Nornir."""

from __future__ import annotations

from gpufabric.plan.model import Device, Plan


def select(plan: Plan, plane: str | None, devices: tuple[str, ...], role: str | None) -> list[Device]:
    return [
        d
        for d in plan.devices()
        if (plane is None or d.plane == plane)
        and (role is None or d.role == role)
        and (not devices or d.name in devices)
    ]
