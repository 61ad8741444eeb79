"""Structured config: the facts each switch's templates print, one JSON document per switch.

The reviewable step between the design and the CLI text (as AVD users know it): a design change
shows here as changed ports, sessions, addresses and policies before any vendor syntax. Secrets
appear as the references the intent names, never as values or hashes.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any

from gpufabric.config.context import DeviceContext, LinkIndex, build
from gpufabric.config.secrets import ReferenceHasher
from gpufabric.outputs import json_dumps
from gpufabric.plan.model import Device, Plan, ip

_FIELDS: dict[type, tuple[str, ...] | None] = {}  # class -> its dataclass fields (None: not a dataclass)


def asdict(value: Any) -> Any:
    """dataclasses.asdict without its deep copies: the values are only serialized, and at 1,280 switches
    the copies cost seconds."""
    cls = type(value)
    names = _FIELDS.get(cls, ())
    if names == ():
        names = _FIELDS[cls] = tuple(f.name for f in fields(value)) if is_dataclass(value) else None
    if names is not None:
        return {n: asdict(getattr(value, n)) for n in names}
    if cls is list or cls is tuple:
        return [asdict(v) for v in value]
    if cls is dict:
        return {k: asdict(v) for k, v in value.items()}
    return value


def _device(d: Device) -> dict[str, Any]:
    out = asdict(d)
    for key in ("loopback", "mgmt_ip", "host_subnet", "svi_ip", "peer_l3_ip"):
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
        # a converged plane's switch: its carried planes' VRFs (subinterfaces, sessions, networks) and classes
        **({"carried": asdict(ctx.converged)} if ctx.converged else {}),
    }


def documents(plan: Plan, names: set[str] | None = None) -> dict[str, str]:
    """File name -> JSON text for every switch (or the named ones)."""
    index = LinkIndex(plan, ReferenceHasher(plan.intent.fabric.name))
    return {
        f"{d.name}.json": json_dumps(structured(build(plan, d, index)), indent=2, sort_keys=True) + "\n"
        for d in plan.devices()
        if names is None or d.name in names
    }


def render(plan: Plan) -> str:
    """Every switch in one JSON object keyed by switch name (for stdout), one line per switch: `grep`
    finds a switch and `jq` reads the whole. Indented JSON is Python's slow encoder (5 s at 1,280
    switches); the per-switch files of `documents` are indented for review."""
    index = LinkIndex(plan, ReferenceHasher(plan.intent.fabric.name))
    lines = [
        f"{json_dumps(d.name)}: {json_dumps(structured(build(plan, d, index)), sort_keys=True)}"
        for d in sorted(plan.devices(), key=lambda d: d.name)
    ]
    return "{\n" + ",\n".join(lines) + "\n}\n"
