"""Cumulus Linux buffer occupancy, read through NVUE (the driver's `cli` runs `nv ...` commands).

`nv show interface <port> qos buffer` (NVIDIA Cumulus Linux NVUE Command Reference, Show Commands, QoS:
"Shows QoS buffer configuration for the specified interface", 5.4 and later) prints tables titled
`Buffer Statistics - <where>`, one row per pool, priority group or traffic class: its index, pool, mode and
sizes (`0 Bytes`, `9.98 KB`): the reserved size, then the current usage and the maximum usage. The reader
takes the ingress priority groups (their occupancy is what triggers PFC on a lossless priority) and the
egress traffic classes: now, and the most since the ASIC's counter was last cleared (the `Max Usage` column).
The published example shows the ingress tables; the egress traffic-class table is read the same way,
its layout assumed alike (docs/not-shown.md).
"""

from __future__ import annotations

import re
from typing import Any

from gpufabric.drivers.answers import ShapeError
from gpufabric.telemetry.buffers import (
    EGRESS,
    INGRESS,
    SIZE,
    PortBuffers,
    QueueBuffer,
    bounded,
    merge,
    size_bytes,
)

_TITLE = re.compile(r"\s*Buffer Statistics\s*-\s*(.+?)\s*$", re.IGNORECASE)
_ROW = re.compile(r"\s*(\d{1,3})\s+(.*)")
_PORT = re.compile(r"swp\d{1,4}(?:s\d{1,2})?")
# Section title -> which buffer its rows are (the tables of pools, per port, are not per queue).
_SECTIONS = {"ingress priority group": INGRESS, "egress traffic class": EGRESS}


def buffer_command(port: str) -> str:
    return f"nv show interface {port} qos buffer"


def parse_qos_buffer(text: str) -> PortBuffers:
    """(priority group or traffic class, buffer) -> now and the maximum, from one port's tables."""
    bounded(text, "nv show interface qos buffer")
    found: PortBuffers = {}
    where: str | None = None
    for line in text.splitlines():
        if m := _TITLE.match(line):
            where = _SECTIONS.get(m[1].strip().lower())
            continue
        if where is None or not (m := _ROW.fullmatch(line.rstrip())):
            continue
        sizes = [size_bytes(n, u) for n, u in SIZE.findall(m[2])]
        if len(sizes) < 3:  # reserved, current, maximum: a row without them is not a buffer row
            raise ShapeError(f"row {m[1]} of {where} has {len(sizes)} sizes, not the reserved, current and maximum")
        merge(found, (m[1], where), QueueBuffer(float(sizes[1]), float(sizes[2])))
    return found


def read_buffers(conn: Any, ports: list[str], queues: list[str]) -> dict[str, PortBuffers]:
    names = [p for p in ports if _PORT.fullmatch(p)]  # a port name goes into an NVUE command: only swpN
    answers = conn.cli([buffer_command(p) for p in names]) if names else {}
    out: dict[str, PortBuffers] = {}
    for port in names:
        found = parse_qos_buffer(answers.get(buffer_command(port), ""))
        out[port] = {k: v for k, v in found.items() if k[0] in queues}
    return out
