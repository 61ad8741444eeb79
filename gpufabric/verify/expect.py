"""One expectation per switch and the one comparison that holds a switch's facts to it.

`expect` builds, from the device context the templates print, what the switch must say; `compare` holds
what a reader found (SwitchFacts, from a rendered file or from the running configuration) to it, item by item.
`verify` reports the failing outcomes with the file and line of the fact; `validate` reports every outcome;
push's proof counts the failing ones before and after a change. A check runs only where the reader returns
every fact it needs: a platform's running reader says which it returns (PlatformFacts.running_facts), a
rendered file's reader returns them all.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from gpufabric.config.context import DeviceContext
from gpufabric.intent.model import QosProfile
from gpufabric.platforms import LoadBalancing, LosslessBuffers, platform
from gpufabric.verify.facts import Fact, SwitchFacts

# A host's IP MTU plus Ethernet and 802.1Q headers must fit the leaf port's MTU.
L2_HEADERS = 18

# Each check, by the name both readers report it under, and the SwitchFacts fields it compares: a reader that
# does not return all of them is not judged by it (a running CONFIG_DB carries no BGP).
CHECKS: dict[str, frozenset[str]] = {
    "hostname": frozenset({"hostname"}),
    "bgp-asn": frozenset({"asn", "neighbors"}),
    "bgp-neighbor": frozenset({"asn", "neighbors"}),
    "bgp-remote-as": frozenset({"neighbors"}),
    "ecmp": frozenset({"max_paths", "multipath_relax"}),
    "bfd": frozenset({"asn", "bfd"}),
    "bgp-timers": frozenset({"asn", "bgp_timers"}),
    "bgp-max-med": frozenset({"asn", "max_med"}),
    "mtu": frozenset({"mtu"}),
    "address": frozenset({"address"}),
    "load-balancing": frozenset({"adaptive", "adaptive_ports", "hash_fields", "multipath_hash"}),
    "qos-trust": frozenset({"trust_dscp"}),
    "qos-dscp-map": frozenset({"dscp_map"}),
    "qos-pfc": frozenset({"pfc"}),
    "qos-pfc-watchdog": frozenset({"watchdog"}),
    "qos-ecn": frozenset({"ecn"}),
    "qos-cable-length": frozenset({"cable_length"}),
    "qos-headroom": frozenset({"pause_buffer", "headroom"}),
    "qos-cnp-strict": frozenset({"strict"}),
    "qos-port": frozenset({"qos_ports"}),
    "carried-port": frozenset({"subinterfaces"}),
    "carried-bgp": frozenset({"vrf_neighbors"}),
    "carried-bfd": frozenset({"vrf_bfd"}),
    "carried-timers": frozenset({"vrf_timers"}),
    "carried-class": frozenset({"dscp_map"}),
    "carried-share": frozenset({"shares"}),
}
# What a rendered file's reader returns: every fact a check compares.
ALL_FACTS: frozenset[str] = frozenset().union(*CHECKS.values())


class Session(NamedTuple):
    key: str  # interface or peer address, as the switch names the session
    peer: str
    remote_asn: int
    kind: str  # fabric | edge | mlag


class PortWant(NamedTuple):
    name: str
    kind: str
    mtu: int
    address: str | None
    bonded: bool  # a member of an MLAG/vPC port-channel: its MTU is the bond's


class CarriedPort(NamedTuple):
    name: str
    vrf: str
    vlan: int
    address: str | None


class CarriedClass(NamedTuple):
    name: str
    priority: int
    dscp: tuple[int, ...]
    percent: int | None  # the guaranteed share; None: strict priority


@dataclass(frozen=True)
class SwitchExpectation:
    """What one switch must say, from its device context: read by verify, validate and push's proof alike."""

    device: str
    platform: str
    balancing: LoadBalancing
    buffers: LosslessBuffers
    asn: int | None = None
    sessions: tuple[Session, ...] = ()
    ecmp: int = 0
    bfd: tuple[int, int] | None = None  # (interval ms, multiplier) on every fabric session; None: BFD off
    bgp_timers: tuple[int, int] | None = None  # (keepalive, hold); None: the platform's default
    max_med: int | None = None  # seconds of max-MED after BGP starts; None: none
    host_mtu: int = 0
    ports: tuple[PortWant, ...] = ()
    qos: QosProfile | None = None
    lossless_qos: bool = False  # the platform configures PFC, ECN and a scheduler (not Linux)
    ecn_unit: int = 1
    cable_length: str = "5m"
    carried_ports: tuple[CarriedPort, ...] = ()
    carried_sessions: tuple[tuple[str, Session], ...] = ()  # (VRF, session)
    carried_classes: tuple[CarriedClass, ...] = ()
    carried_vrfs: tuple[str, ...] = ()

    @property
    def converged(self) -> bool:
        return bool(self.carried_vrfs)


def expect(ctx: DeviceContext, host_mtu: int) -> SwitchExpectation:
    """The switch's expectation from its context; `host_mtu`: its plane's host IP MTU."""
    d = ctx.device
    spec = platform(d.platform)
    conv = ctx.converged
    classes = conv.classes if conv else ()
    return SwitchExpectation(
        device=d.name,
        platform=d.platform,
        asn=d.asn,
        sessions=tuple(Session(n.key, n.peer, n.remote_asn, n.kind) for n in ctx.neighbors),
        ecmp=ctx.ecmp,
        bfd=(ctx.bfd.interval, ctx.bfd.multiplier) if ctx.bfd is not None else None,
        bgp_timers=ctx.bgp_timers,
        max_med=ctx.max_med_on_startup,
        host_mtu=host_mtu,
        ports=tuple(PortWant(p.name, p.kind, p.mtu, p.address, p.bond is not None) for p in ctx.ports),
        balancing=spec.load_balancing(ctx),
        qos=ctx.qos,
        lossless_qos=spec.lossless_qos(),
        ecn_unit=spec.facts.ecn_unit_bytes,
        buffers=spec.lossless_buffers(ctx),
        cable_length=ctx.cable_length,
        carried_ports=tuple(CarriedPort(s.name, v.vrf, s.vlan, s.address) for v in conv.vrfs for s in v.ports)
        if conv
        else (),
        carried_sessions=tuple(
            (v.vrf, Session(n.key, n.peer, n.remote_asn, n.kind)) for v in conv.vrfs for n in v.neighbors
        )
        if conv
        else (),
        carried_classes=tuple(CarriedClass(c.name, c.priority, tuple(c.dscp), c.bandwidth_percent) for c in classes),
        carried_vrfs=tuple(v.vrf for v in conv.vrfs) if conv else (),
    )


class Outcome(NamedTuple):
    """One item compared: passing or failing, with the fact it was read from (None: the text has none)."""

    check: str
    item: str  # what was compared: a port, a session, a DSCP value
    expected: str
    found: str
    ok: bool
    fact: Fact | None = None
    anchor: str = ""  # where a missing fact would have been: "bgp", "qos", "interface NAME"


# Positional, as Outcome's fields: some hundred calls read as one line each.
def _o(  # noqa: PLR0917
    check: str, item: str, expected: object, found: object, ok: bool, fact: Fact | None = None, anchor: str = ""
) -> Outcome:
    return Outcome(check, item, str(expected), str(found), ok, fact, anchor or check.split("-", maxsplit=1)[0])


def compare(
    want: SwitchExpectation, facts: SwitchFacts, read: frozenset[str] = ALL_FACTS, *, failing_only: bool = False
) -> Iterator[Outcome]:
    """Every outcome of holding `facts` to `want`; `read`: the facts the reader returns (a check needing one
    it does not return is left out). `failing_only`: only the failing outcomes, for verify and push's proof,
    which report nothing else. The same comparisons run; the outcomes of the items a switch has by the
    hundred (ports, sessions) are then built only where they fail: a leaf's 423 outcomes, texts and all, were
    half a millisecond of every switch `verify` reads."""
    judged = {name for name, needs in CHECKS.items() if needs <= read}
    every = not failing_only
    for outcome in _all(want, facts, every):
        if outcome.check in judged and (every or not outcome.ok):
            yield outcome


def _all(want: SwitchExpectation, facts: SwitchFacts, every: bool) -> Iterator[Outcome]:
    """`every`: also the passing outcomes (else the per-item loops may leave them out)."""
    got = facts.hostname.value if facts.hostname else "none"
    yield _o("hostname", "hostname", want.device, got, got == want.device, facts.hostname)
    yield from _bgp(want, facts, every)
    yield from _session_timers(want, facts, every)
    yield from _ports(want, facts, every)
    yield from _load_balancing(want, facts, every)
    if want.qos is not None:
        yield from _qos(want, want.qos, facts, every)
    yield from _carried(want, facts, every)


def _bgp(want: SwitchExpectation, facts: SwitchFacts, every: bool) -> Iterator[Outcome]:
    if want.asn is None:
        if facts.asn is not None or facts.neighbors:
            found = f"router bgp {facts.asn.value if facts.asn else ''}"
            yield _o("bgp-asn", "BGP", "no BGP on this switch", found, False, facts.asn)
        return
    got_asn = facts.asn.value if facts.asn else "no router bgp"
    yield _o("bgp-asn", "BGP", want.asn, got_asn, got_asn == want.asn, facts.asn)
    planned = {s.key: s for s in want.sessions}
    for key, s in planned.items():
        got = facts.neighbors.get(key)
        if got is None:
            expected = f"neighbor {key} remote-as {s.remote_asn} ({s.peer})"
            yield _o("bgp-neighbor", f"{key} ({s.peer})", expected, "missing", False, facts.asn)
            continue
        ok = got.value == s.remote_asn
        if every or not ok:
            expected = f"neighbor {key} ({s.peer}) remote-as {s.remote_asn}"
            yield _o("bgp-remote-as", f"{key} ({s.peer})", expected, got.value, ok, got)
    for key, got in facts.neighbors.items():
        if key not in planned:
            yield _o("bgp-neighbor", key, "no such neighbour in the plan", f"neighbor {key}", False, got)
    if want.sessions:
        paths = facts.max_paths.value if facts.max_paths else "none"
        ok = facts.max_paths is not None and facts.max_paths.value >= want.ecmp
        yield _o("ecmp", "maximum-paths", f"maximum-paths {want.ecmp}", paths, ok, facts.max_paths)
        relax = facts.multipath_relax is not None
        yield _o("ecmp", "multipath-relax", "as-path multipath-relax", "present" if relax else "missing", relax,
                 facts.multipath_relax or facts.asn)  # fmt: skip


def _session_timers(want: SwitchExpectation, facts: SwitchFacts, every: bool) -> Iterator[Outcome]:
    """BFD on exactly the fabric sessions, with the plane's timers; the BGP timers the plane sets (or none)."""
    if want.asn is None:
        return
    bfd = want.bfd
    fabric = {s.key: s for s in want.sessions if s.kind == "fabric"} if bfd is not None else {}
    for key, s in fabric.items():
        got = facts.bfd.get(key)
        text = f"{bfd[0]} ms x {bfd[1]}" if bfd is not None else ""
        if got is None:
            yield _o("bfd", key, f"neighbor {key} ({s.peer}) with BFD {text}", "no BFD", False, facts.asn, "bgp")
            continue
        ok = got.value == bfd
        if every or not ok:
            shown = "the platform's default" if got.value is None else f"{got.value[0]} ms x {got.value[1]}"
            yield _o("bfd", key, f"neighbor {key} BFD {text}", shown, ok, got)
    for key, got in facts.bfd.items():
        if key not in fabric:
            yield _o("bfd", key, f"no BFD on neighbor {key} (the plane's routing.bfd)", "BFD", False, got)
    timers = facts.bgp_timers.value if facts.bgp_timers is not None else None
    # No line, where the text leaves out timers equal to the platform's own: the plane's, if they are those.
    ok = timers == want.bgp_timers or (timers is None and want.bgp_timers == facts.default_bgp_timers)
    shown = (
        _timers_text(timers)
        if timers is not None or facts.default_bgp_timers is None
        else (_timers_text(facts.default_bgp_timers) + " (the platform's default)")
    )
    yield _o("bgp-timers", "BGP", _timers_text(want.bgp_timers), shown, ok, facts.bgp_timers, "bgp")
    med = facts.max_med.value if facts.max_med is not None else None
    yield _o("bgp-max-med", "BGP", _med_text(want.max_med), _med_text(med), med == want.max_med, facts.max_med, "bgp")


def _med_text(seconds: int | None) -> str:
    return "no max-MED on startup" if seconds is None else f"max-med on-startup {seconds} s"


def _timers_text(timers: tuple[int, int] | None) -> str:
    return "the platform's default BGP timers" if timers is None else f"keepalive {timers[0]}, hold {timers[1]}"


def _ports(want: SwitchExpectation, facts: SwitchFacts, every: bool) -> Iterator[Outcome]:
    for p in want.ports:
        if p.kind in ("mgmt", "peer") or p.bonded:
            continue
        got = facts.mtu.get(p.name)
        if got is None or got.value != p.mtu:
            yield _o("mtu", p.name, f"{p.name} mtu {p.mtu}", got.value if got else "not set", False, got,
                     f"interface {p.name}")  # fmt: skip
        elif p.kind == "host" and got.value < want.host_mtu + L2_HEADERS:
            expected = f"{p.name} mtu at least {want.host_mtu + L2_HEADERS} (host {want.host_mtu})"
            yield _o("mtu", p.name, expected, got.value, False, got)
        elif every:
            yield _o("mtu", p.name, f"{p.name} mtu {p.mtu}", got.value, True, got)
        if p.address is not None:
            addr = facts.address.get(p.name)
            found = addr.value if addr else "none"
            ok = found == p.address
            if every or not ok:
                yield _o("address", p.name, f"{p.name} {p.address}", found, ok, addr, f"interface {p.name}")


def _load_balancing(want: SwitchExpectation, facts: SwitchFacts, every: bool) -> Iterator[Outcome]:
    """The plane's `load_balancing` as the text says it: adaptive routing on (and on every port where the
    platform sets it one by one) or off, and a Linux switch's kernel hashing ECMP over the L4 ports."""
    lb = want.balancing
    if lb.adaptive is not None:
        on = bool(facts.adaptive and facts.adaptive.value)
        expected = "adaptive routing on" if lb.adaptive else "no adaptive routing (load_balancing: ecmp)"
        yield _o("load-balancing", "adaptive routing", expected, "on" if on else "off", on == lb.adaptive,
                 facts.adaptive, "bgp")  # fmt: skip
        for p in want.ports:
            if p.name not in lb.adaptive_ports:
                continue
            ok = p.name in facts.adaptive_ports
            if every or not ok:
                yield _o("load-balancing", p.name, f"{p.name}: adaptive routing on", "on" if ok else "off", ok,
                         facts.adaptive_ports.get(p.name) or facts.mtu.get(p.name))  # fmt: skip
        if not lb.adaptive:
            for port, on_port in facts.adaptive_ports.items():
                yield _o("load-balancing", port, f"{port}: no adaptive routing", "on", False, on_port)
    if lb.hash_fields:
        got = facts.hash_fields
        missing = [f for f in lb.hash_fields if got is None or f not in got.value]
        found = ", ".join(got.value) if got is not None and got.value else "the platform's default"
        yield _o("load-balancing", "ECMP hash fields", f"ECMP hash over {', '.join(lb.hash_fields)}", found,
                 not missing, got)  # fmt: skip
    if lb.multipath_hash is not None:
        got = facts.multipath_hash
        # The item names the sysctl: expected and found are its values (1: the hash takes the L4 ports).
        yield _o("load-balancing", "net.ipv4.fib_multipath_hash_policy", str(lb.multipath_hash),
                 "not set" if got is None else str(got.value), got is not None and got.value == lb.multipath_hash,
                 got)  # fmt: skip


def _qos(want: SwitchExpectation, q: QosProfile, facts: SwitchFacts, every: bool) -> Iterator[Outcome]:
    trust = facts.trust_dscp is not None
    yield _o("qos-trust", "trust", "trust dscp", "present" if trust else "missing", trust, facts.trust_dscp)
    for dscp, prio, what in ((q.roce_dscp, q.roce_priority, "RoCE"), (q.cnp_dscp, q.cnp_priority, "CNP")):
        got = facts.dscp_map.get(dscp)
        found = f"-> {got.value}" if got else f"DSCP {dscp} unmapped"
        yield _o("qos-dscp-map", f"{what} DSCP {dscp}", f"{what} DSCP {dscp} -> priority {prio}", found,
                 got is not None and got.value == prio, got)  # fmt: skip
    for dscp, got in facts.dscp_map.items():
        if dscp not in (q.roce_dscp, q.cnp_dscp) and got.value in (q.roce_priority, q.cnp_priority):
            expected = f"only DSCP {q.roce_dscp}/{q.cnp_dscp} in priorities {q.roce_priority}/{q.cnp_priority}"
            yield _o("qos-dscp-map", f"DSCP {dscp}", expected, f"DSCP {dscp} -> {got.value}", False, got)
    if not want.lossless_qos:
        return  # e.g. Linux (frr): no PFC, ECN queue or scheduler to configure, the lab shows classification only
    if q.lossless:
        ok = set(facts.pfc) == {q.roce_priority}
        yield _o("qos-pfc", "PFC", f"PFC no-drop on priority {q.roce_priority} only", sorted(facts.pfc) or "none",
                 ok, next(iter(facts.pfc.values()), None))  # fmt: skip
        if q.pfc_watchdog:
            on = facts.watchdog is not None
            yield _o("qos-pfc-watchdog", "PFC watchdog", "PFC watchdog on", "on" if on else "missing", on,
                     facts.watchdog)  # fmt: skip
    ecn = facts.ecn.get(q.roce_priority)
    unit = want.ecn_unit  # what the CLI can say: whole kbytes on EOS and NX-OS
    limits = (q.ecn_min_bytes // unit * unit, q.ecn_max_bytes // unit * unit)
    yield _o("qos-ecn", f"queue {q.roce_priority}", f"ECN on queue {q.roce_priority}, {limits[0]}-{limits[1]} bytes",
             ecn.value if ecn else "none", ecn is not None and ecn.value == limits, ecn)  # fmt: skip
    yield from _buffers(want, facts)
    strict = q.cnp_priority in facts.strict
    yield _o("qos-cnp-strict", f"priority {q.cnp_priority}", f"priority {q.cnp_priority} strict",
             "strict" if strict else "not strict", strict, facts.strict.get(q.cnp_priority))  # fmt: skip
    for p in want.ports:
        if p.kind not in ("fabric", "host", "peer"):
            continue
        on = p.name in facts.qos_ports
        if every or not on:
            yield _o("qos-port", p.name, f"{p.name}: RoCE policy applied", "applied" if on else "not applied", on,
                     facts.qos_ports.get(p.name) or facts.mtu.get(p.name))  # fmt: skip


def _buffers(want: SwitchExpectation, facts: SwitchFacts) -> Iterator[Outcome]:
    """The lossless class's buffers as the platform's configuration carries them: the cable length class the
    switch sizes headroom from, or the headroom formula's own figures for the plane's cable length class, the
    switch's fastest RoCE port and its MTU (gpufabric/config/headroom.py)."""
    b = want.buffers
    if b.cable_metres is not None:
        if not facts.cable_length:
            expected = f"cable length {want.cable_length} for PFC headroom"
            yield _o("qos-cable-length", "PFC cable length", expected, "none", False)
        for where, got in sorted(facts.cable_length.items()):
            yield _o("qos-cable-length", where, f"{where}: cable length {want.cable_length}", f"{got.value}",
                     got.value == b.cable_metres, got)  # fmt: skip
    if b.pause_buffer is not None:
        tc, *sizes = b.pause_buffer
        expected = f"class {tc}: pause buffer-size {sizes[0]} pause-threshold {sizes[1]} resume-threshold {sizes[2]}"
        found = facts.pause_buffer.get(tc)
        what = "none" if found is None else "buffer-size {} pause-threshold {} resume-threshold {}".format(*found.value)
        ok = found is not None and found.value == tuple(sizes)
        yield _o("qos-headroom", f"class {tc} pause buffer", f"{expected} ({want.cable_length} cables)", what, ok,
                 found)  # fmt: skip
    if b.headroom is not None:
        applied = facts.headroom
        expected = f"PFC headroom {b.headroom} bytes ({want.cable_length} cables), applied"
        shown = "none" if applied is None else f"{applied.value} bytes"
        ok = applied is not None and applied.value == b.headroom
        yield _o("qos-headroom", "PFC headroom", expected, shown, ok, applied)


def _carried(want: SwitchExpectation, facts: SwitchFacts, every: bool) -> Iterator[Outcome]:
    """A converged plane's carried planes: every tagged subinterface in its VRF with its tag and address, every
    session of each VRF with the plane's BFD and timers, and each class's DSCP values and share."""
    planned_ports = {p.name: (p.vrf, p.vlan, p.address) for p in want.carried_ports}
    for name, port in planned_ports.items():
        got = facts.subinterfaces.get(name)
        ok = got is not None and got.value == port
        if ok and not every:
            continue
        shown = "missing" if got is None else _port_text(got.value)
        yield _o("carried-port", name, f"{name}: {_port_text(port)}", shown, ok, got, "carried")
    for name, got in facts.subinterfaces.items():
        if name not in planned_ports:
            yield _o("carried-port", name, "no such subinterface in the plan", f"{name}: {_port_text(got.value)}",
                     False, got, "carried")  # fmt: skip
    planned = {f"{vrf} {s.key}": s for vrf, s in want.carried_sessions}
    for key, s in planned.items():
        got = facts.vrf_neighbors.get(key)
        ok = got is not None and got.value == s.remote_asn
        if ok and not every:
            continue
        yield _o("carried-bgp", f"vrf {key} ({s.peer})", f"vrf {key} ({s.peer}) remote-as {s.remote_asn}",
                 "missing" if got is None else got.value, ok, got, "carried")  # fmt: skip
    for key, got in facts.vrf_neighbors.items():
        if key not in planned:
            expected = "no such VRF session in the plan"
            yield _o("carried-bgp", f"vrf {key}", expected, f"vrf {key}", False, got, "carried")
    yield from _carried_timers(want, facts, planned, every)
    if not want.converged:
        return
    for c in want.carried_classes:
        for dscp in c.dscp:
            got = facts.dscp_map.get(dscp)
            ok = got is not None and got.value == c.priority
            if ok and not every:
                continue
            yield _o("carried-class", f"{c.name} DSCP {dscp}", f"{c.name} DSCP {dscp} -> priority {c.priority}",
                     f"-> {got.value}" if got else "unmapped", ok, got, "carried")  # fmt: skip
        if c.percent is None or not want.lossless_qos:
            continue  # strict, or a platform with no scheduler to configure (Linux: classification only)
        share = facts.shares.get(c.priority)
        yield _o("carried-share", f"{c.name} class (traffic class {c.priority})",
                 f"{c.name} class (priority {c.priority}) {c.percent}%", f"{share.value}%" if share else "no share",
                 share is not None and share.value == c.percent, share, "carried")  # fmt: skip


def _carried_timers(
    want: SwitchExpectation, facts: SwitchFacts, planned: dict[str, Session], every: bool
) -> Iterator[Outcome]:
    """Each carried plane's sessions run as the plane's own do: BFD with the plane's timers on every fabric
    session (none without `routing.bfd`), and the plane's BGP timers in every VRF (none where it sets none)."""
    bfd = want.bfd
    fabric = {key: s.peer for key, s in planned.items() if s.kind == "fabric"}
    if bfd is not None:
        for key, peer in fabric.items():
            got = facts.vrf_bfd.get(key)
            ok = got is not None and got.value == bfd
            if ok and not every:
                continue
            shown = "no BFD" if got is None else f"BFD {got.value}"
            yield _o("carried-bfd", f"vrf {key}", f"vrf {key} ({peer}) BFD {bfd[0]} ms x {bfd[1]}", shown, ok, got,
                     "carried")  # fmt: skip
    for key, got in facts.vrf_bfd.items():
        if bfd is None or key not in fabric:
            yield _o("carried-bfd", f"vrf {key}", f"no BFD on vrf {key} (the plane's routing.bfd)", "BFD", False, got,
                     "carried")  # fmt: skip
    for vrf in want.carried_vrfs:
        got = facts.vrf_timers.get(vrf)
        found = got.value if got is not None else None
        yield _o("carried-timers", f"vrf {vrf}", f"vrf {vrf}: {_timers_text(want.bgp_timers)}", _timers_text(found),
                 found == want.bgp_timers, got, "carried")  # fmt: skip


def _port_text(value: tuple[str, int, str | None]) -> str:
    vrf, vlan, address = value
    return f"vrf {vrf} vlan {vlan} {address or 'unnumbered'}"
