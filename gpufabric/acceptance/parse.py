"""Read the figures out of perftest's, nccl-tests', iperf3's and ping's output, and refuse output that
is not the evidence its job asks for.

perftest (`ib_write_bw --report_gbits`, `ib_write_lat`) prints a title naming its verb and test type
(`RDMA_Write BW Test`), a header row naming its columns and one result row per message size under it;
nccl-tests prints its parameters (`# nThread ... minBytes ... maxBytes ... validation: 1`), then one row
per message size, out-of-place columns first, then a footer (`# Out of bounds values : 0 OK`).

A result file is one run of one tool, written afresh by the job's batch script (`>`). So a parser
checks that the output is that tool's and that test type's (ib_write_bw, not ib_read_bw; one way, not
`-b`), at the job's message sizes and iteration count, that it holds exactly one run, that every
figure is a finite number, and that none is above what the link can carry. Output with two runs is
refused rather than judged by its better or worse run: a file the batch script wrote cannot hold two,
so one that does was written by something else, and which run was this job's cannot be told.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from gpufabric.errors import GpufabricError
from gpufabric.inputs import InputError, json_text

MIB_PER_SEC_IN_GBITS = 8 * 1.048576 / 1000  # perftest's MB/sec (MiB/sec since 2023) is MiB per second


class OutputError(ValueError, GpufabricError):
    """The output is not what the tool prints on success (cut short, an error, another tool)."""


class InvalidOutputError(OutputError):
    """Output the tool printed, but not this job's evidence: another tool or test type, other message
    sizes or iterations, several runs in one file, or a figure no link can produce."""


class FailedOutputError(OutputError):
    """Output that shows the test failed and has no figure to judge (every ping was lost)."""


@dataclass(frozen=True, slots=True)
class Observed:
    value: float
    unit: str
    detail: str = ""  # what else the output said (the row read; what failed)
    failed: bool = False  # the output shows a failure whatever the figure (wrong data, data not checked, loss)


@dataclass(frozen=True, slots=True)
class Expect:
    """What a job ran, to check its output against; None where the job does not fix it."""

    tool: str
    size: int | None = None  # bytes per message (perftest); the smallest size (nccl-tests -b)
    max_size: int | None = None  # the largest size (nccl-tests -e)
    factor: int | None = None  # nccl-tests -f
    iterations: int | None = None  # perftest -n, nccl-tests -n, ping -c
    streams: int | None = None  # iperf3 -P
    seconds: int | None = None  # iperf3 -t
    ranks: int = 1  # nccl-tests: all_to_all cuts its sizes to whole 16-byte chunks per rank
    ceiling: float | None = None  # the largest figure the links can carry, in the job's unit
    ceiling_what: str = ""  # that ceiling in words: "the 400 Gb/s line rate"


# -- numbers ---------------------------------------------------------------------------------------

_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
_NOT_FINITE = re.compile(r"[-+]?(?:inf(?:inity)?|nan)", re.IGNORECASE)
_COUNT = re.compile(r"[0-9]+")  # ASCII digits only: str.isdigit() takes '²', which int() refuses


def _number(cell: str, what: str) -> float:
    """A figure as the tools print it (fixed point, or C's %e), finite: `inf` and `nan` are refused."""
    if _NOT_FINITE.fullmatch(cell):
        raise InvalidOutputError(f"{what} {cell!r} is not a finite number")
    if not _NUMBER.fullmatch(cell):
        raise OutputError(f"{what} {cell!r} is not a number")
    value = float(cell)
    if not math.isfinite(value):  # 1e999
        raise InvalidOutputError(f"{what} {cell} is not a finite number")
    return value


def _figure(value: float, what: str, unit: str = "") -> float:
    """A figure already read as a number: finite, and not below zero (no time, rate or count is)."""
    if not math.isfinite(value):
        raise InvalidOutputError(f"{what} {value} is not a finite number")
    if value < 0:
        raise InvalidOutputError(f"{what} {value:g}{' ' + unit if unit else ''} is negative")
    return value


def _positive(cell: str, what: str, unit: str = "") -> float:
    return _figure(_number(cell, what), what, unit)


def _count(cell: str, what: str) -> int:
    if not _COUNT.fullmatch(cell):
        raise OutputError(f"{what} {cell!r} is not a whole number")
    return int(cell)


def _under_ceiling(value: float, unit: str, what: str, expect: Expect) -> None:
    if expect.ceiling is not None and value > expect.ceiling:
        raise InvalidOutputError(f"{what} {value:g} {unit} above {expect.ceiling_what or f'{expect.ceiling:g} {unit}'}")


def _runs(n: int, tool: str) -> None:
    if n > 1:
        raise InvalidOutputError(f"{n} {tool} runs in one file: a result file holds the one run its batch script wrote")


# -- perftest --------------------------------------------------------------------------------------

# The title perftest prints above its parameters: `<verb> [Bidirectional ][Post List ]BW Test`,
# `<verb> Latency Test` (perftest_parameters.c, ctx_print_test_info).
_TITLE = re.compile(r"\s*(Send|Send_imm|RDMA_Write|RDMA_Write_imm|RDMA_Read|Atomic)\s+(.*?)\s*Test\s*")
_TOOL_OF_VERB = {"Send": "ib_send", "RDMA_Write": "ib_write", "RDMA_Read": "ib_read", "Atomic": "ib_atomic"}
_TITLE_OF_TOOL = {"ib_write_bw": ("RDMA_Write", "BW"), "ib_write_lat": ("RDMA_Write", "Latency")}


def _check_title(text: str, tool: str) -> None:
    titles = [m for line in text.splitlines() if (m := _TITLE.fullmatch(line))]
    if not titles:
        raise OutputError("no perftest title (e.g. 'RDMA_Write BW Test'): not perftest output, or the test did not run")
    _runs(len(titles), "perftest")
    verb, kinds = titles[0].group(1), titles[0].group(2).split()
    seen = _TOOL_OF_VERB[verb.removesuffix("_imm")] + ("_bw" if "BW" in kinds else "_lat")
    if verb.endswith("_imm"):
        seen += f" with immediate data ({verb})"
    want_verb, want_kind = _TITLE_OF_TOOL[tool]
    if verb != want_verb or want_kind not in kinds:
        raise InvalidOutputError(f"{seen} output where {tool} was planned")
    if "Bidirectional" in kinds:
        raise InvalidOutputError(f"{tool} output of a bidirectional test (-b) where a unidirectional one was planned")
    if kinds != [want_kind]:
        raise InvalidOutputError(
            f"perftest's '{titles[0].group(0).strip()}' where '{want_verb} {want_kind} Test' was planned"
        )


def _result_row(text: str, marker: str, columns: int) -> tuple[str, list[str]]:
    """The header row holding `marker` and the one result row under it."""
    lines = text.splitlines()
    headers = [i for i, line in enumerate(lines) if marker in line]
    if not headers:
        raise OutputError(f"no '{marker}' header: not perftest output, or the test did not run")
    _runs(len(headers), "perftest")
    rows: list[list[str]] = []
    for line in lines[headers[0] + 1 :]:
        cells = line.split()
        if cells and _COUNT.fullmatch(cells[0]):
            rows.append(cells)
        elif rows:
            break
    if not rows:
        raise OutputError("perftest printed its header but no result row")
    if len(rows) > 1:
        raise InvalidOutputError(f"results for {len(rows)} message sizes (perftest -a) where one size was planned")
    if len(rows[0]) < columns:
        raise OutputError(f"perftest's result row has {len(rows[0])} columns, not {columns}: cut short")
    return lines[headers[0]], rows[0]


def _check_size(cells: list[str], expect: Expect) -> int:
    size = _count(cells[0], "message size")
    if expect.size is not None and size != expect.size:
        raise InvalidOutputError(f"messages of {size} bytes where {expect.size} were planned")
    iterations = _count(cells[1], "iterations")
    if expect.iterations is not None and iterations != expect.iterations:
        raise InvalidOutputError(f"{iterations} iterations where {expect.iterations} were planned")
    if iterations == 0:
        raise OutputError("perftest ran no iteration")
    return size


def perftest_bw(text: str, expect: Expect | None = None) -> Observed:
    expect = expect or Expect("ib_write_bw")
    _check_title(text, expect.tool)
    header, cells = _result_row(text, "BW average", 5)
    size = _check_size(cells, expect)
    average = _positive(cells[3], "bandwidth")
    if "[MB/sec]" in header or "[MiB/sec]" in header:
        average *= MIB_PER_SEC_IN_GBITS
    elif "[Gb/sec]" not in header:
        raise OutputError("perftest's bandwidth is in no unit it prints (Gb/sec, MB/sec, MiB/sec)")
    _under_ceiling(round(average, 2), "Gb/s", "bandwidth", expect)
    return Observed(round(average, 2), "Gb/s", f"{size} bytes")


def perftest_lat(text: str, expect: Expect | None = None) -> Observed:
    expect = expect or Expect("ib_write_lat")
    _check_title(text, expect.tool)
    _, cells = _result_row(text, "t_typical", 6)
    size = _check_size(cells, expect)
    for i, name in enumerate(("t_min", "t_max", "t_typical", "t_avg"), start=2):
        _positive(cells[i], f"latency ({name})", "us")
    typical = _number(cells[4], "latency")
    if typical == 0:
        raise InvalidOutputError("latency 0 us: no write crosses a link in no time")
    return Observed(typical, "us", f"{size} bytes, t_typical")


# -- nccl-tests ------------------------------------------------------------------------------------

_NCCL_PARAMS = re.compile(
    r"#\s*nThread [0-9]+ nGpus [0-9]+ minBytes (?P<min>[0-9]+) maxBytes (?P<max>[0-9]+) "
    r"step: (?P<step>[0-9]+)\((?P<how>factor|bytes)\) warmup iters: [0-9]+ iters: (?P<iters>[0-9]+) "
    r"(?:agg iters: [0-9]+ )?validation: (?P<check>[0-9]+)\b.*"
)
_NCCL_COLUMNS = 13  # size count type redop root, then time algbw busbw #wrong out of place and in place
_CHUNK = 32  # bytes per rank all_to_all may cut from a size (whole 16-byte chunks of whole elements)


@dataclass(frozen=True, slots=True)
class _Row:
    size: int
    redop: str
    root: str
    busbw: float  # out of place
    wrong: tuple[str, str]  # out of place, in place: a count, or N/A when nothing was checked


def _nccl_params(text: str, expect: Expect) -> re.Match[str]:
    lines = [line.strip() for line in text.splitlines()]
    params = [line for line in lines if line.startswith("#") and line.lstrip("# ").startswith("nThread ")]
    if not params:
        raise OutputError("no nccl-tests parameter line ('# nThread ...'): not nccl-tests output, or it did not start")
    _runs(len(params), "nccl-tests")
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("# Collective test starting:")]
    _runs(len(names), "nccl-tests")
    if names and expect.tool.endswith("_perf") and names[0] != expect.tool:
        raise InvalidOutputError(f"{names[0]} output where {expect.tool} was planned")
    found = _NCCL_PARAMS.fullmatch(params[0])
    if found is None:
        raise OutputError(f"nccl-tests' parameter line is not in its format: {params[0][:120]!r}")
    planned = (("minBytes", "min", expect.size, "-b"), ("maxBytes", "max", expect.max_size, "-e"),
               ("iters", "iters", expect.iterations, "-n"))  # fmt: skip
    for label, group, want, option in planned:
        if want is not None and int(found[group]) != want:
            raise InvalidOutputError(f"{label} {found[group]} where {want} was planned ({option})")
    if expect.factor is not None and (found["how"] != "factor" or int(found["step"]) != expect.factor):
        raise InvalidOutputError(
            f"sizes stepped by {found['step']} ({found['how']}) where a factor of {expect.factor} was planned"
        )
    return found


def _nccl_rows(text: str) -> list[_Row]:
    rows: list[_Row] = []
    for line in text.splitlines():
        cells = line.split()
        if line.lstrip().startswith("#") or len(cells) < 2 or not all(_COUNT.fullmatch(c) for c in cells[:2]):
            continue
        if len(cells) != _NCCL_COLUMNS:
            raise OutputError(f"an nccl-tests row of {len(cells)} columns, not {_NCCL_COLUMNS}: {line.strip()[:120]!r}")
        size = int(cells[0])
        for i, name in ((5, "time"), (6, "algbw"), (7, "busbw"), (9, "time"), (10, "algbw"), (11, "busbw")):
            _positive(cells[i], f"{name} at {size} bytes")
        rows.append(_Row(size, cells[3], cells[4], float(cells[7]), (cells[8], cells[12])))
    if not rows:
        raise OutputError("no nccl-tests result rows (size, count, type, ...): the run failed or was cut short")
    sizes = [r.size for r in rows]
    if len(set(sizes)) != len(sizes):
        raise InvalidOutputError("a message size appears twice: several nccl-tests runs in one file")
    return rows


def _data_errors(rows: list[_Row]) -> str:
    """The first wrong data (out of place or in place), or that nothing was checked; "" when all was right."""
    for row in rows:
        for where, cell in zip(("out of place", "in place"), row.wrong, strict=True):
            if cell == "N/A":
                return "data not checked (-c 0): nccl-tests printed N/A for #wrong"
            wrong = _positive(cell, f"#wrong at {row.size} bytes", "elements")
            if wrong > 0:
                return f"{wrong:g} wrong elements {where} at {row.size} bytes: data corrupted"
    return ""


def nccl_busbw(text: str, expect: Expect | None = None) -> Observed:
    """Out-of-place bus bandwidth at the largest message size, the job's; a run with wrong elements at
    any size, in place or out of place, or that checked nothing, fails whatever its speed."""
    expect = expect or Expect("nccl-tests")
    params = _nccl_params(text, expect)
    rows = _nccl_rows(text)
    if expect.tool == "all_reduce_perf" and any(r.redop == "none" for r in rows):
        raise InvalidOutputError("rows without a reduction (redop none): not all_reduce_perf's output")
    if any(r.root != "-1" for r in rows):
        raise InvalidOutputError(f"rows with a root rank ({rows[0].root}): a rooted collective, not {expect.tool}")
    last = max(rows, key=lambda r: r.size)
    if params["check"] == "0":
        return Observed(last.busbw, "GB/s", "data not checked (-c 0): nccl-tests ran without validation", True)
    wrong = _data_errors(rows)
    if wrong:
        return Observed(0.0, "GB/s", wrong, True)
    largest = int(params["max"])
    ranks = max(expect.ranks, sum(line.lstrip("# ").startswith("Rank ") for line in text.splitlines()), 1)
    if last.size > largest:
        raise InvalidOutputError(f"a row of {last.size} bytes, beyond the maxBytes {largest} the run printed")
    if last.size <= largest - ranks * _CHUNK:
        raise OutputError(f"the run stopped at {last.size} bytes, before the job's largest size, {largest} bytes: "
                          "it died or was cut short")  # fmt: skip
    footer = [line for line in text.splitlines() if "Out of bounds values" in line]
    if not footer:
        raise OutputError("no '# Out of bounds values' line: the run did not finish")
    if "FAILED" in footer[0]:
        verdict = footer[0].split(":", 1)[-1].strip()
        return Observed(0.0, "GB/s", f"out of bounds values {verdict} at some size: data corrupted", True)
    _under_ceiling(last.busbw, "GB/s", "bus bandwidth", expect)
    return Observed(last.busbw, "GB/s", f"{last.size} bytes")


# -- the lab's stand-ins ---------------------------------------------------------------------------


def _iperf3_doc(text: str) -> dict[str, object]:
    try:
        doc = json_text(text, "iperf3 output", "iperf3's JSON (-J)")  # no NaN, no Infinity, bounded depth
    except InputError as exc:
        try:  # one document followed by more: runs appended to one file
            _, end = json.JSONDecoder().raw_decode(text.lstrip())
        except (ValueError, RecursionError):  # its reader recurses once per level: a deep file ends here, named
            end = 0
        if end and text.lstrip()[end:].strip():
            raise InvalidOutputError("more than one iperf3 run in one file: a result file holds one run") from None
        raise OutputError(f"not iperf3's JSON (-J): the test did not run ({exc.problems[0].message})") from None
    if not isinstance(doc, dict):
        raise OutputError("not iperf3's JSON (-J): not an object")
    return doc


def iperf3_bw(text: str, expect: Expect | None = None) -> Observed:
    """`iperf3 -J`: the receiver's bits per second over the whole test of a TCP client, one way."""
    expect = expect or Expect("iperf3")
    doc = _iperf3_doc(text)
    try:
        bps = doc["end"]["sum_received"]["bits_per_second"]  # type: ignore[index]
        start = doc["start"]["test_start"]  # type: ignore[index]
    except (KeyError, TypeError):
        error = doc.get("error", "")
        raise OutputError(f"no iperf3 result{': ' + str(error) if error else ''}") from None
    if not isinstance(start, dict):
        raise OutputError("iperf3's start.test_start is not an object")
    planned = (("protocol", "TCP", "a TCP test"), ("reverse", 0, "the client sending (no -R)"),
               ("bidir", 0, "one way (no --bidir)"), ("num_streams", expect.streams, f"{expect.streams} streams (-P)"),
               ("duration", expect.seconds, f"{expect.seconds} s (-t)"))  # fmt: skip
    for key, want, what in planned:
        if want is not None and start.get(key, 0 if key == "bidir" else None) != want:
            raise InvalidOutputError(f"iperf3 ran with {key} {start.get(key)!r} where {what} was planned")
    if isinstance(bps, bool) or not isinstance(bps, int | float):
        raise OutputError(f"iperf3's bits_per_second {bps!r} is not a number")
    gbits = _figure(float(bps), "bandwidth", "b/s") / 1e9  # 1e999 is valid JSON, and infinite
    _under_ceiling(gbits, "Gb/s", "bandwidth", expect)
    return Observed(round(gbits, 3), "Gb/s", "iperf3 stand-in, TCP")


_PING_SENT = re.compile(r"([0-9]+) packets transmitted, ([0-9]+) (?:packets )?received\b.*")


def ping_rtt(text: str, expect: Expect | None = None) -> Observed:
    """ping's statistics (`5 packets transmitted, 5 received, ...`, then `rtt min/avg/max/mdev =
    a/b/c/d ms`): the average round trip, in microseconds. A lost probe fails the path."""
    expect = expect or Expect("ping")
    lines = [line.strip() for line in text.splitlines()]
    sent = [m for line in lines if (m := _PING_SENT.fullmatch(line))]
    if not sent:
        raise OutputError("no ping statistics: ping did not finish")
    _runs(len(sent), "ping")
    transmitted, received = int(sent[0][1]), int(sent[0][2])
    if expect.iterations is not None and transmitted != expect.iterations:
        raise InvalidOutputError(f"ping sent {transmitted} probes where {expect.iterations} were planned (-c)")
    if received > transmitted:
        raise InvalidOutputError(f"ping counted {received} replies to {transmitted} probes")
    if received == 0:
        raise FailedOutputError(f"ping lost all {transmitted} probes: no reply came back")
    rtts = [line for line in lines if line.startswith(("rtt ", "round-trip ")) and "=" in line]
    if len(rtts) != 1:
        raise OutputError("no ping round-trip summary (rtt min/avg/max/mdev)")
    figures = rtts[0].split("=", 1)[1].split()[0].split("/")
    if len(figures) < 3:
        raise OutputError(f"ping's round-trip summary is not min/avg/max: {rtts[0][:120]!r}")
    for name, cell in zip(("min", "avg", "max", "mdev"), figures, strict=False):
        _positive(cell, f"round trip ({name})", "ms")
    avg = _number(figures[1], "round trip")
    seen = Observed(round(avg * 1000, 1), "us", "ping stand-in, round trip")
    if received < transmitted:
        lost = transmitted - received
        detail = f"ping lost {lost} of {transmitted} probes ({100 * lost / transmitted:.0f}%)"
        return Observed(seen.value, seen.unit, detail, True)
    return seen


PARSERS: dict[str, Callable[[str, Expect | None], Observed]] = {
    "ib_write_bw": perftest_bw,
    "ib_write_lat": perftest_lat,
    "iperf3": iperf3_bw,
    "ping": ping_rtt,
}


def observed(expect: Expect, text: str) -> Observed:
    return PARSERS.get(expect.tool, nccl_busbw)(text, expect)
