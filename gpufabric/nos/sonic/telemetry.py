"""SONiC buffer watermarks, read with SONiC's own CLI (the driver's `cli` runs these exact commands).

- `show queue watermark unicast` (SONiC Command Reference, sonic-utilities doc/Command-Reference.md,
  "Watermark Show commands"): `Egress shared pool occupancy per unicast queue:`, then a table with a
  `Port UC0 UC1 ...` header, a dashed rule and one row per port: the most bytes each unicast queue held
  in the shared pool since the user watermark was last cleared (`N/A` where the ASIC has none).
- `show priority-group watermark shared`: `Ingress shared pool occupancy per PG:`, the same table with
  `PG0 PG1 ...`: the ingress priority groups, whose occupancy is what triggers PFC.

SONiC keeps three watermarks per queue: periodic (cleared by a timer, for streaming telemetry),
persistent (cleared only by hand) and user. The reader reads the user watermark and clears it right after
(`sonic-clear queue watermark unicast`, `sonic-clear priority-group watermark shared`), so each scrape
sees the peak since the last one. That resets a person's own user-watermark measurement on the switch;
the persistent watermark (`show queue persistent-watermark unicast`) is left for people.
"""

from __future__ import annotations

import re
from typing import Any

from gpufabric.drivers.answers import ShapeError
from gpufabric.telemetry.buffers import EGRESS, INGRESS, PortBuffers, QueueBuffer, bounded, byte_count, merge

QUEUE_WATERMARK = "show queue watermark unicast"
PG_WATERMARK = "show priority-group watermark shared"
CLEAR_QUEUE = "sonic-clear queue watermark unicast"
CLEAR_PG = "sonic-clear priority-group watermark shared"
COMMANDS = (QUEUE_WATERMARK, PG_WATERMARK, CLEAR_QUEUE, CLEAR_PG)  # in this order: read, then clear

_HEADER = re.compile(r"\s*(?:Port|Interface)((?:\s+(?:UC|PG)\d{1,2})+)\s*")
_RULE = re.compile(r"\s*-{3,}(?:\s+-{3,})*\s*")
_PORT = re.compile(r"Ethernet\d{1,4}")


def parse_watermarks(text: str, what: str = QUEUE_WATERMARK) -> dict[str, PortBuffers]:
    """Port -> (queue or PG number, buffer) -> its watermark, from one of the two tables."""
    bounded(text, what)
    found: dict[str, PortBuffers] = {}
    columns: list[tuple[str, str]] | None = None
    for line in text.splitlines():
        if m := _HEADER.fullmatch(line):
            names = m[1].split()
            columns = [(n[2:], EGRESS if n.startswith("UC") else INGRESS) for n in names]
            continue
        if columns is None or not line.strip() or _RULE.fullmatch(line):
            continue
        cells = line.split()
        if not _PORT.fullmatch(cells[0]):
            raise ShapeError(f"{what}: a row starts with {cells[0][:40]!r}, not a port name")
        if len(cells) != len(columns) + 1:
            raise ShapeError(f"{what}: {cells[0]} has {len(cells) - 1} values for {len(columns)} columns")
        for column, cell in zip(columns, cells[1:], strict=True):
            if cell != "N/A":
                value = byte_count(cell, f"{what}: {cells[0]} {column[0]}")
                merge(found.setdefault(cells[0], {}), column, QueueBuffer(None, float(value)))
    if columns is None and text.strip():
        raise ShapeError(f"{what}: no `Port UC0 ...` or `Port PG0 ...` header")
    return found


def read_buffers(conn: Any, ports: list[str], queues: list[str]) -> dict[str, PortBuffers]:
    answers = conn.cli(list(COMMANDS))
    found = parse_watermarks(answers.get(QUEUE_WATERMARK, ""), QUEUE_WATERMARK)
    for port, buffers in parse_watermarks(answers.get(PG_WATERMARK, ""), PG_WATERMARK).items():
        for where, buffer in buffers.items():
            merge(found.setdefault(port, {}), where, buffer)
    return {port: {k: v for k, v in found.get(port, {}).items() if k[0] in queues} for port in ports}
