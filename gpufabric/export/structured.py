"""Structured config: the facts each switch's templates print, one JSON document per switch.

The reviewable step between the design and the CLI text (as AVD users know it): a design change
shows here as changed ports, sessions, addresses and policies before any vendor syntax. Secrets
appear as the references the intent names, never as values or hashes.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from gpufabric.config.context import DeviceContext, LinkIndex, build
from gpufabric.config.secrets import ReferenceHasher
from gpufabric.plan.model import Device, Plan, ip


def _device(d: Device) -> dict[str, Any]:
    out = asdict(d)
    for key in ("loopback", "mgmt_ip", "host_subnet", "svi_ip"):
        out[key] = ip(out[key])
    return out


def structured(ctx: DeviceContext) -> dict[str, Any]:
    mgmt = asdict(ctx.mgmt)
    mgmt["users"] = [{"name": u.name, "password": u.hashed} for u in ctx.mgmt.users]
    return {
        "device": _device(ctx.device),
        "release": ctx.release,
        "ports": [asdict(p) for p in ctx.ports],
        "bgp": {
            "asn": ctx.device.asn,
            "router_id": ip(ctx.device.loopback),
            "ecmp": ctx.ecmp,
            "networks": ctx.networks,
            "neighbors": [asdict(n) for n in ctx.neighbors],
        },
        "qos": ctx.qos.model_dump() if ctx.qos else None,
        "management": mgmt,
        "mlag": asdict(ctx.mlag) if ctx.mlag else None,
        "acl": asdict(ctx.acl) if ctx.acl else None,
        "border": asdict(ctx.border) if ctx.border else None,
    }


def documents(plan: Plan, names: set[str] | None = None) -> dict[str, str]:
    """File name -> JSON text for every switch (or the named ones)."""
    index = LinkIndex(plan, ReferenceHasher(plan.intent.fabric.name))
    return {
        f"{d.name}.json": json.dumps(structured(build(plan, d, index)), indent=2, sort_keys=True) + "\n"
        for d in plan.devices()
        if names is None or d.name in names
    }


def render(plan: Plan) -> str:
    """Every switch in one JSON document, keyed by switch name (for stdout)."""
    index = LinkIndex(plan, ReferenceHasher(plan.intent.fabric.name))
    return (
        json.dumps({d.name: structured(build(plan, d, index)) for d in plan.devices()}, indent=2, sort_keys=True) + "\n"
    )
