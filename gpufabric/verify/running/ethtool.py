"""Counters in `ethtool -S` text and in RDMA `hw_counters`, by the names the drivers give them.

ConnectX (mlx5): `rx_prio3_pause`, `tx_prio3_pause`, `tx_pause_storm_warning_events`,
`tx_pause_storm_error_events`; its RDMA port counters (`/sys/class/infiniband/mlx5_N/ports/1/
hw_counters/`): `np_cnp_sent`, `rp_cnp_handled`, `np_ecn_marked_roce_packets`, `out_of_sequence`.
Spectrum under Linux (mlxsw) names per-priority pauses `rx_pause_prio_3` / `tx_pause_prio_3`;
Cumulus Linux's switchd `HwIfInPfc3Pkt` / `HwIfOutPfc3Pkt`, and per-queue WRED drops
`HwIfOutQ3WredDrops`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PAUSE = re.compile(r"(rx|tx)_(?:prio(\d)_pause|pause_prio_(\d))")
# Cumulus Linux on Spectrum (switchd's counters): HwIfInPfc3Pkt / HwIfOutPfc3Pkt, HwIfOutQ3WredDrops.
_CUMULUS_PAUSE = re.compile(r"HwIf(In|Out)Pfc(\d)Pkt")
_CUMULUS_DROPS = re.compile(r"HwIfOutQ(\d)WredDrops")
_STORM = re.compile(r"tx_pause_storm_(warning|error)_events")
_ECN = re.compile(r"ecn_marked(?:_tc_\d)?")
_HW = ("np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets", "out_of_sequence")


@dataclass(slots=True)
class PortCounters:
    pause: dict[tuple[int, str], int] = field(default_factory=dict)  # (priority, rx|tx) -> frames
    pause_all: dict[str, int] = field(default_factory=dict)  # rx|tx -> frames, where the OS sums the priorities
    storm: dict[str, int] = field(default_factory=dict)  # warning|error -> events
    ecn_marked: int | None = None
    rdma: dict[str, int] = field(default_factory=dict)  # hw_counters by name
    queue_drops: dict[str, int] = field(default_factory=dict)  # egress queue (or QoS group) -> packets dropped

    @classmethod
    def from_pfc_totals(cls, totals: dict[str, tuple[int, int]], port: str) -> PortCounters:
        """A port's counters from an OS that reports PFC frames (received, sent) summed over the priorities."""
        found = cls()
        if port in totals:
            found.pause_all = {"rx": totals[port][0], "tx": totals[port][1]}
        return found

    def received_pauses(self) -> int | None:
        """PFC pause frames received over every priority, or None where the port reports none."""
        per_priority = [n for (_, d), n in self.pause.items() if d == "rx"]
        if per_priority:
            return sum(per_priority)
        return self.pause_all.get("rx")


def parse_ethtool(text: str) -> PortCounters:
    """`ethtool -S IF`: a `NIC statistics:` line, then `     name: value` per counter."""
    found = PortCounters()
    for line in text.splitlines():
        name, sep, value = line.strip().partition(":")
        if not sep or not value.strip().lstrip("-").isdigit():
            continue
        count = int(value)
        if m := _PAUSE.fullmatch(name):
            prio = int(m.group(2) or m.group(3))
            found.pause[(prio, m.group(1))] = count
        elif m := _CUMULUS_PAUSE.fullmatch(name):
            found.pause[(int(m.group(2)), "rx" if m.group(1) == "In" else "tx")] = count
        elif m := _CUMULUS_DROPS.fullmatch(name):
            found.queue_drops[m.group(1)] = count
        elif m := _STORM.fullmatch(name):
            found.storm[m.group(1)] = count
        elif _ECN.fullmatch(name):
            found.ecn_marked = (found.ecn_marked or 0) + count
    return found


def parse_hw_counters(text: str) -> dict[str, dict[str, int]]:
    """`grep -H . /sys/class/infiniband/*/ports/*/hw_counters/NAME` lines -> {rdma device: {name: value}}."""
    found: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        path, sep, value = line.rpartition(":")
        parts = path.split("/")
        if not sep or len(parts) < 8 or parts[-2] != "hw_counters" or parts[-1] not in _HW:
            continue
        if value.strip().isdigit():
            found.setdefault(parts[4], {})[parts[-1]] = int(value)
    return found
