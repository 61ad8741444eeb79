"""What validate checks of a converged plane's carried planes on a running switch: the configuration it runs
(each tagged subinterface in its VRF, each VRF's sessions, each class's share) read by the platform's own
reader, and each VRF session's state from NAPALM's `get_bgp_neighbors` (its answer keys sessions by VRF)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gpufabric.config.context import DeviceContext
from gpufabric.platforms import platform
from gpufabric.verify.running import qos_map
from gpufabric.verify.running.results import CheckResult, result


@dataclass(frozen=True)
class CarriedPlanned:
    """A switch's carried planes as the plan has them."""

    ports: tuple[tuple[str, str, int, str | None], ...]  # (subinterface, VRF, VLAN, address or None)
    sessions: tuple[tuple[str, str, str, int], ...]  # (VRF, session key, peer switch, peer ASN)
    shares: tuple[tuple[str, int, int], ...]  # (class, traffic class, guaranteed percent)


def carried_planned(ctx: DeviceContext) -> CarriedPlanned | None:
    conv = ctx.converged
    if conv is None:
        return None
    return CarriedPlanned(
        ports=tuple((s.name, v.vrf, s.vlan, s.address) for v in conv.vrfs for s in v.ports),
        sessions=tuple((v.vrf, n.key, n.peer, n.remote_asn) for v in conv.vrfs for n in v.neighbors),
        shares=tuple(
            (c.name, c.priority, c.bandwidth_percent)
            for c in conv.classes
            if c.bandwidth_percent is not None and platform(ctx.device.platform).lossless_qos()
        ),
    )


def carried_config(device: str, platform: str, want: CarriedPlanned | None, running: str) -> Iterator[CheckResult]:
    """The carried planes in the running configuration, item by item."""
    if want is None:
        return
    facts = qos_map.running_facts(platform, running)
    if facts is None:
        return
    for name, vrf, vlan, address in want.ports:
        got = facts.subinterfaces.get(name)
        observed = "absent" if got is None else _port(*got.value)
        yield result("carried-port", device, name, _port(vrf, vlan, address), observed)
    for vrf, key, peer, asn in want.sessions:
        got = facts.vrf_neighbors.get(f"{vrf} {key}")
        observed = "absent" if got is None else f"AS {got.value}"
        yield result("carried-bgp-config", device, f"vrf {vrf} {key} ({peer})", f"AS {asn}", observed)
    for name, tc, percent in want.shares:
        got = facts.shares.get(tc)
        observed = "no share" if got is None else f"{got.value}%"
        yield result("carried-share", device, f"{name} class (traffic class {tc})", f"{percent}%", observed)


def carried_sessions(device: str, want: CarriedPlanned | None, neighbors: dict[str, Any]) -> Iterator[CheckResult]:
    """Each VRF session Established with the planned ASN, from `get_bgp_neighbors` (one entry per VRF)."""
    if want is None:
        return
    for vrf, key, peer, asn in want.sessions:
        got = neighbors.get(vrf, {}).get("peers", {}).get(key)
        observed = "absent" if got is None else f"{'Established' if got['is_up'] else 'down'}, AS {got['remote_as']}"
        yield result("carried-bgp-session", device, f"vrf {vrf} {key} ({peer})", f"Established, AS {asn}", observed)


def _port(vrf: str, vlan: int, address: str | None) -> str:
    return f"vrf {vrf} vlan {vlan} {address or 'unnumbered'}"
