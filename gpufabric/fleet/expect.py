"""What must hold on a switch after a change: the post-change checks, as pure functions over getter output.

A push must not make things worse: every planned BGP session that was established before the
change must be established again, and every planned port that was up must be up. Sessions that
were down before (a first rollout, peers not configured yet) are not held against the change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpufabric.config.context import LinkIndex
from gpufabric.fleet.context import SwitchContexts, contexts_of
from gpufabric.plan.model import Plan


@dataclass(frozen=True)
class Expectation:
    device: str
    peers: dict[str, int] = field(default_factory=dict)  # session key (interface or address) -> planned ASN
    ports: tuple[str, ...] = ()


def expectations(
    plan: Plan, index: LinkIndex, names: list[str], *, contexts: SwitchContexts | None = None
) -> dict[str, Expectation]:
    known = contexts_of(plan, index, contexts)
    out = {}
    for name in names:
        ctx = known[name]
        peers = {n.key: n.remote_asn for n in ctx.neighbors}
        ports = tuple(p.name for p in ctx.ports if p.kind in ("fabric", "host", "edge", "peer"))
        out[name] = Expectation(name, peers, ports)
    return out


@dataclass(frozen=True)
class Health:
    peers_up: frozenset[str]
    ports_up: frozenset[str]


def health(expect: Expectation, bgp: dict[str, Any], interfaces: dict[str, dict[str, Any]]) -> Health:
    peers = bgp.get("global", {}).get("peers", {})
    up = {
        key
        for key, asn in expect.peers.items()
        if peers.get(key, {}).get("is_up") and int(peers[key].get("remote_as", 0)) == asn
    }
    ports = {p for p in expect.ports if interfaces.get(p, {}).get("is_up")}
    return Health(frozenset(up), frozenset(ports))


def regressions(expect: Expectation, before: Health, after: Health) -> list[str]:
    problems = [
        f"BGP session {key} (AS {expect.peers[key]}) did not re-establish"
        for key in sorted(before.peers_up - after.peers_up)
    ]
    problems += [f"port {port} went down" for port in sorted(before.ports_up - after.ports_up)]
    return problems
