"""After a push: wait until the fabric sessions it touched are established, and say how long it took.

A push confirms a switch when nothing got worse; a session to a switch of the last batch may still
be coming up when the push ends. Waiting here is what lets `validate` right after a push pass.
Only sessions between two switches of this push count: an edge router, or a switch not pushed,
is not this push's to wait for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from nornir.core import Nornir

from gpufabric.config.context import LinkIndex
from gpufabric.fleet.context import SwitchContexts, contexts_of
from gpufabric.fleet.runner import run_per_host
from gpufabric.plan.model import Plan
from nornir_tasks.push import sessions_down

POLL = 1.0


@dataclass
class Convergence:
    converged: bool
    seconds: float
    sessions: int
    down: dict[str, list[str]] = field(default_factory=dict)  # switch -> sessions still down


def fabric_sessions(
    plan: Plan, index: LinkIndex, names: list[str], *, contexts: SwitchContexts | None = None
) -> dict[str, dict[str, int]]:
    known = contexts_of(plan, index, contexts)
    pushed = set(names)
    out: dict[str, dict[str, int]] = {}
    for name in names:
        ctx = known[name]
        peers = {n.key: n.remote_asn for n in ctx.neighbors if n.kind == "fabric" and n.peer in pushed}
        if peers:
            out[name] = peers
    return out


def wait_converged(nr: Nornir, sessions: dict[str, dict[str, int]], timeout: float) -> Convergence:
    started = time.monotonic()
    total = sum(len(p) for p in sessions.values())
    pending = dict(sessions)
    down: dict[str, list[str]] = {}
    while True:
        found = run_per_host(nr, list(pending), sessions_down, peers=pending) if pending else {}
        down = {name: missing for name, missing in found.items() if missing}
        pending = {name: sessions[name] for name in down}
        elapsed = time.monotonic() - started
        if not down or elapsed >= timeout:
            return Convergence(not down, elapsed, total, down)
        time.sleep(POLL)
