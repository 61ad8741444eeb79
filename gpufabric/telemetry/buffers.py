"""Buffer occupancy and watermarks of a switch's queues, however its OS exposes them.

Each OS reads them with its own feature (gpufabric/nos/<os>/telemetry.py, through the platform's
`read_buffers`): Cumulus's `nv show interface X qos buffer`, EOS's LANZ (`show queue-monitor length`),
NX-OS's micro-burst detection (`show queuing burst-detect`), SONiC's queue watermarks (`show queue
watermark unicast`). What they return is the same: per port, per traffic class and buffer (the egress
queue, or the ingress priority group whose occupancy triggers PFC), the bytes held now where the OS says,
and the most it held in the OS's window (its watermark). docs/telemetry.md says which window each OS has.

A switch's answer is outside input: the readers take JSON through gpufabric.drivers.answers (RFC 8259,
nesting bounded) and refuse an answer larger than MAX_ANSWER_CHARS or a count larger than a 64-bit
counter, as a ShapeError the exporter turns into a scrape without those samples.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpufabric.drivers.answers import ShapeError, switch_json

# The largest answer read: NX-OS's burst records of a 64-port switch (a few hundred bytes each, kept
# until cleared) stay far below; a switch answering more is not answering what was asked.
MAX_ANSWER_CHARS = 8 << 20
MAX_BYTES = 2**64 - 1  # no switch buffer (tens to hundreds of MB) comes near; more is a garbled answer

EGRESS = "egress-queue"
INGRESS = "ingress-pg"


@dataclass(frozen=True)
class QueueBuffer:
    """One queue's (or priority group's) buffer, in bytes: now, and the most in the OS's window."""

    occupancy_bytes: float | None = None
    watermark_bytes: float | None = None


# port -> (traffic class or priority group, EGRESS | INGRESS) -> its buffer
PortBuffers = dict[tuple[str, str], QueueBuffer]


def bounded(text: str, what: str) -> str:
    """`text` when it is no larger than any answer the readers expect, else ShapeError."""
    if len(text) > MAX_ANSWER_CHARS:
        raise ShapeError(f"{what} is {len(text):,} characters, more than {MAX_ANSWER_CHARS:,}: not a buffer report")
    return text


def answer_json(text: str, what: str) -> object:
    """A switch's JSON answer, bounded in size and read as gpufabric reads every switch's JSON."""
    return switch_json(bounded(text, what), what) if text.strip() else {}


def byte_count(value: object, what: str) -> int:
    """A count of bytes as a switch writes it: a JSON integer or a string of digits, within 64 bits."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ShapeError(f"{what} is not a count of bytes: {type(value).__name__}")
    text = str(value).strip()
    if not text.isdigit() or len(text) > 20 or int(text) > MAX_BYTES:
        raise ShapeError(f"{what} is {text[:40]!r}, not a count of bytes")
    return int(text)


_UNITS = {"B": 1, "BYTES": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}
SIZE = re.compile(r"(\d{1,15}(?:\.\d{1,6})?)\s*(Bytes|B|KB|MB|GB)\b", re.IGNORECASE)


def size_bytes(number: str, unit: str) -> int:
    """`9.98 KB` as NVUE prints sizes (binary units, as its buffer tables do) -> bytes."""
    return round(float(number) * _UNITS[unit.upper()])


def merge(buffers: PortBuffers, key: tuple[str, str], buffer: QueueBuffer) -> None:
    """Add one queue's reading to a port's: the highest watermark and the latest occupancy are kept when a
    queue is reported more than once (LANZ's and NX-OS's records, one per congestion event)."""
    known = buffers.get(key)
    if known is not None:
        marks = [m for m in (known.watermark_bytes, buffer.watermark_bytes) if m is not None]
        now = buffer.occupancy_bytes if buffer.occupancy_bytes is not None else known.occupancy_bytes
        buffer = QueueBuffer(now, max(marks) if marks else None)
    buffers[key] = buffer
