"""What validate expects of each switch, derived from the plan: the switch's one expectation (built from the
context the templates print, gpufabric/verify/expect.py) and what only a live switch shows."""

from __future__ import annotations

from gpufabric.config.context import LinkIndex
from gpufabric.fleet.context import SwitchContexts, contexts_of
from gpufabric.plan.ecmp import expected_widths
from gpufabric.plan.model import Plan
from gpufabric.verify.expect import expect
from gpufabric.verify.running.checks import Planned


def planned(
    plan: Plan,
    index: LinkIndex,
    names: list[str],
    plane: str | None,
    processes: int = 1,
    *,
    contexts: SwitchContexts | None = None,
) -> dict[str, Planned]:
    """What each switch should show; the ECMP widths computed by `processes` forked processes."""
    known = contexts_of(plan, index, contexts)
    contexts_by_name = {n: known[n] for n in names}
    widths = expected_widths(plan, plane, {n: c.ecmp for n, c in contexts_by_name.items()}, processes)
    oob = plan.intent.planes.oob
    out = {}
    for name, ctx in contexts_by_name.items():
        d = ctx.device
        out[name] = Planned(
            device=name,
            platform=d.platform,
            peers={n.key: (n.peer, n.remote_asn) for n in ctx.neighbors if n.kind == "fabric"},
            lldp={p.name: (p.peer, p.peer_port) for p in ctx.ports if p.kind == "fabric" and p.peer in index.devices},
            ports={p.name: p.mtu for p in ctx.ports if p.kind in ("fabric", "host", "edge")},
            ecmp=widths.get(name, {}),
            mgmt_port=d.mgmt_port if d.mgmt_ip is not None else None,
            mgmt_subnet=str(oob.subnet) if oob is not None and d.mgmt_ip is not None else None,
            release=plan.intent.release(d.platform),
            expect=expect(ctx, plan.planes[d.plane].host_mtu),
        )
    return out
