"""Port counters of the planned switch ports (perfquery), their limits, and Prometheus metrics.

One `perfquery -l <lid> 255` per switch reads every port's PortCounters (the switch end of every
planned cable: every cable has one). The error counters have limits (0 by default: any symbol
error, link recovery or down, receive error or transmit discard on a planned port is named);
PortXmitWait, the time a port had data but no credits (congestion), is exported, not limited.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from gpufabric.ib.errors import fail
from gpufabric.ib.model import IbFabric, PortRef
from gpufabric.ib.results import Result, Runner
from gpufabric.ib.topology import Topology

ERROR_LIMITS: dict[str, int] = {
    "SymbolErrorCounter": 0,
    "LinkErrorRecoveryCounter": 0,
    "LinkDownedCounter": 0,
    "PortRcvErrors": 0,
    "PortXmitDiscards": 0,
}
EXPORTED = (*ERROR_LIMITS, "PortXmitWait")

_BLOCK = re.compile(r"^# Port counters: Lid (\d+) port (\d+)", re.MULTILINE)
_FIELD = re.compile(r"^(\w+):\.*(\d+)$", re.MULTILINE)
MAX_DIGITS = 20  # a 64-bit counter; Python refuses to convert 4,300 digits (a crash, not a finding)

Counters = dict[PortRef, dict[str, int]]


def parse(text: str, switch: str) -> Counters:
    """perfquery's blocks for one switch: port -> counter -> value."""
    out: Counters = {}
    starts = list(_BLOCK.finditer(text))
    for i, m in enumerate(starts):
        body = text[m.end() : starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        fields = _FIELD.findall(body)
        too_long = [n for n, v in fields if len(v) > MAX_DIGITS] + (["the port number"] if len(m[2]) > 3 else [])
        if too_long:
            raise fail(f"perfquery of {switch}", f"{too_long[0]} has more digits than a counter", "rerun perfquery")
        out[PortRef(switch, int(m[2]))] = {f: int(v) for f, v in fields}
    return out


def read(fabric: IbFabric, seen: Topology, run: Runner) -> Counters:
    by = seen.by_name()
    out: Counters = {}
    for switch in fabric.switches:
        lid = by[switch.name].lid
        if lid:
            out.update(parse(run(["perfquery", "-l", str(lid), "255"]), switch.name))
    return out


def _switch_ends(fabric: IbFabric) -> list[tuple[PortRef, PortRef, str]]:
    """(switch port, its peer, tier) for the switch end(s) of every planned cable."""
    out: list[tuple[PortRef, PortRef, str]] = []
    for cable in fabric.cables:
        for end, peer in ((cable.down, cable.up), (cable.up, cable.down)):
            if fabric.by_name[end.node].kind == "switch":
                out.append((end, peer, cable.tier))
    return out


def check(fabric: IbFabric, counters: Counters, limits: Mapping[str, int] = ERROR_LIMITS) -> list[Result]:
    out = []
    ends = _switch_ends(fabric)
    for end, peer, _ in ends:
        values = counters.get(end)
        if values is None:
            out.append(Result("counters", f"{end} (to {peer})", "counters read", "not read", False))
            continue
        for name, limit in limits.items():
            if values.get(name, 0) > limit:
                out.append(Result("counters", f"{end} (to {peer})", f"{name} <= {limit}", str(values[name]), False))
    if not out:
        out.append(Result("counters", f"{len(ends)} switch ports", "error counters within limits", "within", True))
    return out


def series(fabric: IbFabric, counters: Counters) -> list[tuple[dict[str, str], str, int]]:
    """(the plan's labels, counter, value) per planned switch port and exported counter: what `metrics` prints
    and `gpufabric telemetry serve` serves."""
    out: list[tuple[dict[str, str], str, int]] = []
    for end, peer, tier in _switch_ends(fabric):
        values = counters.get(end)
        if values is None:
            continue
        node = fabric.by_name[end.node]
        labels = {
            "fabric": fabric.design.name,
            "node": end.node,
            "role": node.role,
            "port": str(end.port),
            "peer": peer.node,
            "peer_port": str(peer.port),
            "tier": tier,
            "rail": str(node.rail or fabric.by_name[peer.node].rail or ""),
            "su": str(node.su or ""),
        }
        out += [(labels, name, values[name]) for name in EXPORTED if name in values]
    return out


def metrics(fabric: IbFabric, counters: Counters) -> str:
    """Prometheus exposition text: one series per planned switch port and counter, with plan labels."""
    lines = [
        "# HELP gpufabric_ib_port_counter A planned switch port's PortCounters value (perfquery), by counter.",
        "# TYPE gpufabric_ib_port_counter gauge",
    ]
    for labels, name, value in series(fabric, counters):
        text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
        lines.append(f'gpufabric_ib_port_counter{{{text},counter="{name}"}} {value}')
    return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
