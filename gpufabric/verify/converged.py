"""A converged plane's carried planes, as a switch's text says them, against the plan: every tagged subinterface
in its VRF with its tag and address, every session of each VRF, and each class's DSCP values and share."""

from __future__ import annotations

from collections.abc import Iterator

from gpufabric.config.context import DeviceContext
from gpufabric.platforms import platform
from gpufabric.verify.facts import Fact, Finding, SwitchFacts


def _finding(check: str, facts: SwitchFacts, fact: Fact | None, expected: object, found: object) -> Finding:
    anchor = facts.anchors.get("bgp") or facts.anchors.get("qos")
    at = fact or anchor
    return Finding(
        check, facts.device, at.file if at else facts.files[0], at.line if at else 1, str(expected), str(found)
    )


def _carried_timers(ctx: DeviceContext, facts: SwitchFacts) -> Iterator[Finding]:
    """Each carried plane's sessions run as the plane's own do: BFD with the plane's timers on every fabric
    session (none without `routing.bfd`), and the plane's BGP timers in every VRF (none where it sets none)."""
    conv, bfd = ctx.converged, ctx.bfd
    want = (bfd.interval, bfd.multiplier) if bfd is not None else None
    fabric = {f"{v.vrf} {n.key}": n.peer for v in conv.vrfs for n in v.neighbors if n.kind == "fabric"} if conv else {}
    for key, peer in fabric.items():
        got = facts.vrf_bfd.get(key)
        if want is not None and (got is None or got.value != want):
            shown = "no BFD" if got is None else f"BFD {got.value}"
            yield _finding("carried-bfd", facts, got, f"vrf {key} ({peer}) BFD {want[0]} ms x {want[1]}", shown)
    for key, got in facts.vrf_bfd.items():
        if want is None or key not in fabric:
            yield _finding("carried-bfd", facts, got, f"no BFD on vrf {key} (the plane's routing.bfd)", "BFD")
    for vrf in [v.vrf for v in conv.vrfs] if conv else []:
        got = facts.vrf_timers.get(vrf)
        found = got.value if got is not None else None
        if found != ctx.bgp_timers:
            yield _finding("carried-timers", facts, got, f"vrf {vrf}: {_timers(ctx.bgp_timers)}", _timers(found))


def _timers(timers: tuple[int, int] | None) -> str:
    return "the platform's default BGP timers" if timers is None else f"keepalive {timers[0]}, hold {timers[1]}"


def check_carried(ctx: DeviceContext, facts: SwitchFacts) -> Iterator[Finding]:
    conv = ctx.converged
    planned_ports = {s.name: (v.vrf, s.vlan, s.address) for v in conv.vrfs for s in v.ports} if conv else {}
    planned_sessions = (
        {f"{v.vrf} {n.key}": (n.remote_asn, n.peer) for v in conv.vrfs for n in v.neighbors} if conv else {}
    )
    for name, want in planned_ports.items():
        got = facts.subinterfaces.get(name)
        if got is None or got.value != want:
            shown = "missing" if got is None else _port_text(got.value)
            yield _finding("carried-port", facts, got, f"{name}: {_port_text(want)}", shown)
    for name, got in facts.subinterfaces.items():
        if name not in planned_ports:
            yield _finding(
                "carried-port", facts, got, "no such subinterface in the plan", f"{name}: {_port_text(got.value)}"
            )
    for key, (asn, peer) in planned_sessions.items():
        got = facts.vrf_neighbors.get(key)
        if got is None or got.value != asn:
            yield _finding(
                "carried-bgp",
                facts,
                got,
                f"vrf {key} ({peer}) remote-as {asn}",
                "missing" if got is None else got.value,
            )
    for key, got in facts.vrf_neighbors.items():
        if key not in planned_sessions:
            yield _finding("carried-bgp", facts, got, "no such VRF session in the plan", f"vrf {key}")
    yield from _carried_timers(ctx, facts)
    if conv is None:
        return
    for c in conv.classes:
        for dscp in c.dscp:
            got = facts.dscp_map.get(dscp)
            if got is None or got.value != c.priority:
                shown = f"-> {got.value}" if got else "unmapped"
                yield _finding("carried-class", facts, got, f"{c.name} DSCP {dscp} -> priority {c.priority}", shown)
        if c.bandwidth_percent is None or not platform(facts.platform).lossless_qos():
            continue  # strict, or a platform with no scheduler to configure (Linux: classification only)
        share = facts.shares.get(c.priority)
        if share is None or share.value != c.bandwidth_percent:
            yield _finding(
                "carried-share",
                facts,
                share,
                f"{c.name} class (priority {c.priority}) {c.bandwidth_percent}%",
                f"{share.value}%" if share else "no share",
            )


def _port_text(value: tuple[str, int, str | None]) -> str:
    vrf, vlan, address = value
    return f"vrf {vrf} vlan {vlan} {address or 'unnumbered'}"
