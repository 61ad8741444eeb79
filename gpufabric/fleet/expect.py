"""What must hold on a switch after a change: the post-change checks, as pure functions over getter output.

A push must not make things worse: every planned BGP session that was established before the
change must be established again, every planned port that was up must be up, and every item of the
switch's one expectation (gpufabric/verify/expect.py) its running configuration met before must still be
met, compared by the comparison verify and validate run. Sessions that were down before (a first rollout,
peers not configured yet) are not held against the change, nor is an item the switch already missed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from gpufabric.config.context import LinkIndex
from gpufabric.fleet.context import SwitchContexts, contexts_of
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.verify.expect import SwitchExpectation, compare, expect
from gpufabric.verify.running.qos_map import running_facts

HELD_PORTS = ("fabric", "host", "edge", "peer")  # the ports a change must not take down


@dataclass(frozen=True)
class Expectation:
    device: str
    peers: dict[str, int] = field(default_factory=dict)  # session key (interface or address) -> planned ASN
    ports: tuple[str, ...] = ()
    want: SwitchExpectation | None = None  # what its running configuration must say; None: not read
    # The last running configuration held to `want` (its digest) and what it missed: a push polls a switch a
    # few times while its change settles and reads the same text each time, parsed and compared once.
    last_read: dict[bytes, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def reads_running(self) -> bool:
        return self.want is not None and bool(platform(self.want.platform).facts.running_facts)


def of(want: SwitchExpectation) -> Expectation:
    """Push's view of a switch's one expectation: its sessions and the ports it holds up."""
    peers = {s.key: s.remote_asn for s in want.sessions}
    return Expectation(want.device, peers, tuple(p.name for p in want.ports if p.kind in HELD_PORTS), want)


def expectations(
    plan: Plan, index: LinkIndex, names: list[str], *, contexts: SwitchContexts | None = None
) -> dict[str, Expectation]:
    known = contexts_of(plan, index, contexts)
    return {name: of(expect(known[name], plan.planes[known[name].device.plane].host_mtu)) for name in names}


@dataclass(frozen=True)
class Health:
    peers_up: frozenset[str]
    ports_up: frozenset[str]
    config_missed: frozenset[str] = frozenset()  # "check item" of each expectation the running config misses


def health(
    expect: Expectation, bgp: dict[str, Any], interfaces: dict[str, dict[str, Any]], running: str | None = None
) -> Health:
    """`running`: the running configuration's text, held to the expectation where given."""
    peers = bgp.get("global", {}).get("peers", {})
    up = {
        key
        for key, asn in expect.peers.items()
        if peers.get(key, {}).get("is_up") and int(peers[key].get("remote_as", 0)) == asn
    }
    ports = {p for p in expect.ports if interfaces.get(p, {}).get("is_up")}
    return Health(frozenset(up), frozenset(ports), config_missed(expect, running))


def sessions_now(conn: Any) -> dict[str, Any]:
    """The switch's BGP sessions, in NAPALM's `get_bgp_neighbors` shape, as a health check reads them: by the
    driver's `get_bgp_sessions` where it has one (one command where the full getter takes two; the router id
    it leaves out is not checked), else by the full getter."""
    read = getattr(type(conn), "get_bgp_sessions", None)
    return dict(read(conn)) if read is not None else dict(conn.get_bgp_neighbors())


def ports_now(conn: Any) -> dict[str, dict[str, Any]]:
    """Each port's `is_up` and `mtu`, in NAPALM's `get_interfaces` shape, as a health check or validate reads
    them: by the driver's `get_port_states` where it has one (one command where the full getter takes two;
    the descriptions and speeds it leaves out are not checked), else by the full getter."""
    read = getattr(type(conn), "get_port_states", None)
    return dict(read(conn)) if read is not None else dict(conn.get_interfaces())


def config_missed(expect: Expectation, running: str | None) -> frozenset[str]:
    """The items of the switch's expectation its running configuration misses, by the one comparison."""
    want = expect.want
    if want is None or running is None:
        return frozenset()
    key = hashlib.blake2b(running.encode(), digest_size=16).digest()
    known = expect.last_read.get(key)
    if known is not None:
        return known
    facts = running_facts(want.platform, running)
    if facts is None:
        return frozenset()
    read = platform(want.platform).facts.running_facts
    missed = frozenset(f"{o.check} {o.item}" for o in compare(want, facts, read, failing_only=True))
    expect.last_read.clear()  # one text kept: the switch's configuration as last read
    expect.last_read[key] = missed
    return missed


def regressions(expect: Expectation, before: Health, after: Health) -> list[str]:
    problems = [
        f"BGP session {key} (AS {expect.peers[key]}) did not re-establish"
        for key in sorted(before.peers_up - after.peers_up)
    ]
    problems += [f"port {port} went down" for port in sorted(before.ports_up - after.ports_up)]
    problems += [
        f"{missed}: the running configuration no longer says what the plan does"
        for missed in sorted(after.config_missed - before.config_missed)
    ]
    return problems
