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

gnmic names a streamed value after its path (`interfaces_interface_state_counters_in_octets{interface_name=..,
source=..}`), which neither the dashboard nor the alert rules know. The configuration therefore carries one
event processor (gnmic's `event-jq`, a jq program over each notification's events, in gnmic's documented
event format) that renames every value the exporter also reads to the exporter's metric name and labels it
as the exporter does, from the plan: the switch's plane, role, port, peer, rail and unit, a session's peer
device. Values the plan does not name (an unplanned port, a counter the exporter has no metric for) are
dropped. The same dashboard and rules then work on either path.

Nothing from the intent reaches a path unchecked: port names and session keys must match a plain
pattern (names and addresses), else the switch's subscription says which one was refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from gpufabric.errors import GpufabricError
from gpufabric.outputs import json_dumps
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
    ports: dict[str, dict[str, str]] = field(default_factory=dict)  # port -> labels beyond the switch's
    sessions: dict[str, str] = field(default_factory=dict)  # session key -> peer switch


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
        streams.append(
            GnmiTarget(t.device, t.platform, f"{host}:{port}", paths(t), t.labels, dict(t.ports), dict(t.sessions))
        )
    return streams, left


# The leaves the exporter also reads (module prefixes stripped, keys dropped, as gnmic's event names them):
# leaf -> (what keys it: a port or a BGP session, the exporter's metric, labels it adds, the value meaning 1).
PORT = "/interfaces/interface/state"
QUEUE = "/qos/interfaces/interface/output/queues/queue/state"
SESSION = "/network-instances/network-instance/protocols/protocol/bgp/neighbors/neighbor/state"
LEAVES: dict[str, dict[str, object]] = {
    f"{PORT}/oper-status": {"key": "port", "metric": "gpufabric_link_up", "up": "UP"},
    f"{PORT}/counters/carrier-transitions": {"key": "port", "metric": "gpufabric_link_carrier_changes_total"},
    **{
        f"{PORT}/counters/{way}-{what}": {
            "key": "port",
            "metric": f"gpufabric_interface_{metric}_total",
            "labels": {"direction": direction},
        }
        for way, direction in (("in", "rx"), ("out", "tx"))
        for what, metric in (("octets", "octets"), ("errors", "errors"), ("discards", "discards"))
    },
    f"{QUEUE}/dropped-pkts": {"key": "port", "metric": "gpufabric_queue_dropped_packets_total", "queue": True},
    f"{SESSION}/session-state": {"key": "session", "metric": "gpufabric_bgp_session_up", "up": "ESTABLISHED"},
}

# gnmic's event-jq hands the program the events of one notification as an array and takes back an array.
# Each value becomes an event of its own (the exporter's metrics differ per value: direction, name); the
# tags gnmic made (source, subscription-name, path keys) are replaced by the plan's labels. Written for
# the jq language both gnmic's gojq and jq 1.6 run.
_PROGRAM = """{"plan": %s, "leaves": %s} as $g
| [ .[]
    | . as $e
    | ($e.tags["subscription-name"] // "") as $device
    | select($g.plan | has($device))
    | $g.plan[$device] as $sw
    | ($e.values // {} | to_entries[]) as $v
    | ($v.key | split("/") | map(select(. != "") | sub("^[^:]*:"; "")) | "/" + join("/")) as $leaf
    | select($g.leaves | has($leaf))
    | $g.leaves[$leaf] as $m
    | (if $m.key == "port"
       then ($e.tags["interface_name"] // $e.tags["interface_interface-id"] // "") as $port
            | select($sw.ports | has($port))
            | $sw.labels + $sw.ports[$port] + {"port": $port}
       else ($e.tags["neighbor_neighbor-address"] // "") as $peer
            | select($sw.sessions | has($peer))
            | $sw.labels + {"peer": $peer, "peer_device": $sw.sessions[$peer]}
       end) as $labels
    | (if $m.queue then {"queue": ($e.tags["queue_name"] // "")} else {} end) as $queue
    | {"name": $e.name, "timestamp": $e.timestamp,
       "tags": ($labels + ($m.labels // {}) + $queue),
       "values": {($m.metric): (if $m.up then (if $v.value == $m.up then 1 else 0 end) else $v.value end)}}
  ]"""

PROCESSOR = "gpufabric-plan-labels"


def jq_program(targets: list[GnmiTarget]) -> str:
    """The event-jq expression: the plan's labels per switch, port and session, as JSON literals."""
    plan = {
        t.device: {"labels": t.labels, "ports": t.ports, "sessions": t.sessions}
        for t in sorted(targets, key=lambda t: t.device)
    }

    def compact(value: object) -> str:
        return json_dumps(value, separators=(",", ":"), sort_keys=True)  # ASCII: json escapes the rest

    # One line per switch and per leaf: a reviewer (and a diff) finds a switch's labels on its own line.
    plan_text = "{\n" + ",\n".join(f"  {compact(k)}: {compact(v)}" for k, v in plan.items()) + "\n}"
    leaves = "{\n" + ",\n".join(f"  {compact(k)}: {compact(v)}" for k, v in sorted(LEAVES.items())) + "\n}"
    return _PROGRAM % (plan_text, leaves)


class _BlockDumper(yaml.SafeDumper):
    """PyYAML's safe dumper writing text of several lines as a literal block (the jq program stays readable)."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _text)


def gnmic_yaml(config: dict[str, object]) -> str:
    return yaml.dump(config, Dumper=_BlockDumper, sort_keys=False, width=400)


def gnmic_config(targets: list[GnmiTarget], *, interval: str = "30s", listen: str = ":9804") -> dict[str, object]:
    """gnmic's configuration file: a target per switch with its own subscription (its planned paths,
    sampled every `interval`), and a Prometheus output whose metrics are the exporter's (the event processor
    above). The login is not written: gnmic reads it from GNMIC_USERNAME and GNMIC_PASSWORD (or
    --username/--password)."""
    return {
        "skip-verify": False,
        "encoding": "json_ietf",
        "targets": {t.device: {"address": t.address, "subscriptions": [t.device]} for t in targets},
        "subscriptions": {
            t.device: {"paths": list(t.paths), "mode": "stream", "stream-mode": "sample", "sample-interval": interval}
            for t in targets
        },
        "processors": {PROCESSOR: {"event-jq": {"expression": jq_program(targets)}}},
        "outputs": {
            "prometheus": {
                "type": "prometheus",
                "listen": listen,
                "path": "/metrics",
                "metric-prefix": "",
                "append-subscription-name": False,
                "event-processors": [PROCESSOR],
            }
        },
    }
