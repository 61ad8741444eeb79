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
