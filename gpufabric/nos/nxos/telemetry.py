"""Cisco NX-OS lossless counters, read through NAPALM's `cli` with NX-OS's `| json` output.

NX-OS writes a table as `TABLE_x: {ROW_x: row}` where `row` is a list, or a single mapping when the
table has one row.

- `show interface priority-flow-control | json`: rows `ROW_pfc_interface` (under `TABLE_module` /
  `ROW_module` on modular releases, at the top on others) with `if_name_str`, `rx-stats` and
  `tx-stats`: PFC frames received and sent, summed over the priorities.
- `show queuing interface NAME | json`: under `ROW_queuing_interface` with `dir` `Egress`, a
  `ROW_qosgrp_egress_stats` per QoS group (`eq-qosgrp`) with entries `eq-stat-type`,
  `eq-stat-units` (`Pkts`, `Byts`) and the unicast, out-of-band flow-controlled unicast and
  multicast values. Entries whose type names a drop count as the group's drops; an `ECN` type, where
  the release reports one, as packets marked.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from gpufabric.drivers.answers import ShapeError, as_dict, as_int, as_str, key
from gpufabric.telemetry.buffers import EGRESS, PortBuffers, QueueBuffer, answer_json, byte_count, merge
from gpufabric.telemetry.optics import Optics
from gpufabric.verify.running.ethtool import PortCounters

PFC_COUNTERS = "show interface priority-flow-control | json"
_VALUES = ("eq-uc-stat-value", "eq-oobfc-uc-stat-value", "eq-mc-stat-value")


def rows(node: Any, table: str) -> Iterator[dict[str, Any]]:
    """The rows of `TABLE_<table>` in `node`, whether NX-OS wrote a list or a single row."""
    found = (node or {}).get(f"TABLE_{table}", {}) if isinstance(node, dict) else {}
    row = found.get(f"ROW_{table}", []) if isinstance(found, dict) else []
    yield from (r for r in (row if isinstance(row, list) else [row]) if isinstance(r, dict))


def _int(value: Any) -> int:
    text = str(value).strip()
    return int(text) if text.isdigit() else 0


def parse_pfc(doc: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Port -> (received, sent) PFC frames."""
    found: dict[str, tuple[int, int]] = {}
    holders = [doc, *rows(doc, "module")]
    for holder in holders:
        for row in rows(holder, "pfc_interface"):
            name = str(row.get("if_name_str", ""))
            if name:
                found[name] = (_int(row.get("rx-stats")), _int(row.get("tx-stats")))
    return found


def parse_queuing(doc: dict[str, Any]) -> tuple[dict[str, int], int | None]:
    """(QoS group -> egress packets dropped, packets ECN-marked or None) of one interface."""
    drops: dict[str, int] = {}
    marked: int | None = None
    for holder in [doc, *rows(doc, "module")]:
        for iface in rows(holder, "queuing_interface"):
            if str(iface.get("dir", "")).lower() != "egress":
                continue
            for group in rows(iface, "qosgrp_egress_stats"):
                name = str(group.get("eq-qosgrp", ""))
                for entry in rows(group, "qosgrp_egress_stats_entry"):
                    kind, units = str(entry.get("eq-stat-type", "")), str(entry.get("eq-stat-units", ""))
                    if units != "Pkts":
                        continue
                    value = sum(_int(entry.get(k, 0)) for k in _VALUES)
                    if "drop" in kind.lower():
                        drops[name] = drops.get(name, 0) + value
                    elif "ecn" in kind.lower():
                        marked = (marked or 0) + value
    return drops, marked


def queuing_command(port: str) -> str:
    return f"show queuing interface {port} | json"


def read_lossless(conn: Any, ports: list[str]) -> dict[str, PortCounters]:
    commands = [PFC_COUNTERS, *(queuing_command(p) for p in ports)]
    answers = conn.cli(commands)
    pfc = parse_pfc(json.loads(answers.get(PFC_COUNTERS) or "{}"))
    out = {}
    for port in ports:
        out[port] = counters = PortCounters.from_pfc_totals(pfc, port)
        queuing = json.loads(answers.get(queuing_command(port)) or "{}")
        counters.queue_drops, counters.ecn_marked = parse_queuing(queuing)
    return out


# `show interface transceiver details` (text: the release's `| json` keys are not relied on): a block
# per interface that starts with its name (`Ethernet1/1`), then `transceiver is present`, and per lane
# (`Lane Number:N Network Lane` before each on a multi-lane module) a table whose rows are `Temperature`,
# `Voltage`, `Current`, `Tx Power` and `Rx Power`: the measurement, then the alarm high and low and the
# warning high and low thresholds, each a number and its unit (C, V, mA, dBm), a flag (`--`, `++`) after
# a value beyond one. The rows NAPALM's NX-OS (SSH) `get_optics` reads too. FEC counters are not read yet.
TRANSCEIVER = "show interface transceiver details"
_BLOCK = re.compile(r"^(Ethernet\d+(?:/\d+)+)\s*$")
_LANE = re.compile(r"Lane Number:\s*(\d+)")
_ROW = re.compile(r"\s*(Temperature|Current|Tx Power|Rx Power)\s+(.*)")
_MEASURE = re.compile(r"(-?\d+(?:\.\d+)?)\s*(?:C|V|mA|dBm)(?=\s|$)")


def parse_transceivers(text: str) -> dict[str, Optics]:
    """Interface -> its module's temperature, per-lane power and bias, and the module's thresholds."""
    out: dict[str, Optics] = {}
    found: Optics | None = None
    lane = 1
    for line in text.splitlines():
        if m := _BLOCK.match(line.strip()):
            found, lane = out.setdefault(m.group(1), Optics()), 1
        elif found is None:
            continue
        elif m := _LANE.search(line):
            lane = int(m.group(1))
        elif (m := _ROW.fullmatch(line.rstrip())) and not m.group(2).strip().startswith("N/A"):
            _row(found, lane, m.group(1), [float(v) for v in _MEASURE.findall(m.group(2))])
    return {name: found for name, found in out.items() if not found.is_empty()}


def _row(found: Optics, lane: int, what: str, values: list[float]) -> None:
    """One table row: [measurement, alarm high, alarm low, warning high, warning low]."""
    if not values:
        return
    if what == "Temperature":
        found.temperature_c = values[0]
        if len(values) == 5:
            found.temperature_high_alarm_c, found.temperature_high_warning_c = values[1], values[3]
    elif what == "Rx Power":
        found.lane(lane).rx_dbm = values[0]
        if len(values) == 5:
            found.rx_low_alarm_dbm, found.rx_low_warning_dbm = values[2], values[4]
    elif what == "Tx Power":
        found.lane(lane).tx_dbm = values[0]
    else:
        found.lane(lane).bias_ma = values[0]


def read_optics(conn: Any, ports: list[str]) -> dict[str, Optics]:
    found = parse_transceivers(conn.cli([TRANSCEIVER]).get(TRANSCEIVER, ""))
    return {port: found[port] for port in ports if port in found}


# -- buffers: micro-burst detection --------------------------------------------------------------------
# `show queuing burst-detect detail | json` (Cisco Nexus 9000 Series NX-OS Quality of Service Configuration
# Guide, "Micro-Burst Monitoring"; keys from the NX-OS 9.3(x) Show Command Reference: `TABLE_instance` rows with
# `if-str`, `queue`, `start-time`, `peak`, `peak-time`, `end-depth`, `end-time`, `duration`): one record per burst
# above the queue's `burst-detect rise-threshold`, its peak depth in bytes, kept until `clear queuing
# burst-detect`. The reader keeps the bursts that peaked in the last BURST_WINDOW_SECONDS by the switch's clock,
# taken to be UTC and NTP-synchronised as the plan sets it; a queue without one stayed under its rise threshold:
# its watermark is reported as 0.
BURST_DETECT = "show queuing burst-detect detail | json"
BURST_WINDOW_SECONDS = 60
_BURST_TIME = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2}) (\d{1,2}):(\d{2}):(\d{2})(?:[:.](\d{1,9}))?")


def burst_time(text: str, what: str) -> float:
    """`2017/05/16 23:17:52:474178` (NX-OS's burst time: date, time, microseconds) -> POSIX seconds, as UTC."""
    m = _BURST_TIME.fullmatch(text.strip())
    if m is None:
        raise ShapeError(f"{what} is {text[:40]!r}, not a time like 2017/05/16 23:17:52:474178")
    try:
        year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
        when = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        raise ShapeError(f"{what} is {text[:40]!r}, not a valid date") from None
    return when.timestamp() + (int(m[7]) / 10 ** len(m[7]) if m[7] else 0.0)


def parse_bursts(text: str, now: float, window: float = BURST_WINDOW_SECONDS) -> dict[str, PortBuffers]:
    """Port -> (queue, egress) -> the deepest burst that peaked within `window` seconds before `now`."""
    doc = as_dict(answer_json(text, BURST_DETECT), BURST_DETECT)
    found: dict[str, PortBuffers] = {}
    for holder in [doc, *rows(doc, "module"), *rows(doc, "slot")]:
        for i, row in enumerate(rows(holder, "instance")):
            what = f"ROW_instance[{i}]"
            port = as_str(key(row, "if-str", what), f"{what}.if-str").strip()
            port = "Ethernet" + port[3:] if port.startswith("Eth") and not port.startswith("Ethernet") else port
            queue = str(as_int(key(row, "queue", what), f"{what}.queue"))
            peak = byte_count(key(row, "peak", what), f"{what}.peak")
            when = burst_time(as_str(key(row, "peak-time", what), f"{what}.peak-time"), f"{what}.peak-time")
            if now - window <= when <= now + window:  # a clock a little ahead still counts as now
                merge(found.setdefault(port, {}), (queue, EGRESS), QueueBuffer(None, float(peak)))
    return found


def read_buffers(
    conn: Any, ports: list[str], queues: list[str], now: float | None = None
) -> dict[str, PortBuffers] | None:
    text = conn.cli([BURST_DETECT]).get(BURST_DETECT, "")
    if not text.strip():  # no answer: nothing is known (not a quiet queue)
        return None
    found = parse_bursts(text, time.time() if now is None else now)
    return {
        port: {(q, EGRESS): found.get(port, {}).get((q, EGRESS), QueueBuffer(None, 0.0)) for q in queues}
        for port in ports
    }
