"""Counter jumps on a job's footprint ports, read from Prometheus (`job timeline --prometheus URL`).

The exporter serves the switches' counters as they are now and keeps no history; Prometheus keeps it. Each
counter below is asked for with one range query (Prometheus's HTTP API, "Range queries":
`POST /api/v1/query_range` with `query`, `start`, `end`, `step`, form-encoded; prometheus.io/docs/prometheus/
latest/querying/api/) over the job's window:

    sum by (device, port) (increase(COUNTER{device=~"<footprint switches>", port=~"<their ports>"}[STEP])) > N

The rule: at each step's end `t`, Prometheus's `increase()` over the step before it (`(t - STEP, t]`; counter
resets handled, and extrapolated to the step's edges as Prometheus does), summed over a port's series (both
directions, every priority); an event when that is over the counter's threshold `N`. The event is placed at
the step's start and its summary says the step. Only the footprint's own (device, port) pairs are kept: the
selector names the switches and the ports, and the answer is filtered to the pairs themselves.

Prometheus's answer is outside input, read as the documented response envelope (`status`, `data.resultType`
"matrix", `data.result[]` {`metric`, `values` [[unix time, "value"]...]}): at most MAX_BYTES, MAX_SERIES
series and MAX_POINTS points in all, through gpufabric/http_guard.py (no redirect off its origin, a whole
deadline). Anything else is a TimelineError (exit 2) naming the query and the field.
"""

from __future__ import annotations

import math
import re
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from gpufabric.errors import printable
from gpufabric.jobs.footprint import Footprint
from gpufabric.jobs.timeline import BASE_URL, Counters, Event, Scope, Timeline, TimelineError, Window, iso, now

MAX_BYTES = 32 * 1024 * 1024  # one answer
MAX_SERIES = 100_000  # series of one answer: a port each (the footprint of a 32k-GPU job is about 40,000)
MAX_POINTS = 1_000_000  # points of one answer, all series together
MAX_STEPS = 11_000  # Prometheus's own bound on points per series in a range query
TIMEOUT = 10.0  # seconds for one read
DEADLINE = 60.0  # seconds for all the queries together
DEFAULT_STEP = 60  # seconds
NAME = re.compile(r"[A-Za-z0-9._:/-]{1,128}")  # a switch or a port as the selector may hold it

# name -> (the exporter's counter with its selector's extra matchers, what it counts). Pauses: the per-priority
# counters where the OS has them, else the sum over priorities (`priority="all"`), never both (job_rules.py).
COUNTERS: dict[str, tuple[tuple[tuple[str, str], ...], str]] = {
    "errors": ((("gpufabric_interface_errors_total", ""),), "errored frames"),
    "discards": ((("gpufabric_interface_discards_total", ""),), "frames dropped"),
    "pauses": (
        (
            ("gpufabric_pfc_pause_frames_total", 'direction="rx",priority!="all",'),
            ("gpufabric_pfc_pause_frames_total", 'direction="rx",priority="all",'),
        ),
        "PFC pause frames received",
    ),
    "ecn": ((("gpufabric_ecn_marked_packets_total", ""),), "packets marked CE"),
    "flaps": ((("gpufabric_link_carrier_changes_total", ""),), "carrier changes (link flaps)"),
    "watchdog": ((("gpufabric_pfc_watchdog_events_total", ""),), "PFC watchdog events"),
}
# The increase within a step over which a jump is an event. Pauses and ECN marks: 10,000 a second over the step
# (as GpufabricPfcPauseStorm: a storm, not congestion); discards: job_rules.JobThresholds' 100.
FIXED = {"errors": 0.0, "discards": 100.0, "flaps": 0.0, "watchdog": 0.0}
PER_SECOND = {"pauses": 10_000.0, "ecn": 10_000.0}


def thresholds(step: int, given: dict[str, float] | None = None) -> dict[str, float]:
    """Each counter's threshold for a step of `step` seconds: the defaults, overridden by `given`."""
    out = {**FIXED, **{k: v * step for k, v in PER_SECOND.items()}}
    for key, value in (given or {}).items():
        if key not in COUNTERS:
            raise TimelineError(f"{key!r} is not a counter read here ({', '.join(COUNTERS)})")
        out[key] = value
    return out


def ports_of(found: Footprint) -> dict[str, set[str]]:
    """The footprint's switch ports by switch: its NICs' leaf ports, and both ends of every fabric link its
    paths (its own and to storage) cross, as the telemetry join names them."""
    out: dict[str, set[str]] = {}
    for nic in found.nics:
        out.setdefault(nic.leaf, set()).add(nic.leaf_port)
    for crossing in (*found.planes, *found.storage):
        for link in crossing.links:
            out.setdefault(link.a, set()).add(link.a_port)
            out.setdefault(link.b, set()).add(link.b_port)
    return out


def _alternatives(names: Iterable[str]) -> str:
    """An RE2 alternation of `names` as a PromQL string literal holds it (RE2 escapes doubled for the string)."""
    regex = "|".join(re.escape(n) for n in sorted(names))
    return regex.replace("\\", "\\\\")


def query_of(counter: str, ports: dict[str, set[str]], step: int, threshold: float) -> str:
    devices = _alternatives(ports)
    every = _alternatives({p for names in ports.values() for p in names})
    parts = [
        f'sum by (device, port) (increase({metric}{{{extra}device=~"{devices}",port=~"{every}"}}[{step}s]))'
        for metric, extra in COUNTERS[counter][0]
    ]
    return f"({' or '.join(parts)}) > {threshold:g}"


Post = Callable[[str, dict[str, str], float], Any]  # URL, form, deadline -> the answer's JSON


def post_form(url: str, form: dict[str, str], deadline: float) -> Any:
    """POST `form` to `url` within the bounds above (a query of a large footprint is too long for a GET's URL)."""
    from gpufabric import http_api, http_guard

    data = urllib.parse.urlencode(form).encode()
    headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded"}
    request = http_api.Request("POST", url, headers, data)
    reply = http_guard.call(request, http_guard.Bounds(TIMEOUT, deadline, MAX_BYTES))
    if reply.status != 200:
        # Prometheus's error envelope says why (`error`); any other body is shown as text, cut.
        try:
            body = http_api.json_body(reply, request)
        except http_api.HttpApiError:
            body = None
        said = body.get("error") if isinstance(body, dict) and isinstance(body.get("error"), str) else reply.body
        raise TimelineError(
            f"Prometheus at {url}: answered HTTP {reply.status}: {http_api.shown(said or b'', ())}; "
            "give its base URL (http://127.0.0.1:9090)"
        )
    return http_api.json_body(reply, request)


@dataclass(frozen=True)
class Point:
    device: str
    port: str
    at: datetime  # the step's end
    value: float


def read_matrix(body: Any, where: str) -> list[Point]:
    """The documented range-query answer, checked field by field: its points."""
    if not isinstance(body, dict):
        raise TimelineError(f"{where}: the answer is not an object (Prometheus's API envelope)")
    if body.get("status") != "success":
        error = body.get("error")
        said = printable(error[:300]) if isinstance(error, str) else "no 'error' text"
        raise TimelineError(f"{where}: field 'status' is not \"success\": {said}")
    data = body.get("data")
    if not isinstance(data, dict):
        raise TimelineError(f"{where}: field 'data' is not an object")
    if data.get("resultType") != "matrix":
        raise TimelineError(f"{where}: field 'data.resultType' is not \"matrix\" (a range query's answer)")
    result = data.get("result")
    if not isinstance(result, list):
        raise TimelineError(f"{where}: field 'data.result' is not a list")
    if len(result) > MAX_SERIES:
        raise TimelineError(f"{where}: field 'data.result' holds {len(result)} series, more than {MAX_SERIES}")
    out: list[Point] = []
    for i, series in enumerate(result):
        out.extend(_series(series, f"{where}: data.result[{i}]", MAX_POINTS - len(out)))
    return out


def _series(series: Any, where: str, left: int) -> list[Point]:
    if not isinstance(series, dict):
        raise TimelineError(f"{where}: not an object")
    labels = series.get("metric")
    if not isinstance(labels, dict):
        raise TimelineError(f"{where}: field 'metric' is not an object")
    device, port = labels.get("device"), labels.get("port")
    for key, value in (("device", device), ("port", port)):
        if not isinstance(value, str) or not NAME.fullmatch(value):
            raise TimelineError(f"{where}: field 'metric.{key}' is not a switch's or port's name")
    values = series.get("values")
    if not isinstance(values, list):
        raise TimelineError(f"{where}: field 'values' is not a list")
    if len(values) > left:
        raise TimelineError(f"{where}: field 'values': more than {MAX_POINTS} points in the answer")
    out = []
    for j, pair in enumerate(values):
        at = f"{where}.values[{j}]"
        if not isinstance(pair, list) or len(pair) != 2:
            raise TimelineError(f'{at}: not a [time, "value"] pair')
        stamp, text = pair
        if not isinstance(stamp, int | float) or isinstance(stamp, bool) or not 0 <= stamp < 1 << 40:
            raise TimelineError(f"{at}: the time is not seconds since 1970")
        if not isinstance(text, str) or len(text) > 64:
            raise TimelineError(f"{at}: the value is not a number written as text")
        try:
            value = float(text)
        except ValueError:
            raise TimelineError(f"{at}: the value {printable(text)!r} is not a number") from None
        if not math.isfinite(value) or value < 0:
            raise TimelineError(f"{at}: the value {printable(text)!r} is no counter's increase")
        out.append(Point(device, port, datetime.fromtimestamp(stamp, UTC), value))  # type: ignore[arg-type]
    return out


def _amount(value: float) -> str:
    """A count as people read it: 2,000,000; an extrapolated increase to two decimals (53.33)."""
    return f"{value:,.0f}" if value == round(value) else f"{value:,.2f}"


@dataclass(frozen=True)
class Range:
    start: datetime  # the first step's end
    end: datetime
    step: int


def range_of(window: Window, step: int, until: datetime | None = None) -> Range:
    """The steps' ends over the window: from one step into it to its end (now while the job runs). A window
    shorter than a step is one step of its own length; one of more than MAX_STEPS steps has its step widened."""
    end = window.until or until or now()
    seconds = max(1, math.ceil((end - window.since).total_seconds()))
    step = min(step, seconds)
    step = max(step, math.ceil(seconds / MAX_STEPS))
    return Range(window.since + timedelta(seconds=step), end, step)


def reader(base: str, step: int = DEFAULT_STEP, limits: dict[str, float] | None = None) -> Counters:
    """The counter jumps' reader `timeline()` calls (Sources.counters): `base` checked now, before anything is read."""
    if not BASE_URL.fullmatch(base):
        raise TimelineError(f"{base[:80]!r} is not a Prometheus base URL (http://127.0.0.1:9090)")
    thresholds(step, limits)  # a wrong name refused now

    def read(found: Footprint, scope: Scope, window: Window, tl: Timeline) -> None:
        counter_events(base, found, scope, window, tl, step=step, limits=limits)

    return read


def counter_events(
    base: str,
    found: Footprint,
    scope: Scope,
    window: Window,
    tl: Timeline,
    *,
    step: int = DEFAULT_STEP,
    limits: dict[str, float] | None = None,
    post: Post = post_form,
) -> None:
    """An event for each step in which a footprint port's counter rose by more than its threshold."""
    if not BASE_URL.fullmatch(base):
        raise TimelineError(f"{base[:80]!r} is not a Prometheus base URL (http://127.0.0.1:9090)")
    every = {d: names for d, names in ports_of(found).items() if d in scope.devices}
    ports = {d: {p for p in names if NAME.fullmatch(p)} for d, names in every.items() if NAME.fullmatch(d)}
    ports = {d: names for d, names in ports.items() if names}
    left = sum(len(names) for names in every.values()) - sum(len(names) for names in ports.values())
    if left:  # a name the selector's pattern does not hold never reaches PromQL: said, not read
        tl.notes.append(f"{left} footprint port(s) named outside {NAME.pattern}: their counters are not read")
    if not ports:
        tl.notes.append("the footprint has no switch port to read counters of")
        return
    span = range_of(window, step)
    if span.step != step:
        tl.notes.append(f"counters read in steps of {span.step} s (the window holds more than {MAX_STEPS} of {step} s)")
    limit = thresholds(span.step, limits)
    url = base.rstrip("/") + "/api/v1/query_range"
    deadline = time.monotonic() + DEADLINE
    for counter, (_metrics, what) in COUNTERS.items():
        form = {
            "query": query_of(counter, ports, span.step, limit[counter]),
            "start": f"{span.start.timestamp():.3f}",
            "end": f"{span.end.timestamp():.3f}",
            "step": f"{span.step}s",
        }
        where = f"Prometheus at {url} ({counter})"
        body = post(url, form, deadline)
        points = read_matrix(body, where)
        warnings = body.get("warnings")  # a partial answer says so here (the API's `warnings`): said, not dropped
        if isinstance(warnings, list):
            tl.notes.extend(f"{where} warns: {printable(w[:300])}" for w in warnings[:5] if isinstance(w, str))
        for point in points:
            if point.port not in ports.get(point.device, ()) or point.value <= limit[counter]:
                continue  # not a pair of the footprint's, or not over the threshold: not what was asked
            began = point.at - timedelta(seconds=span.step)
            if not window.holds(began) and not window.holds(point.at):
                continue
            summary = (
                f"{counter}: +{_amount(point.value)} {what} in the {span.step} s to {iso(point.at)} "
                f"(over {_amount(limit[counter])})"
            )
            tl.events.append(
                Event(max(began, window.since), "counter", point.device, point.port, None, summary, f"{url}#{counter}")
            )
