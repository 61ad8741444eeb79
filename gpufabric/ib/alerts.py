"""Prometheus alert rules for an InfiniBand fabric, over the series `gpufabric ib metrics` serves.

Each planned switch port's PortCounters are one gauge family, `gpufabric_ib_port_counter`, with the
counter's name in the `counter` label and the plan's labels (node, port, peer, peer port, tier, rail,
SU). The counters only grow until someone clears them (`perfquery -R`, after a repair), so the rules
watch their increase over a window, which a clear does not trip. The error counters alert on any
increase: a healthy InfiniBand link has none (validate holds them at 0 too). PortXmitWait, the
ticks a port had data and no credits to send it, is congestion: it alerts when it grows fast for a
while, which a burst does not.
"""

from __future__ import annotations

from dataclasses import dataclass

METRIC = "gpufabric_ib_port_counter"


@dataclass(frozen=True)
class IbThresholds:
    # PortXmitWait ticks a second on one port, sustained for `congestion_hold`. The tick's length is the
    # switch's own (IBTA leaves it to the implementation): tune it on the fabric from a quiet day's rate.
    xmit_wait_per_second: float = 100_000
    congestion_hold: str = "5m"
    window: str = "10m"  # how far back an error counter's increase is looked for


def _port(summary: str) -> str:
    return "{{ $labels.node }} port {{ $labels.port }} (to {{ $labels.peer }} port {{ $labels.peer_port }}): " + summary


def alert_group(t: IbThresholds = IbThresholds()) -> dict[str, object]:
    def on(counter: str) -> str:
        return f'increase({METRIC}{{counter="{counter}"}}[{t.window}]) > 0'

    def rule(name: str, expr: str, summary: str, severity: str, hold: str = "0s") -> dict[str, object]:
        return {
            "alert": name,
            "expr": expr,
            "for": hold,
            "labels": {"severity": severity},
            "annotations": {"summary": _port(summary)},
        }

    rules = [
        rule(
            "GpufabricIbSymbolErrors",
            on("SymbolErrorCounter"),
            "symbol errors: a cable, transceiver or port going bad",
            "warning",
        ),
        rule(
            "GpufabricIbLinkDowned",
            on("LinkDownedCounter"),
            "the link went down (and came back): a flap",
            "critical",
        ),
        rule(
            "GpufabricIbLinkErrorRecovery",
            on("LinkErrorRecoveryCounter"),
            "the link retrained to recover from errors",
            "warning",
        ),
        rule("GpufabricIbReceiveErrors", on("PortRcvErrors"), "packets received with errors", "warning"),
        rule(
            "GpufabricIbTransmitDiscards",
            on("PortXmitDiscards"),
            "packets discarded for transmit (a port down or stuck on the path)",
            "critical",
        ),
        rule(
            "GpufabricIbCongestion",
            f'rate({METRIC}{{counter="PortXmitWait"}}[1m]) > {t.xmit_wait_per_second:g}',
            "waits for credits {{ $value | humanize }} ticks/s: congestion downstream",
            "warning",
            hold=t.congestion_hold,
        ),
    ]
    return {"name": "gpufabric-infiniband", "rules": rules}
