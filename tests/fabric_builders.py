"""Intents for textbook and reference designs, written as data so the tests state the design, not YAML."""

from __future__ import annotations

from typing import Any

CREDS = {"switches": {"username": "admin", "password": {"env": "PW"}}, "hosts": {"username": "root"}}


def role(ports: int, speed: str, platform: str = "cumulus", **kw: Any) -> dict[str, Any]:
    return {"platform": platform, "model": "test", "ports": ports, "port_speed": speed, **kw}


def single_plane(
    servers: int,
    nics: int,
    switches: dict[str, Any],
    *,
    topology: str = "rail-optimized",
    tiers: int = 2,
    nic_speed: str = "400G",
    **plane: Any,
) -> dict[str, Any]:
    """A compute-only cluster: `servers` nodes with `nics` NICs each."""
    return {
        "fabric": {"name": "t"},
        "server_groups": [
            {
                "name": "gpu",
                "count": servers,
                "naming": "n{index:05d}",
                "gpus": 8,
                "nics": {"compute": {"speed": nic_speed, "interfaces": [f"e{i}" for i in range(nics)]}},
            }
        ],
        "planes": {
            "compute": {
                "topology": topology,
                "tiers": tiers,
                "prefix": "c",
                "switches": switches,
                "routing": {"asn_pool": "4200000000-4200999999"},
                "addressing": {"loopbacks": "10.0.0.0/16", "hosts": "10.128.0.0/9", "p2p": "10.64.0.0/10"},
                **plane,
            }
        },
        "credentials": CREDS,
    }


def superpod(su: int) -> dict[str, Any]:
    """DGX SuperPOD H100 compute fabric: 32-node SUs, 8 rails, 64-port 400G switches."""
    return single_plane(32 * su, 8, {"leaf": role(64, "400G"), "spine": role(64, "400G")}, unit_nodes=32)


def kary_two_tier(k: int) -> dict[str, Any]:
    """k-ary fat tree, 2 tiers: k leaves with k/2 hosts each, k/2 spines; k^2/2 hosts."""
    return single_plane(
        k * k // 2, 1, {"leaf": role(k, "100G"), "spine": role(k, "100G")}, topology="clos", nic_speed="100G"
    )


def kary_three_tier(k: int) -> dict[str, Any]:
    """k-ary fat tree, 3 tiers: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores; k^3/4 hosts."""
    return single_plane(
        k**3 // 4,
        1,
        {"leaf": role(k, "100G"), "spine": role(k, "100G"), "superspine": role(k, "100G")},
        topology="clos",
        tiers=3,
        nic_speed="100G",
    )
