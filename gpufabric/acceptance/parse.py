"""Read the figures out of perftest's and nccl-tests' text output.

perftest (`ib_write_bw --report_gbits`, `ib_write_lat`) prints a header row naming its columns and
one result row under it; nccl-tests prints one row per message size, out-of-place columns first.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB_PER_SEC_IN_GBITS = 8 * 1.048576 / 1000  # perftest's MB/sec is MiB per second


class OutputError(ValueError):
    """The output is not what the tool prints on success (cut short, an error, another tool)."""


@dataclass(frozen=True, slots=True)
class Observed:
    value: float
    unit: str
    detail: str = ""  # what else the output said (wrong elements, the row read)


def _rows_under(text: str, marker: str) -> tuple[str, list[list[str]]]:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if marker in line:
            rows: list[list[str]] = []
            for row in lines[i + 1 :]:
                cells = row.split()
                if not cells or not cells[0].isdigit():
                    if rows:
                        break
                    continue
                rows.append(cells)
            return line, rows
    raise OutputError(f"no '{marker}' header: not perftest output, or the test did not run")


def perftest_bw(text: str) -> Observed:
    header, rows = _rows_under(text, "BW average")
    if not rows or len(rows[-1]) < 4:
        raise OutputError("perftest printed its header but no result row")
    average = float(rows[-1][3])
    if "[MB/sec]" in header:
        average *= MIB_PER_SEC_IN_GBITS
    return Observed(round(average, 2), "Gb/s", f"{rows[-1][0]} bytes")


def perftest_lat(text: str) -> Observed:
    _, rows = _rows_under(text, "t_typical")
    if not rows or len(rows[-1]) < 5:
        raise OutputError("perftest printed its header but no result row")
    return Observed(float(rows[-1][4]), "us", f"{rows[-1][0]} bytes, t_typical")


def nccl_busbw(text: str) -> Observed:
    """Out-of-place bus bandwidth at the largest message size, and how many elements were wrong."""
    rows = []
    for line in text.splitlines():
        cells = line.split()
        if len(cells) >= 9 and cells[0].isdigit() and cells[1].isdigit():
            rows.append(cells)
    if not rows:
        raise OutputError("no nccl-tests result rows (size, count, type, ...): the run failed or was cut short")
    last = max(rows, key=lambda c: int(c[0]))
    wrong = last[8]
    failed = "Out of bounds values" in text and "FAILED" in text.split("Out of bounds values", 1)[1].splitlines()[0]
    if (wrong.isdigit() and int(wrong) > 0) or failed:
        return Observed(0.0, "GB/s", f"{wrong} wrong elements at {last[0]} bytes: data corrupted")
    return Observed(float(last[7]), "GB/s", f"{last[0]} bytes")


def iperf3_bw(text: str) -> Observed:
    """`iperf3 -J`: the receiver's bits per second over the whole test."""
    import json

    try:
        doc = json.loads(text)
    except ValueError:
        raise OutputError("not iperf3's JSON (-J): the test did not run") from None
    try:
        bps = float(doc["end"]["sum_received"]["bits_per_second"])
    except (KeyError, TypeError):
        error = doc.get("error", "") if isinstance(doc, dict) else ""
        raise OutputError(f"no iperf3 result{': ' + str(error) if error else ''}") from None
    return Observed(round(bps / 1e9, 3), "Gb/s", "iperf3 stand-in, TCP")


def ping_rtt(text: str) -> Observed:
    """ping's summary line `rtt min/avg/max/mdev = a/b/c/d ms`: the average round trip, in microseconds."""
    for line in text.splitlines():
        if line.startswith(("rtt ", "round-trip ")) and "=" in line:
            avg = float(line.split("=", 1)[1].split("/")[1])
            return Observed(round(avg * 1000, 1), "us", "ping stand-in, round trip")
    raise OutputError("no ping summary: no reply came back")


PARSERS = {"ib_write_bw": perftest_bw, "ib_write_lat": perftest_lat, "iperf3": iperf3_bw, "ping": ping_rtt}


def observed(tool: str, text: str) -> Observed:
    return PARSERS.get(tool, nccl_busbw)(text)
