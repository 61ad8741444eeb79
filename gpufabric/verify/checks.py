"""Cross-checks of rendered configurations against the plan, written once for every platform.

Each check compares what the text says (SwitchFacts) with what the plan says, and with what
the other end of a link says, so a typo on either side of a cable is caught.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from ipaddress import IPv4Interface, IPv4Network

from gpufabric.config.context import DeviceContext
from gpufabric.config.secrets import HASH_TOKEN, TOKEN
from gpufabric.intent.model import QosProfile
from gpufabric.intent.rules import address_pools
from gpufabric.plan.model import Device, Link, Plan, ip
from gpufabric.platforms import LosslessBuffers, platform
from gpufabric.verify.converged import check_carried
from gpufabric.verify.facts import Fact, Finding, LinkEnd, Row, SwitchFacts

# A host's IP MTU plus Ethernet and 802.1Q headers must fit the leaf port's MTU.
L2_HEADERS = 18
_COMMUNITY = re.compile(r"community[\s:'\"]*([^\s'\"]+)")


def _at(facts: SwitchFacts, fact: Fact | None, anchor: str) -> tuple[str, int]:
    fact = fact or facts.anchors.get(anchor)
    if fact is not None:
        return fact.file, fact.line
    return (facts.files[0] if facts.files else "?"), 1


def _finding(
    check: str, facts: SwitchFacts, fact: Fact | None, expected: object, found: object, *, anchor: str = ""
) -> Finding:
    file, line = _at(facts, fact, anchor or check.split("-", maxsplit=1)[0])
    return Finding(check, facts.device, file, line, str(expected), str(found))


def check_device(plan: Plan, ctx: DeviceContext, facts: SwitchFacts) -> Iterator[Finding]:
    yield from facts.problems
    if any(f.check == "parse" for f in facts.problems):
        return  # nothing else can be read from a file that does not parse
    d = ctx.device
    if facts.hostname is None or facts.hostname.value != d.name:
        yield _finding("hostname", facts, facts.hostname, d.name, facts.hostname.value if facts.hostname else "none")
    yield from _bgp(ctx, facts)
    yield from _ports(plan, ctx, facts)
    yield from _load_balancing(ctx, facts)
    if ctx.qos is not None:
        yield from _qos(ctx, ctx.qos, facts)
    yield from check_carried(ctx, facts)
    if d.plane == "oob":
        yield from _oob(plan, facts)
    yield from _secrets(d, facts)


def _bgp(ctx: DeviceContext, facts: SwitchFacts) -> Iterator[Finding]:
    d = ctx.device
    if d.asn is None:
        if facts.asn is not None or facts.neighbors:
            yield _finding(
                "bgp-asn",
                facts,
                facts.asn,
                "no BGP on this switch",
                f"router bgp {facts.asn.value if facts.asn else ''}",
            )
        return
    if facts.asn is None or facts.asn.value != d.asn:
        yield _finding("bgp-asn", facts, facts.asn, d.asn, facts.asn.value if facts.asn else "no router bgp")
    planned = {n.key: n for n in ctx.neighbors}
    for key, n in planned.items():
        got = facts.neighbors.get(key)
        if got is None:
            yield _finding(
                "bgp-neighbor", facts, facts.asn, f"neighbor {key} remote-as {n.remote_asn} ({n.peer})", "missing"
            )
        elif got.value != n.remote_asn:
            yield _finding(
                "bgp-remote-as", facts, got, f"neighbor {key} ({n.peer}) remote-as {n.remote_asn}", got.value
            )
    for key, got in facts.neighbors.items():
        if key not in planned:
            yield _finding("bgp-neighbor", facts, got, "no such neighbour in the plan", f"neighbor {key}")
    if ctx.neighbors:
        if facts.max_paths is None or facts.max_paths.value < ctx.ecmp:
            yield _finding(
                "ecmp",
                facts,
                facts.max_paths,
                f"maximum-paths {ctx.ecmp}",
                facts.max_paths.value if facts.max_paths else "none",
            )
        if facts.multipath_relax is None:
            yield _finding("ecmp", facts, facts.asn, "as-path multipath-relax", "missing")
    yield from _session_timers(ctx, facts)


def _session_timers(ctx: DeviceContext, facts: SwitchFacts) -> Iterator[Finding]:
    """BFD on exactly the fabric sessions, with the plane's timers; the BGP timers the plane sets (or none)."""
    bfd = ctx.bfd
    fabric = {n.key: n for n in ctx.neighbors if n.kind == "fabric"} if bfd is not None else {}
    for key, n in fabric.items():
        got = facts.bfd.get(key)
        want = f"{bfd.interval} ms x {bfd.multiplier}" if bfd is not None else ""
        if got is None:
            yield _finding(
                "bfd", facts, facts.asn, f"neighbor {key} ({n.peer}) with BFD {want}", "no BFD", anchor="bgp"
            )
        elif bfd is not None and got.value != (bfd.interval, bfd.multiplier):
            shown = "the platform's default" if got.value is None else f"{got.value[0]} ms x {got.value[1]}"
            yield _finding("bfd", facts, got, f"neighbor {key} BFD {want}", shown)
    for key, got in facts.bfd.items():
        if key not in fabric:
            yield _finding("bfd", facts, got, f"no BFD on neighbor {key} (the plane's routing.bfd)", "BFD")
    got_timers = facts.bgp_timers.value if facts.bgp_timers is not None else None
    if got_timers != ctx.bgp_timers:
        yield _finding(
            "bgp-timers", facts, facts.bgp_timers, _timers_text(ctx.bgp_timers), _timers_text(got_timers), anchor="bgp"
        )


def _timers_text(timers: tuple[int, int] | None) -> str:
    return "the platform's default BGP timers" if timers is None else f"keepalive {timers[0]}, hold {timers[1]}"


def _ports(plan: Plan, ctx: DeviceContext, facts: SwitchFacts) -> Iterator[Finding]:
    host_mtu = plan.planes[ctx.device.plane].host_mtu
    for p in ctx.ports:
        if p.kind == "mgmt" or p.bond is not None or p.kind == "peer":
            continue
        got = facts.mtu.get(p.name)
        if got is None or got.value != p.mtu:
            yield _finding(
                "mtu",
                facts,
                got,
                f"{p.name} mtu {p.mtu}",
                got.value if got else "not set",
                anchor=f"interface {p.name}",
            )
        elif p.kind == "host" and got.value < host_mtu + L2_HEADERS:
            yield _finding(
                "mtu", facts, got, f"{p.name} mtu at least {host_mtu + L2_HEADERS} (host {host_mtu})", got.value
            )
        if p.address is not None:
            addr = facts.address.get(p.name)
            if addr is None or addr.value != p.address:
                yield _finding(
                    "address",
                    facts,
                    addr,
                    f"{p.name} {p.address}",
                    addr.value if addr else "none",
                    anchor=f"interface {p.name}",
                )


def _load_balancing(ctx: DeviceContext, facts: SwitchFacts) -> Iterator[Finding]:
    """The plane's `load_balancing` as the text says it: adaptive routing on (and on every port where the
    platform sets it one by one) or off, and a Linux switch's kernel hashing ECMP over the L4 ports."""
    want = platform(facts.platform).load_balancing(ctx)
    if want.adaptive is not None:
        on = bool(facts.adaptive and facts.adaptive.value)
        if on != want.adaptive:
            expected = "adaptive routing on" if want.adaptive else "no adaptive routing (load_balancing: ecmp)"
            yield _finding("load-balancing", facts, facts.adaptive, expected, "on" if on else "off", anchor="bgp")
        for p in ctx.ports:
            if p.name in want.adaptive_ports and p.name not in facts.adaptive_ports:
                got = facts.mtu.get(p.name)
                yield _finding("load-balancing", facts, got, f"{p.name}: adaptive routing on", "off")
        if not want.adaptive:
            for port, got in facts.adaptive_ports.items():
                yield _finding("load-balancing", facts, got, f"{port}: no adaptive routing", "on")
    if want.hash_fields:
        got = facts.hash_fields
        missing = [f for f in want.hash_fields if got is None or f not in got.value]
        if missing:
            found = ", ".join(got.value) if got is not None and got.value else "the platform's default"
            yield _finding("load-balancing", facts, got, f"ECMP hash over {', '.join(want.hash_fields)}", found)
    if want.multipath_hash is not None:
        got = facts.multipath_hash
        if got is None or got.value != want.multipath_hash:
            yield _finding(
                "load-balancing",
                facts,
                got,
                f"net.ipv4.fib_multipath_hash_policy {want.multipath_hash} (ECMP hash over the L4 ports)",
                got.value if got else "not set",
            )


def _qos(ctx: DeviceContext, q: QosProfile, facts: SwitchFacts) -> Iterator[Finding]:
    if facts.trust_dscp is None:
        yield _finding("qos-trust", facts, None, "trust dscp", "missing")
    for dscp, prio, what in ((q.roce_dscp, q.roce_priority, "RoCE"), (q.cnp_dscp, q.cnp_priority, "CNP")):
        got = facts.dscp_map.get(dscp)
        if got is None or got.value != prio:
            yield _finding(
                "qos-dscp-map",
                facts,
                got,
                f"{what} DSCP {dscp} -> priority {prio}",
                f"-> {got.value}" if got else f"DSCP {dscp} unmapped",
            )
    for dscp, got in facts.dscp_map.items():
        if dscp not in (q.roce_dscp, q.cnp_dscp) and got.value in (q.roce_priority, q.cnp_priority):
            yield _finding(
                "qos-dscp-map",
                facts,
                got,
                f"only DSCP {q.roce_dscp}/{q.cnp_dscp} in priorities {q.roce_priority}/{q.cnp_priority}",
                f"DSCP {dscp} -> {got.value}",
            )
    spec = platform(facts.platform)
    if not spec.lossless_qos():
        return  # e.g. Linux (frr): no PFC, ECN queue or scheduler to configure, the lab shows classification only
    if q.lossless:
        if set(facts.pfc) != {q.roce_priority}:
            first = next(iter(facts.pfc.values()), None)
            yield _finding(
                "qos-pfc", facts, first, f"PFC no-drop on priority {q.roce_priority} only", sorted(facts.pfc) or "none"
            )
        if q.pfc_watchdog and facts.watchdog is None:
            yield _finding("qos-pfc-watchdog", facts, None, "PFC watchdog on", "missing")
    ecn = facts.ecn.get(q.roce_priority)
    unit = spec.facts.ecn_unit_bytes  # what the CLI can say: whole kbytes on EOS and NX-OS
    want = (q.ecn_min_bytes // unit * unit, q.ecn_max_bytes // unit * unit)
    if ecn is None or ecn.value != want:
        yield _finding(
            "qos-ecn",
            facts,
            ecn,
            f"ECN on queue {q.roce_priority}, {want[0]}-{want[1]} bytes",
            ecn.value if ecn else "none",
        )
    yield from _buffers(ctx, facts, spec.lossless_buffers(ctx))
    if q.cnp_priority not in facts.strict:
        yield _finding("qos-cnp-strict", facts, None, f"priority {q.cnp_priority} strict", "not strict")
    for p in ctx.ports:
        if p.kind in ("fabric", "host", "peer") and p.name not in facts.qos_ports:
            yield _finding("qos-port", facts, facts.mtu.get(p.name), f"{p.name}: RoCE policy applied", "not applied")


def _buffers(ctx: DeviceContext, facts: SwitchFacts, want: LosslessBuffers) -> Iterator[Finding]:
    """The lossless class's buffers as the platform's configuration carries them: the cable length class the
    switch sizes headroom from, or the headroom formula's own figures for the plane's cable length class, the
    switch's fastest RoCE port and its MTU (gpufabric/config/headroom.py)."""
    if want.cable_metres is not None:
        if not facts.cable_length:
            yield _finding("qos-cable-length", facts, None, f"cable length {ctx.cable_length} for PFC headroom", "none")
        for where, got in sorted(facts.cable_length.items()):
            if got.value != want.cable_metres:
                yield _finding(
                    "qos-cable-length", facts, got, f"{where}: cable length {ctx.cable_length}", f"{got.value}"
                )
    if want.pause_buffer is not None:
        tc, *sizes = want.pause_buffer
        expected = f"class {tc}: pause buffer-size {sizes[0]} pause-threshold {sizes[1]} resume-threshold {sizes[2]}"
        found = facts.pause_buffer.get(tc)
        if found is None or found.value != tuple(sizes):
            what = (
                "none"
                if found is None
                else "buffer-size {} pause-threshold {} resume-threshold {}".format(*found.value)
            )
            yield _finding("qos-headroom", facts, found, f"{expected} ({ctx.cable_length} cables)", what)
    if want.headroom is not None:
        applied = facts.headroom
        if applied is None or applied.value != want.headroom:
            expected = f"PFC headroom {want.headroom} bytes ({ctx.cable_length} cables), applied"
            shown = "none" if applied is None else f"{applied.value} bytes"
            yield _finding("qos-headroom", facts, applied, expected, shown)


def _oob(plan: Plan, facts: SwitchFacts) -> Iterator[Finding]:
    data = [net for path, net in address_pools(plan.intent) if path[1] != "oob"]
    for route in facts.routes:
        vrf, prefix = route.value
        net = IPv4Network(prefix)
        if net.prefixlen == 0 and vrf is not None:
            continue  # the management VRF's default route toward the OOB gateway
        if any(net.overlaps(d) for d in data) or net.prefixlen == 0:
            yield _finding(
                "oob-isolation",
                facts,
                route,
                "no route toward a data plane",
                f"route {prefix}" + (f" vrf {vrf}" if vrf else ""),
            )


def _secrets(d: Device, facts: SwitchFacts) -> Iterator[Finding]:
    for fact in facts.secrets:
        text = str(fact.value)
        if "community" in text:
            m = _COMMUNITY.search(text)
            community = m.group(1) if m else ""
            if community not in ("null", "") and not TOKEN.fullmatch(community):
                yield _finding(
                    "secret", facts, fact, "a community reference (@secret:env:NAME@)", "a literal community"
                )
        elif (prefix := platform(d.platform).facts.hash_prefix) not in text and not HASH_TOKEN.search(text):
            yield _finding(
                "secret",
                facts,
                fact,
                f"a {prefix} hashed password",
                "a password that is not hashed",
            )


def check_link(link: Link, ends: dict[str, LinkEnd]) -> Iterator[Finding]:
    """Both ends of a fabric or edge link agree: same MTU, same /31, and each names the other's ASN."""
    a, b = ends.get(link.a), ends.get(link.b)
    if a is None or b is None:
        return
    ma, mb = a.mtu.get(link.a_port), b.mtu.get(link.b_port)
    if ma is not None and mb is not None and ma[0] != mb[0]:
        yield _link_finding("link-mtu", a, ma, f"{link.a_port} mtu equal to {link.b} {link.b_port} ({mb[0]})")
    aa, ab = a.address.get(link.a_port), b.address.get(link.b_port)
    if aa is not None and ab is not None:
        ia, ib = IPv4Interface(aa[0]), IPv4Interface(ab[0])
        if ia.network != ib.network or ia.ip == ib.ip:
            expected = f"{link.a_port} in the same /31 as {link.b} {link.b_port} ({ab[0]})"
            yield _link_finding("link-subnet", a, aa, expected)
    for me, other, key in ((a, b, ip(link.b_ip) or link.a_port), (b, a, ip(link.a_ip) or link.b_port)):
        session = me.neighbors.get(key)
        if session is not None and other.asn is not None and session[0] != other.asn[0]:
            expected = f"remote-as {other.asn[0]} (what {other.device} declares)"
            yield _link_finding("bgp-both-ends", me, session, expected)


def _link_finding(check: str, end: LinkEnd, row: Row, expected: str) -> Finding:
    value, file, line = row
    return Finding(check, end.device, file, line, expected, str(value))
