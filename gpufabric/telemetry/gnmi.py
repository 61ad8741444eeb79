"""gNMI subscriptions from the plan, for an OpenConfig collector (gnmic): per switch whose OS streams,
its gNMI address and the OpenConfig paths of what the plan expects there: counters and state of every
planned port, the state of every planned BGP session, and the egress queues of the planned ports.

Which OS streams, on which port (the vendors' defaults, the same the management ACLs open,
gpufabric/config/policy.py; each platform's spec holds its `gnmi_port`): Arista EOS
`management api gnmi` on 6030; Cisco NX-OS `feature grpc`
on 9339 (releases before 10.x: 50051); SONiC's gnmi service, and NVIDIA
Cumulus Linux 5.x's gNMI server, on 9339. FRR on a Linux host has no gNMI server: it is left to the
SSH exporter. OpenConfig has no PFC model: PFC pause and watchdog counters stay with the exporter's
CLI readers (docs/telemetry.md).

Nothing from the intent reaches a path unchecked: port names and session keys must match a plain
pattern (names and addresses), else the switch's subscription says which one was refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpufabric.errors import GpufabricError
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.telemetry.targets import SwitchTarget, switch_targets


def gnmi_port(platform_name: str) -> int | None:
    """The platform's gNMI port, from its spec (None: it streams nothing)."""
    return platform(platform_name).facts.gnmi_port


_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./:-]{0,63}")
BGP = "/network-instances/network-instance[name=default]/protocols/protocol[identifier=BGP]/bgp/neighbors"


class GnmiError(ValueError, GpufabricError):
    """A port or session key that cannot go into a gNMI path as it is written."""


@dataclass(frozen=True)
class GnmiTarget:
    device: str
    platform: str
    address: str
    paths: tuple[str, ...]
    labels: dict[str, str] = field(default_factory=dict)


def _key(value: str, what: str, device: str) -> str:
    if _KEY.fullmatch(value) is None:
        raise GnmiError(f"{device}: {what} {value!r} cannot go into a gNMI path key")
    return value


def paths(t: SwitchTarget) -> tuple[str, ...]:
    """What the plan expects on one switch, as OpenConfig paths (keys from the plan, nothing guessed)."""
    out = []
    for port in sorted(t.ports):
        name = _key(port, "port", t.device)
        out += [
            f"/interfaces/interface[name={name}]/state/counters",
            f"/interfaces/interface[name={name}]/state/oper-status",
            f"/qos/interfaces/interface[interface-id={name}]/output/queues/queue/state",
        ]
    for key in sorted(t.sessions):  # a numbered session's peer address; an unnumbered one's interface
        out.append(f"{BGP}/neighbor[neighbor-address={_key(key, 'BGP session', t.device)}]/state/session-state")
    return tuple(out)


def gnmi_targets(plan: Plan, plane: str | None = None) -> tuple[list[GnmiTarget], list[str]]:
    """The switches that stream (with an address), and the names of those left to the SSH exporter."""
    streams, left = [], []
    for t in switch_targets(plan, plane):
        port = gnmi_port(t.platform)
        if port is None or t.address is None:
            left.append(t.device)
            continue
        host = f"[{t.address}]" if ":" in t.address else t.address
        streams.append(GnmiTarget(t.device, t.platform, f"{host}:{port}", paths(t), t.labels))
    return streams, left


def gnmic_config(targets: list[GnmiTarget], *, interval: str = "30s", listen: str = ":9804") -> dict[str, object]:
    """gnmic's configuration file: a target per switch with its own subscription (its planned paths,
    sampled every `interval`), and a Prometheus output. The login is not written: gnmic reads it from
    GNMIC_USERNAME and GNMIC_PASSWORD (or --username/--password)."""
    return {
        "skip-verify": False,
        "encoding": "json_ietf",
        "targets": {t.device: {"address": t.address, "subscriptions": [t.device]} for t in targets},
        "subscriptions": {
            t.device: {"paths": list(t.paths), "mode": "stream", "stream-mode": "sample", "sample-interval": interval}
            for t in targets
        },
        "outputs": {
            "prometheus": {
                "type": "prometheus",
                "listen": listen,
                "path": "/metrics",
            }
        },
    }
