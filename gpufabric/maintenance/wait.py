"""Waiting on the fabric around a drain, from what the switches' neighbours route and what the ports carry.

A drain has let traffic go when (1) every neighbour of a drained switch routes each loopback it can still
reach without it, and one server subnet of each leaf beside that leaf's loopback (the plan's path-vector
model with the drained switches taken out, gpufabric/plan/ecmp.py), through none of its ports facing a
drained switch, and (2) those drained switches' fabric ports receive near nothing (bits per second, over a
measured interval; the physical ports' counters, which count every VLAN's frames, so a converged plane's
carried planes are held to it too). An undrain is back when the neighbours, and the switch itself, route
those prefixes over as many paths as the plan expects. Both are bounded by a timeout:
a fabric that never gets there is reported with what still holds, never waited on forever.
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from gpufabric.plan.ecmp import expected_widths
from gpufabric.plan.model import Plan, ip

POLL = 1.0  # seconds between two readings of the neighbours' routes
SAMPLE = 2.0  # seconds between the two counter readings a port's rate is computed from (measured, not assumed)

Connect = Callable[[Any], Any]  # a switch (platform, address) -> its open NAPALM driver


@dataclass(frozen=True)
class Reach:
    """How `fleet.connect.switch_connector` reaches a switch."""

    name: str
    platform: str
    address: str | None


@dataclass(frozen=True)
class WaitResult:
    done: bool
    seconds: float
    waiting_for: tuple[str, ...] = ()  # what still held when the wait ended (nothing when done)
    rates: dict[str, float] = field(default_factory=dict)  # "switch port" -> bits/s received, last reading


def fabric_ports(plan: Plan, switches: Iterable[str]) -> dict[str, dict[str, str]]:
    """switch -> {its fabric port: the neighbour on the far end}."""
    wanted = set(switches)
    ports: dict[str, dict[str, str]] = defaultdict(dict)
    for link in plan.links():
        if link.kind != "fabric":
            continue
        if link.a in wanted:
            ports[link.a][link.a_port] = link.b
        if link.b in wanted:
            ports[link.b][link.b_port] = link.a
    return dict(ports)


def facing(plan: Plan, drained: Iterable[str]) -> dict[str, set[str]]:
    """neighbour -> its ports facing a drained switch (neighbours that are drained themselves left out)."""
    out_of_service = set(drained)
    ports: dict[str, set[str]] = defaultdict(set)
    for link in plan.links():
        if link.kind != "fabric":
            continue
        if link.a in out_of_service and link.b not in out_of_service:
            ports[link.b].add(link.b_port)
        elif link.b in out_of_service and link.a not in out_of_service:
            ports[link.a].add(link.a_port)
    return dict(ports)


def reach(plan: Plan, names: Iterable[str]) -> list[Reach]:
    devices = {d.name: d for d in plan.devices()}
    return [Reach(n, devices[n].platform, ip(devices[n].mgmt_ip)) for n in sorted(names)]


def _bgp_hops(routes: Mapping[str, list[dict[str, Any]]], prefix: str) -> list[dict[str, Any]]:
    return [h for h in routes.get(prefix, []) if h.get("protocol") == "bgp" and h.get("selected_next_hop")]


def still_held(
    routes: Mapping[str, list[dict[str, Any]]],
    prefixes: Iterable[str],
    ports: set[str],
    optional: Set[str] = frozenset(),
) -> list[str]:
    """The prefixes a neighbour still routes through one of `ports` (toward a drained switch), or not at all;
    one of `optional` (a server subnet, which a leaf announces only while a server's port is up) may be
    absent."""
    held = []
    for prefix in sorted(prefixes):
        hops = _bgp_hops(routes, prefix)
        if not hops:
            if prefix not in optional:
                held.append(f"{prefix} unrouted")
        elif any(h.get("outgoing_interface") in ports for h in hops):
            held.append(f"{prefix} via {','.join(sorted({str(h.get('outgoing_interface')) for h in hops}))}")
    return held


def narrower(
    routes: Mapping[str, list[dict[str, Any]]], expected: Mapping[str, int], optional: Set[str] = frozenset()
) -> list[str]:
    """The prefixes routed over fewer (or more) paths than the plan expects (an absent one of `optional`,
    a server subnet no leaf announces, aside)."""
    out = []
    for prefix, width in sorted(expected.items()):
        found = len(_bgp_hops(routes, prefix))
        if found != width and not (found == 0 and prefix in optional):
            out.append(f"{prefix} {found}/{width} paths")
    return out


def rates(first: Mapping[str, Mapping[str, int]], second: Mapping[str, Mapping[str, int]], seconds: float,
          ports: Iterable[str]) -> dict[str, float]:  # fmt: skip
    """Bits per second each port received between two readings of NAPALM's interface counters."""
    out = {}
    for port in ports:
        if port in first and port in second:
            delta = int(second[port].get("rx_octets", 0)) - int(first[port].get("rx_octets", 0))
            out[port] = max(0, delta) * 8 / max(seconds, 1e-3)
    return out


def _widths(
    plan: Plan, names: Iterable[str], cap: Mapping[str, int], without: frozenset[str], hosts: Mapping[str, str]
) -> dict[str, dict[str, int]]:
    """switch -> {prefix: width}: every remote loopback the plan's path vectors reach, and beside each leaf's
    loopback one of its servers' subnets at the same width (the prefixes traffic goes to, which a switch may
    route apart from the loopback while updates are still on their way; `hosts`: host_prefixes)."""
    planes = {d.name: d.plane for d in plan.devices()}
    names = list(names)
    out: dict[str, dict[str, int]] = {}
    for plane in sorted({planes[n] for n in names}):
        # Only the switches the plane's links join to `names` can offer them a path: the others (the other
        # planes of a multi-plane fabric) are left out of the path vectors. Each walks only its own plane, so
        # this halves a dual-plane fabric's work (131k example, a spine drained: 50 s against 86 s).
        apart = frozenset(planes) - _joined(plan, [n for n in names if planes[n] == plane], without)
        found = expected_widths(plan, plane, dict(cap), without=without | apart)
        for n in names:
            if planes[n] == plane:
                widths = found.get(n, {})
                out[n] = widths | {hosts[lo]: width for lo, width in widths.items() if lo in hosts}
    return out


def _joined(plan: Plan, names: Iterable[str], without: frozenset[str]) -> set[str]:
    """The switches the plan's fabric links join to `names`, around those `without` (as the path vectors walk)."""
    adjacent: dict[str, list[str]] = defaultdict(list)
    for link in plan.links():
        if link.kind == "fabric" and link.a not in without and link.b not in without:
            adjacent[link.a].append(link.b)
            adjacent[link.b].append(link.a)
    seen = set(names)
    todo = list(seen)
    while todo:
        for other in adjacent[todo.pop()]:
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


def host_prefixes(plan: Plan) -> dict[str, str]:
    """leaf loopback prefix -> the lowest server subnet that leaf alone announces (a routed port's, not an
    MLAG pair's shared one): one per leaf, so a wait reads as many prefixes as it does loopbacks."""
    leaves: dict[str, set[str]] = defaultdict(set)
    for server in plan.servers:
        for nic in server.nics:
            if nic.native:
                mask = (1 << 32) - (1 << (32 - nic.prefixlen))
                leaves[f"{ip(nic.address & mask)}/{nic.prefixlen}"].add(nic.leaf)
    devices = {d.name: d for d in plan.devices()}
    out: dict[str, str] = {}
    for prefix, (leaf, *others) in sorted(leaves.items(), key=lambda item: _sortable(item[0])):
        device = devices.get(leaf)
        if others or device is None or device.loopback is None:
            continue
        out.setdefault(f"{ip(device.loopback)}/32", prefix)
    return out


def _sortable(prefix: str) -> tuple[int, ...]:
    address, length = prefix.split("/")
    return (*(int(part) for part in address.split(".")), int(length))


class _Sessions:
    """One open driver per switch for the wait's life, reopened after a failure."""

    def __init__(self, connect: Connect) -> None:
        self.connect = connect
        self.conns: dict[str, Any] = {}

    def read(self, target: Reach, what: Callable[[Any], Any]) -> Any:
        conn = self.conns.get(target.name)
        if conn is None:
            conn = self.conns[target.name] = self.connect(target)
        try:
            return what(conn)
        except Exception:
            self.conns.pop(target.name, None)
            _close(conn)
            raise

    def close(self) -> None:
        for conn in self.conns.values():
            _close(conn)
        self.conns.clear()


def _close(conn: Any) -> None:
    with contextlib.suppress(Exception):  # a session already gone: nothing to close
        conn.close()


def wait_drained(
    plan: Plan,
    drained: Iterable[str],
    connect: Connect,
    cap: Mapping[str, int],
    *,
    timeout: float,
    max_rate: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    terminating: Iterable[str] = (),
) -> WaitResult:
    """Until the neighbours route around the drained switches and their fabric ports carry at most
    `max_rate` bits/s, or `timeout` seconds. The ports of the switches in `terminating` (those some server
    depends on alone: what still reaches them is that server's own traffic, which no route can move; the
    scheduler's drain is what ends it) are not held to the rate."""
    out = frozenset(drained)
    started = clock()
    ports = facing(plan, out)
    loopbacks = {f"{ip(d.loopback)}/32" for d in plan.devices() if d.name in out and d.loopback is not None}
    hosts = host_prefixes(plan)
    wanted = {n: set(w) - loopbacks for n, w in _widths(plan, ports, cap, out, hosts).items()}
    subnets = set(hosts.values())
    own = {n: p for n, p in fabric_ports(plan, out).items() if n not in set(terminating)}
    sessions = _Sessions(connect)
    waiting: list[str] = []
    seen: dict[str, float] = {}
    try:
        while True:
            waiting = []
            for target in reach(plan, ports):
                try:
                    routes = sessions.read(target, lambda c: c.get_route_to())
                except Exception as exc:
                    waiting.append(f"{target.name}: unreadable ({type(exc).__name__})")
                    continue
                held = still_held(routes, wanted.get(target.name, ()), ports[target.name], subnets)
                waiting += [f"{target.name}: {h}" for h in held]
            if not waiting:
                seen, unreadable = _port_rates(plan, own, sessions)
                waiting = unreadable + [
                    f"{port}: {rate:,.0f} b/s" for port, rate in sorted(seen.items()) if rate > max_rate
                ]
            elapsed = clock() - started
            if not waiting or elapsed >= timeout:
                return WaitResult(not waiting, elapsed, tuple(waiting), seen)
            sleep(POLL)
    finally:
        sessions.close()


def _port_rates(
    plan: Plan, own: Mapping[str, Mapping[str, str]], sessions: _Sessions
) -> tuple[dict[str, float], list[str]]:
    """Each drained switch's fabric ports' receive rates, and the switches whose counters could not be read
    (a login or a reading that failed: the wait goes on as for a port still carrying traffic, never ends in
    an exception that would leave the drain half done)."""
    found: dict[str, float] = {}
    unreadable: list[str] = []
    for target in reach(plan, own):
        try:
            first_at = time.monotonic()
            first = sessions.read(target, lambda c: c.get_interfaces_counters())
            time.sleep(SAMPLE)
            second = sessions.read(target, lambda c: c.get_interfaces_counters())
        except Exception as exc:
            unreadable.append(f"{target.name}: counters unreadable ({type(exc).__name__})")
            continue
        seconds = time.monotonic() - first_at
        for port, rate in rates(first, second, seconds, own[target.name]).items():
            found[f"{target.name} {port}"] = rate
    return found, unreadable


def wait_restored(
    plan: Plan,
    undrained: Iterable[str],
    connect: Connect,
    cap: Mapping[str, int],
    *,
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    kept_drained: Iterable[str] = (),
) -> WaitResult:
    """Until the undrained switches and their neighbours route every loopback as widely as the plan expects
    with the switches still drained (`kept_drained`: another's drain, left in place) out of it."""
    back = set(undrained)
    started = clock()
    watched = back | set(facing(plan, back))
    hosts = host_prefixes(plan)
    wanted = _widths(plan, watched, cap, frozenset(kept_drained) - back, hosts)
    subnets = set(hosts.values())
    sessions = _Sessions(connect)
    try:
        while True:
            waiting: list[str] = []
            for target in reach(plan, watched):
                try:
                    routes = sessions.read(target, lambda c: c.get_route_to())
                except Exception as exc:
                    waiting.append(f"{target.name}: unreadable ({type(exc).__name__})")
                    continue
                waiting += [f"{target.name}: {n}" for n in narrower(routes, wanted.get(target.name, {}), subnets)]
            elapsed = clock() - started
            if not waiting or elapsed >= timeout:
                return WaitResult(not waiting, elapsed, tuple(waiting))
            sleep(POLL)
    finally:
        sessions.close()


def peers_of(plan: Plan, names: Iterable[str]) -> list[str]:
    """The switches whose drain narrows the same ECMP groups as `names`: the same role in the same plane."""
    chosen = set(names)
    kinds = {(d.plane, d.role) for d in plan.devices() if d.name in chosen}
    return sorted(d.name for d in plan.devices() if (d.plane, d.role) in kinds and d.name not in chosen)


def drained_among(plan: Plan, names: Iterable[str], connect: Connect) -> frozenset[str]:
    """Which of `names` say they are drained (their maintenance status); one that cannot be read counts as
    not drained, so the wait expects the widths with it in service (the safe side: it waits longer)."""
    sessions = _Sessions(connect)
    found: set[str] = set()
    try:
        for target in reach(plan, names):
            try:
                if sessions.read(target, lambda c: c.maintenance_status()).get("drained"):
                    found.add(target.name)
            except Exception:  # unreadable: expected in service
                continue
    finally:
        sessions.close()
    return frozenset(found)
