"""What validate checks of a converged plane's carried planes on a running switch beyond its configuration (which
the one comparison holds to the switch's expectation, gpufabric/verify/expect.py): each VRF session's state from
NAPALM's `get_bgp_neighbors` (its answer keys sessions by VRF)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpufabric.verify.expect import Session
from gpufabric.verify.running.results import CheckResult, result


def carried_sessions(
    device: str, sessions: tuple[tuple[str, Session], ...], neighbors: dict[str, Any]
) -> Iterator[CheckResult]:
    """Each VRF session Established with the planned ASN, from `get_bgp_neighbors` (one entry per VRF)."""
    for vrf, s in sessions:
        got = neighbors.get(vrf, {}).get("peers", {}).get(s.key)
        observed = "absent" if got is None else f"{'Established' if got['is_up'] else 'down'}, AS {got['remote_as']}"
        item = f"vrf {vrf} {s.key} ({s.peer})"
        yield result("carried-bgp-session", device, item, f"Established, AS {s.remote_asn}", observed)
