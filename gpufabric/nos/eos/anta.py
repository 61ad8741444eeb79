"""The ANTA catalog of one EOS switch: the tests of Arista's network test framework whose inputs the plan knows.

ANTA (Arista Network Test Automation) runs a catalog of tests against live EOS switches over eAPI. The
catalog here asks what the plan promised and nothing it cannot know:

- `VerifyLLDPNeighbors`: every planned switch-to-switch cable, as LLDP sees it from this end (ports toward
  servers are left out: a server answers LLDP only where its own agent runs);
- `VerifyInterfacesStatus`: every planned port up;
- `VerifyInterfacesSpeed`: every planned port at its planned rate and lanes (a split cage's port takes
  8 / split of its 8 electrical lanes);
- `VerifyL3MTU`: the routed ports' MTU (the management and loopback interfaces are not the plan's);
- `VerifyBGPPeerSession`: every planned BGP session established, in the default VRF and, on a converged
  plane's switch, in each carried plane's VRF;
- `VerifyBFDPeersHealth` where the plane runs BFD, `VerifyMlagStatus` on an MLAG leaf, `VerifyNTP` where
  the management plan names NTP servers.

Test names and input fields follow ANTA's catalog reference (anta.arista.com, "Test Catalog"); the tests
judge the result with ANTA's own catalog parser.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpufabric.config.context import DeviceContext

CAGE_LANES = 8
CABLED = ("fabric", "peer")  # ports whose far end is one of the plan's switches (an edge router names itself)


def catalog(ctx: DeviceContext) -> dict[str, Any]:
    """ANTA's catalog layout: test module -> list of {TestName: inputs}."""
    out: dict[str, Any] = {
        "anta.tests.connectivity": _lldp(ctx),
        "anta.tests.interfaces": _interfaces(ctx),
        "anta.tests.routing": {"bgp": _bgp(ctx)},
    }
    if ctx.bfd is not None and ctx.bfd.enabled and any(n.kind == "fabric" for n in ctx.neighbors):
        out["anta.tests.bfd"] = [{"VerifyBFDPeersHealth": {}}]
    if ctx.mlag is not None:
        out["anta.tests.mlag"] = [{"VerifyMlagStatus": None}]
    if ctx.mgmt.ntp:
        out["anta.tests.system"] = [{"VerifyNTP": None}]
    return {k: v for k, v in out.items() if v}


def _lldp(ctx: DeviceContext) -> list[dict[str, Any]]:
    neighbors = [
        {"port": p.name, "neighbor_device": p.peer, "neighbor_port": p.peer_port}
        for p in ctx.ports
        if p.kind in CABLED and p.peer and p.peer_port
    ]
    return [{"VerifyLLDPNeighbors": {"require_fqdn": False, "neighbors": neighbors}}] if neighbors else []


def _interfaces(ctx: DeviceContext) -> list[dict[str, Any]]:
    if not ctx.ports:
        return []
    tests: list[dict[str, Any]] = [
        {"VerifyInterfacesStatus": {"interfaces": [{"name": p.name, "status": "up"} for p in ctx.ports]}},
        {
            "VerifyInterfacesSpeed": {
                "interfaces": [
                    {"name": p.name, "auto": False, "speed": p.speed, "lanes": CAGE_LANES // max(p.split, 1)}
                    for p in ctx.ports
                ]
            }
        },
    ]
    routed = [p for p in ctx.ports if p.address]
    if routed:
        usual = Counter(p.mtu for p in routed).most_common(1)[0][0]
        mtu: dict[str, Any] = {"mtu": usual, "ignored_interfaces": ["Management", "Loopback"]}
        other = [{p.name: p.mtu} for p in routed if p.mtu != usual]
        if other:
            mtu["specific_mtu"] = other
        tests.append({"VerifyL3MTU": mtu})
    return tests


def _bgp(ctx: DeviceContext) -> list[dict[str, Any]]:
    peers: list[dict[str, Any]] = []
    for n in ctx.neighbors:
        peer: dict[str, Any] = {"vrf": "default", "description": f"{n.peer} (AS {n.remote_asn})"}
        if n.address:
            peer["peer_address"] = n.address
        elif n.interface:
            peer["interface"] = n.interface
        else:
            continue
        peers.append(peer)
    for v in ctx.converged.vrfs if ctx.converged else []:  # a carried plane's sessions, in its VRF
        peers += [
            {"vrf": v.vrf, "description": f"{n.peer} (AS {n.remote_asn})", "peer_address": n.address}
            for n in v.neighbors
            if n.address
        ]
    return [{"VerifyBGPPeerSession": {"bgp_peers": peers}}] if peers else []
