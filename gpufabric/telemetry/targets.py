"""What the exporter reads and how it labels it, from the plan: every switch's planned ports (with
the peer, rail and unit at their far end), BGP sessions and ECMP widths; every server's data NICs."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.secrets import ReferenceHasher
from gpufabric.export.cabling import cable_labels
from gpufabric.plan.ecmp import expected_widths
from gpufabric.plan.model import Plan, ip


@dataclass(frozen=True)
class SwitchTarget:
    device: str
    plane: str
    role: str
    platform: str
    address: str | None
    ports: dict[str, dict[str, str]] = field(default_factory=dict)  # port -> labels beyond the switch's
    sessions: dict[str, str] = field(default_factory=dict)  # session key -> peer switch
    ecmp: dict[str, tuple[int, str]] = field(default_factory=dict)  # loopback/32 -> (planned width, device)
    # The lossless traffic classes of the switch's plane (its QoS profile's RoCE priority when PFC is on), and
    # the profile's ECN maximum threshold: the queues whose buffers are read, and what their watermark is held to.
    lossless_queues: tuple[str, ...] = ()
    ecn_max_bytes: int | None = None

    @property
    def labels(self) -> dict[str, str]:
        return {"plane": self.plane, "device": self.device, "role": self.role}


@dataclass(frozen=True)
class NicTarget:
    plane: str
    host: str
    interface: str
    rail: str
    leaf: str


def switch_targets(plan: Plan, plane: str | None = None) -> list[SwitchTarget]:
    index = LinkIndex(plan, ReferenceHasher(plan.intent.fabric.name, {}))  # ports and sessions, no secret
    devices = [d for d in plan.devices() if plane is None or d.plane == plane]
    contexts = {d.name: build(plan, d, index) for d in devices}
    widths = expected_widths(plan, plane, {n: c.ecmp for n, c in contexts.items()})
    loopbacks = {f"{ip(d.loopback)}/32": d.name for d in plan.devices() if d.loopback is not None}
    nic_rail = {(s.name, n.interface): n.rail for s in plan.servers for n in s.nics}
    cables = cable_labels(plan)
    by_name = index.devices
    out = []
    for d in devices:
        ctx = contexts[d.name]
        ports = {}
        for p in ctx.ports:
            if p.kind not in ("fabric", "host", "edge"):
                continue
            far = by_name.get(p.peer)
            rail = d.rail or (far.rail if far is not None else None) or nic_rail.get((p.peer, p.peer_port))
            unit = d.unit or (far.unit if far is not None else None)
            ports[p.name] = {
                "port": p.name, "peer": p.peer, "peer_port": p.peer_port,
                "rail": str(rail or ""), "unit": str(unit or ""), "cable": cables.get((d.name, p.name), ""),
            }  # fmt: skip
        sessions = {n.key: n.peer for n in ctx.neighbors if n.kind == "fabric"}
        ecmp = {pfx: (w, loopbacks.get(pfx, "")) for pfx, w in widths.get(d.name, {}).items()}
        qos = ctx.qos if ctx.qos is not None and ctx.qos.lossless else None
        lossless = (str(qos.roce_priority),) if qos is not None else ()
        ecn_max = qos.ecn_max_bytes if qos is not None else None
        out.append(
            SwitchTarget(d.name, d.plane, d.role, d.platform, ip(d.mgmt_ip), ports, sessions, ecmp, lossless, ecn_max)
        )
    return out


def nic_targets(plan: Plan, plane: str | None = None) -> dict[str, list[NicTarget]]:
    """Per server, its data NICs (the RoCE counters matter on planes that carry RoCE)."""
    out: dict[str, list[NicTarget]] = {}
    for s in plan.servers:
        nics = [
            NicTarget(n.plane, s.name, n.interface, str(n.rail), n.leaf)
            for n in s.nics
            if plane is None or n.plane == plane
        ]
        if nics:
            out[s.name] = nics
    return out
