"""What validate expects of each switch, derived from the plan (the same context the templates print)."""

from __future__ import annotations

from gpufabric.config.context import LinkIndex, build
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.validate.checks import Planned
from gpufabric.validate.ecmp import expected_widths


def planned(
    plan: Plan, index: LinkIndex, names: list[str], plane: str | None, processes: int = 1
) -> dict[str, Planned]:
    """What each switch should show; the ECMP widths computed by `processes` forked processes."""
    contexts = {n: build(plan, index.devices[n], index) for n in names}
    widths = expected_widths(plan, plane, {n: c.ecmp for n, c in contexts.items()}, processes)
    oob = plan.intent.planes.oob
    out = {}
    for name, ctx in contexts.items():
        d = ctx.device
        q = ctx.qos
        spec = platform(d.platform)
        lossless = ctx.lossless_buffer
        out[name] = Planned(
            device=name,
            platform=d.platform,
            peers={n.key: (n.peer, n.remote_asn) for n in ctx.neighbors if n.kind == "fabric"},
            lldp={p.name: (p.peer, p.peer_port) for p in ctx.ports if p.kind == "fabric" and p.peer in index.devices},
            ports={p.name: p.mtu for p in ctx.ports if p.kind in ("fabric", "host", "edge")},
            ecmp=widths.get(name, {}),
            qos=((q.roce_dscp, q.roce_priority, "RoCE"), (q.cnp_dscp, q.cnp_priority, "CNP")) if q else (),
            mgmt_port=d.mgmt_port if d.mgmt_ip is not None else None,
            mgmt_subnet=str(oob.subnet) if oob is not None and d.mgmt_ip is not None else None,
            adaptive=ctx.adaptive if spec.adaptive_routing and d.asn is not None else None,
            multipath_hash=1 if spec.linux_multipath_hash else None,
            cable_metres=ctx.cable_metres if lossless is not None and spec.cable_length else None,
            pause_buffer=(
                (q.roce_priority, lossless.buffer_size, lossless.pause_threshold, lossless.resume_threshold)
                if q is not None and lossless is not None and spec.pause_buffer
                else None
            ),
            headroom=lossless.headroom if lossless is not None and spec.ingress_headroom else None,
            bfd=(
                (tuple(n.key for n in ctx.neighbors if n.kind == "fabric"), ctx.bfd.interval, ctx.bfd.multiplier)
                if ctx.bfd is not None
                else None
            ),
            bgp_timers=ctx.bgp_timers,
        )
    return out
