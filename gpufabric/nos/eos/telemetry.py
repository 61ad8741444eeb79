"""Arista EOS lossless counters, read through NAPALM's `cli` (eAPI or SSH alike).

- `show priority-flow-control counters`: a table with a `Port RxPfc TxPfc` header and one row per
  port by its short name (`Et1/1`): PFC frames received and sent, summed over the priorities.
- `show priority-flow-control counters watchdog | json`: `{"interfaces": {NAME: {"txQueues":
  {QUEUE: {"stuckCount": N, "recoveryCount": N}}}}}`. A port appears only after its first watchdog
  event, so a port that is missing has had none.

EOS's ECN and per-queue drop counters are not read yet.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gpufabric.drivers.answers import as_dict, as_int, as_list, as_str, key
from gpufabric.telemetry.buffers import EGRESS, PortBuffers, QueueBuffer, answer_json, byte_count, merge
from gpufabric.telemetry.optics import Lane, Optics
from gpufabric.verify.running.ethtool import PortCounters

PFC_COUNTERS = "show priority-flow-control counters"
PFC_WATCHDOG = "show priority-flow-control counters watchdog | json"
_ROW = re.compile(r"(?P<port>(?:Et|Ethernet)\d+(?:/\d+)*)\s+(?P<rx>\d+)\s+(?P<tx>\d+)\s*")


def long_name(port: str) -> str:
    """`Et1/1` -> `Ethernet1/1`, the name the configuration and the plan use."""
    return "Ethernet" + port[2:] if port.startswith("Et") and not port.startswith("Ethernet") else port


def parse_pfc(text: str) -> dict[str, tuple[int, int]]:
    """Port -> (received, sent) from the `Port RxPfc TxPfc` table; lines before its header are skipped."""
    found: dict[str, tuple[int, int]] = {}
    in_table = False
    for line in text.splitlines():
        if re.match(r"\s*Port\s+RxPfc\s+TxPfc\b", line, re.I):
            in_table = True
        elif in_table and (m := _ROW.fullmatch(line.strip())):
            found[long_name(m["port"])] = (int(m["rx"]), int(m["tx"]))
    return found


def parse_watchdog(doc: dict[str, Any]) -> dict[str, int]:
    """Port -> queues found stuck (watchdog trips), summed over its transmit queues."""
    out: dict[str, int] = {}
    for port, data in (doc.get("interfaces") or {}).items():
        queues = (data or {}).get("txQueues") or {}
        out[long_name(port)] = sum(int((q or {}).get("stuckCount", 0)) for q in queues.values())
    return out


def read_lossless(conn: Any, ports: list[str]) -> dict[str, PortCounters]:
    answers = conn.cli([PFC_COUNTERS, PFC_WATCHDOG])
    pfc = parse_pfc(answers.get(PFC_COUNTERS, ""))
    watchdog = parse_watchdog(json.loads(answers.get(PFC_WATCHDOG) or "{}"))
    out = {}
    for port in ports:
        out[port] = counters = PortCounters.from_pfc_totals(pfc, port)
        if port in pfc:
            counters.storm = {"watchdog": watchdog.get(port, 0)}
    return out


# `show interfaces transceiver | json`: {"interfaces": {NAME: {"temperature": C, "txPower": dBm, "rxPower":
# dBm, "txBias": mA, ...}}}, one entry per interface whose transceiver has digital diagnostics (the fields
# NAPALM's EOS `get_optics` reads too). FEC counters are not read yet.
TRANSCEIVER = "show interfaces transceiver | json"


def parse_transceivers(doc: dict[str, Any]) -> dict[str, Optics]:
    """Interface (long name) -> its module's temperature and power, as one lane."""
    out: dict[str, Optics] = {}
    for name, data in (doc.get("interfaces") or {}).items():
        if not isinstance(data, dict):
            continue
        found = Optics(temperature_c=_number(data.get("temperature")))
        lane = Lane(_number(data.get("rxPower")), _number(data.get("txPower")), _number(data.get("txBias")))
        if lane != Lane():
            found.lanes[1] = lane
        out[long_name(name)] = found
    return out


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def read_optics(conn: Any, ports: list[str]) -> dict[str, Optics]:
    answers = conn.cli([TRANSCEIVER])
    found = parse_transceivers(json.loads(answers.get(TRANSCEIVER) or "{}"))
    return {port: found[port] for port in ports if port in found}


# -- buffers: LANZ (Latency Analyzer) ---------------------------------------------------------------
# `show queue-monitor length limit 60 seconds | json` (Arista EOS User Manual, "Latency Analyzer (LANZ)":
# `show queue-monitor length`; the JSON keys are those of Arista's goeapi `ShowQueueMonitor`): `{"lanzEnabled":
# bool, "entryList": [{"interface": "Et1/1", "trafficClass": 3, "queueLength": BYTES, "entryType": "S"|"U"|"E"|
# "P", "entryTime": ...}]}`, the congestion records of the last 60 s. A queue with no record in the window stayed
# under LANZ's threshold: its watermark there is reported as 0. With LANZ off the switch reports nothing.
LANZ_WINDOW_SECONDS = 60
LANZ = f"show queue-monitor length limit {LANZ_WINDOW_SECONDS} seconds | json"


def parse_lanz(text: str) -> dict[str, PortBuffers] | None:
    """Port (long name) -> (traffic class, egress) -> the longest queue LANZ recorded; None when LANZ is off
    or the switch answered nothing (nothing is known then, not a quiet queue)."""
    if not text.strip():
        return None
    doc = as_dict(answer_json(text, LANZ), LANZ)
    if doc.get("lanzEnabled") is False:
        return None
    found: dict[str, PortBuffers] = {}
    for i, item in enumerate(as_list(doc.get("entryList") or [], f"{LANZ} entryList")):
        entry = as_dict(item, f"entryList[{i}]")
        port = long_name(as_str(key(entry, "interface", f"entryList[{i}]"), f"entryList[{i}].interface"))
        tc = str(as_int(key(entry, "trafficClass", f"entryList[{i}]"), f"entryList[{i}].trafficClass"))
        length = byte_count(key(entry, "queueLength", f"entryList[{i}]"), f"entryList[{i}].queueLength")
        merge(found.setdefault(port, {}), (tc, EGRESS), QueueBuffer(None, float(length)))
    return found


def read_buffers(conn: Any, ports: list[str], queues: list[str]) -> dict[str, PortBuffers] | None:
    found = parse_lanz(conn.cli([LANZ]).get(LANZ, ""))
    if found is None:
        return None
    out: dict[str, PortBuffers] = {}
    for port in ports:
        seen = found.get(port, {})
        out[port] = {(q, EGRESS): seen.get((q, EGRESS), QueueBuffer(None, 0.0)) for q in queues}
    return out
