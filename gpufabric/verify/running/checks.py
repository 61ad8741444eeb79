"""The read-only checks, as pure functions from what a switch reports to results. Each yields a result
per item (pass or fail), so a report shows what was proven, not only what failed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from ipaddress import IPv4Network
from typing import Any

from gpufabric.verify.running import qos_map
from gpufabric.verify.running.converged import CarriedPlanned
from gpufabric.verify.running.results import CheckResult, result

__all__ = ["CheckResult", "Planned", "result"]


@dataclass(frozen=True)
class Planned:
    """What the plan says about one switch, for validation."""

    device: str
    platform: str
    peers: dict[str, tuple[str, int]] = field(default_factory=dict)  # session key -> (peer switch, ASN)
    lldp: dict[str, tuple[str, str]] = field(default_factory=dict)  # local port -> (peer switch, peer port)
    ports: dict[str, int] = field(default_factory=dict)  # port -> MTU
    ecmp: dict[str, int] = field(default_factory=dict)  # remote loopback -> width
    qos: tuple[tuple[int, int, str], ...] = ()  # (DSCP, priority, what)
    mgmt_port: str | None = None
    mgmt_subnet: str | None = None
    adaptive: bool | None = None  # adaptive routing on (True) or off; None: the platform has none to check
    multipath_hash: int | None = None  # a Linux switch's net.ipv4.fib_multipath_hash_policy; None: not kept
    hash_fields: tuple[str, ...] = ()  # the ECMP hash's packet fields the configuration sets; empty: not kept
    # Lossless buffers as the switch is given them: the cable length class in metres (Cumulus, SONiC size the
    # headroom from it) and (traffic class, buffer size, pause threshold, resume threshold) in bytes (NX-OS).
    cable_metres: int | None = None
    pause_buffer: tuple[int, int, int, int] | None = None
    headroom: int | None = None  # PFC headroom in bytes the switch is given (EOS)
    # BFD as the plane asks for it: (fabric session keys, interval ms, multiplier); None: BFD is off.
    bfd: tuple[tuple[str, ...], int, int] | None = None
    bgp_timers: tuple[int, int] | None = None  # (keepalive, hold) the plane sets; None: the platform's default
    release: str | None = None  # the OS release the intent pins for the switch's platform; None: not checked
    carried: CarriedPlanned | None = None  # a converged plane's carried planes on this switch; None: none

    @property
    def reads_running(self) -> bool:
        """A check needs the running configuration's text."""
        return (
            bool(self.qos)
            or self.adaptive is not None
            or self.multipath_hash is not None
            or bool(self.hash_fields)
            or self.cable_metres is not None
            or self.pause_buffer is not None
            or self.headroom is not None
            or self.bfd is not None
            or self.bgp_timers is not None
            or self.carried is not None
        )


def drift(p: Planned, diff: str) -> Iterator[CheckResult]:
    lines = [ln for ln in diff.splitlines() if ln.strip()]
    yield result(
        "config-drift", p.device, "running config", "no difference", "\n".join(lines) if lines else "no difference"
    )


def release(p: Planned, os_version: str, running: str | None) -> Iterator[CheckResult]:
    """The switch runs the release the intent pins: `running` is the release train its platform reads in the
    `os_version` its driver reports (None: none could be read there)."""
    if p.release is None:
        return
    shown = os_version.strip() or "nothing"
    observed = f"release {running} ({shown})" if running is not None else f"no release in {shown!r}"
    yield result("release", p.device, "os release", f"release {p.release}", observed, ok=running == p.release)


def bgp(p: Planned, neighbors: dict[str, Any]) -> Iterator[CheckResult]:
    peers = neighbors.get("global", {}).get("peers", {})
    for key, (peer, asn) in sorted(p.peers.items()):
        got = peers.get(key)
        observed = "absent" if got is None else f"{'Established' if got['is_up'] else 'down'}, AS {got['remote_as']}"
        yield result("bgp-session", p.device, f"{key} ({peer})", f"Established, AS {asn}", observed)


def lldp(p: Planned, neighbors: dict[str, list[dict[str, str]]]) -> Iterator[CheckResult]:
    for port, (peer, peer_port) in sorted(p.lldp.items()):
        seen = neighbors.get(port, [])
        observed = ", ".join(f"{n['hostname']} {n['port']}" for n in seen) or "no neighbour"
        yield result("lldp-neighbor", p.device, port, f"{peer} {peer_port}", observed)


def interfaces(p: Planned, ifaces: dict[str, dict[str, Any]]) -> Iterator[CheckResult]:
    for port, mtu in sorted(p.ports.items()):
        got = ifaces.get(port)
        observed = "absent" if got is None else f"{'up' if got['is_up'] else 'down'}, MTU {got['mtu']}"
        yield result("interface", p.device, port, f"up, MTU {mtu}", observed)


def ecmp(p: Planned, routes: dict[str, list[dict[str, Any]]]) -> Iterator[CheckResult]:
    for prefix, width in sorted(p.ecmp.items()):
        hops = [h for h in routes.get(prefix, []) if h.get("protocol") == "bgp" and h.get("selected_next_hop")]
        yield result("ecmp-width", p.device, prefix, f"{width} paths", f"{len(hops)} paths")


def qos(p: Planned, running: str) -> Iterator[CheckResult]:
    if not p.qos:
        return
    mapped = qos_map.dscp_map(p.platform, running)
    for dscp, prio, what in p.qos:
        got = mapped.get(dscp)
        yield result(
            "qos-contract",
            p.device,
            f"{what} DSCP {dscp}",
            f"priority {prio}",
            "unmapped" if got is None else f"priority {got}",
        )


def load_balancing(p: Planned, running: str) -> Iterator[CheckResult]:
    """The plane's load balancing as the switch runs it: adaptive routing on or off, the kernel's ECMP hash."""
    if p.adaptive is None and p.multipath_hash is None and not p.hash_fields:
        return
    facts = qos_map.running_facts(p.platform, running)
    if facts is None:
        return
    if p.adaptive is not None:
        on = bool(facts.adaptive and facts.adaptive.value)
        yield result(
            "load-balancing", p.device, "adaptive routing", "on" if p.adaptive else "off", "on" if on else "off"
        )
    if p.hash_fields:
        fields = facts.hash_fields.value if facts.hash_fields is not None else ()
        have = [f for f in p.hash_fields if f in fields]
        yield result(
            "load-balancing",
            p.device,
            "ECMP hash fields",
            ", ".join(p.hash_fields),
            ", ".join(have) if have else "the platform's default",
        )
    if p.multipath_hash is not None:
        got = facts.multipath_hash
        yield result(
            "load-balancing",
            p.device,
            "net.ipv4.fib_multipath_hash_policy",
            str(p.multipath_hash),
            "not shown" if got is None else str(got.value),
        )


def session_timers(p: Planned, running: str) -> Iterator[CheckResult]:
    """BFD on each fabric session with the plane's timers, and the BGP timers, as the running configuration says."""
    if p.bfd is None and p.bgp_timers is None:
        return
    facts = qos_map.running_facts(p.platform, running)
    if facts is None or facts.asn is None:
        return  # the text the platform's running reader takes carries no BGP (SONiC's CONFIG_DB): nothing to judge
    if p.bfd is not None:
        keys, interval, multiplier = p.bfd
        for key in keys:
            got = facts.bfd.get(key)
            shown = "no BFD" if got is None else "BFD, platform default" if got.value is None else got.value
            observed = shown if isinstance(shown, str) else f"BFD {shown[0]} ms x {shown[1]}"
            yield result("bfd", p.device, key, f"BFD {interval} ms x {multiplier}", observed)
    if p.bgp_timers is not None:
        got_timers = facts.bgp_timers.value if facts.bgp_timers is not None else None
        observed = "not set" if got_timers is None else f"keepalive {got_timers[0]}, hold {got_timers[1]}"
        yield result("bgp-timers", p.device, "BGP", f"keepalive {p.bgp_timers[0]}, hold {p.bgp_timers[1]}", observed)


def buffers(p: Planned, running: str) -> Iterator[CheckResult]:
    """The lossless buffer settings the switch runs: the cable length it sizes headroom from, or the pause
    buffer sizes it is given (gpufabric/config/headroom.py)."""
    if p.cable_metres is None and p.pause_buffer is None and p.headroom is None:
        return
    facts = qos_map.running_facts(p.platform, running)
    if facts is None:
        return
    if p.cable_metres is not None:
        lengths = {f"{f.value}" for f in facts.cable_length.values()}
        observed = ", ".join(sorted(lengths)) + " m" if lengths else "not shown"
        yield result("qos-headroom", p.device, "PFC cable length", f"{p.cable_metres} m", observed)
    if p.pause_buffer is not None:
        tc, *sizes = p.pause_buffer
        got = facts.pause_buffer.get(tc)
        yield result(
            "qos-headroom",
            p.device,
            f"class {tc} pause buffer",
            "buffer-size {} pause-threshold {} resume-threshold {}".format(*sizes),
            "not shown" if got is None else "buffer-size {} pause-threshold {} resume-threshold {}".format(*got.value),
        )
    if p.headroom is not None:
        shown = facts.headroom
        observed = "not shown" if shown is None else f"{shown.value} bytes"
        yield result("qos-headroom", p.device, "PFC headroom", f"{p.headroom} bytes", observed)


def oob_isolation(p: Planned, routes: dict[str, list[dict[str, Any]]]) -> Iterator[CheckResult]:
    """No data-plane route into the management subnet, and no data route out of the management port."""
    if p.mgmt_subnet is None:
        return
    mgmt = IPv4Network(p.mgmt_subnet)
    leaks = []
    for prefix, hops in sorted(routes.items()):
        net = IPv4Network(prefix)
        if net.prefixlen == 0:
            continue  # a default route never wins over the connected management subnet
        for h in hops:
            via_mgmt = h.get("outgoing_interface") == p.mgmt_port
            if net.overlaps(mgmt) and not via_mgmt:
                leaks.append(f"{prefix} via {h.get('outgoing_interface') or h.get('next_hop')}")
            elif via_mgmt and not net.subnet_of(mgmt) and h.get("protocol") != "kernel":
                leaks.append(f"{prefix} via {p.mgmt_port}")
    yield result("oob-isolation", p.device, p.mgmt_subnet, "separate", "; ".join(sorted(set(leaks))) or "separate")
