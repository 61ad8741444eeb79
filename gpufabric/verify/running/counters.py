"""Counter thresholds for `nornir validate --counter-window S`: each planned port is read twice, S
seconds apart, and what happened in between is judged: the link flapped, errors or discards above
their rate, PFC pauses received above theirs (where the switch exposes them)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gpufabric.verify.running.lossless import read_lossless
from gpufabric.verify.running.results import CheckResult, result


@dataclass(frozen=True)
class Limits:
    window: float = 0.0  # seconds between the two reads; 0: no counter checks
    errors_per_second: float = 0.0
    discards_per_second: float = 1000.0
    pauses_per_second: float = 10_000.0


@dataclass(frozen=True)
class Sample:
    counters: dict[str, dict[str, int]]  # NAPALM's get_interfaces_counters
    flaps: dict[str, int] | None  # carrier changes, where the driver counts them
    pauses: dict[str, int] | None  # PFC pause frames received, summed over priorities


def sample(conn: Any, platform: str, ports: list[str]) -> Sample:
    flaps = conn.get_carrier_changes() if hasattr(conn, "get_carrier_changes") else None
    lossless = read_lossless(conn, platform, ports)
    pauses = None
    if lossless is not None:
        received = {p: c.received_pauses() for p, c in lossless.items()}
        pauses = {p: n for p, n in received.items() if n is not None}
    return Sample(conn.get_interfaces_counters(), flaps, pauses)


def _delta(before: dict[str, int], after: dict[str, int], keys: tuple[str, ...]) -> int:
    return sum(max(0, after.get(k, 0) - before.get(k, 0)) for k in keys)


def judge(device: str, ports: list[str], first: Sample, second: Sample, limits: Limits) -> Iterator[CheckResult]:
    w = limits.window
    for port in sorted(ports):
        a, b = first.counters.get(port), second.counters.get(port)
        if a is None or b is None:
            continue
        if first.flaps is not None and second.flaps is not None and port in first.flaps:
            changes = second.flaps.get(port, 0) - first.flaps[port]
            yield result("link-flaps", device, port, f"0 in {w:g} s", f"{changes} in {w:g} s")
        errors = _delta(a, b, ("rx_errors", "tx_errors")) / w
        yield result("port-errors", device, port, f"<= {limits.errors_per_second:g}/s", f"{errors:g}/s",
                     ok=errors <= limits.errors_per_second)  # fmt: skip
        discards = _delta(a, b, ("rx_discards", "tx_discards")) / w
        yield result("port-discards", device, port, f"<= {limits.discards_per_second:g}/s", f"{discards:g}/s",
                     ok=discards <= limits.discards_per_second)  # fmt: skip
        if first.pauses is not None and second.pauses is not None and port in first.pauses:
            rate = max(0, second.pauses.get(port, 0) - first.pauses[port]) / w
            yield result("pfc-pause", device, port, f"<= {limits.pauses_per_second:g}/s received", f"{rate:g}/s",
                         ok=rate <= limits.pauses_per_second)  # fmt: skip
