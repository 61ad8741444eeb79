"""Slow nodes: the screen's results compared with their median, the part they share, and a signal record.

Each result is compared with the results like it (the same tool and plane; perftest pairs of the same
line rate; nccl-tests runs over the same number of servers and GPUs): one below the median divided by
`factor` (1.5: a node 1.5x slower than the median) is slow. A group of fewer than `min_peers` results
has no median to speak of and is left unjudged, and so is a result whose output could not be read.

The part behind slow results is found as the acceptance report finds suspects (`report.rank_parts`):
the parts that slow results share, those also in fewest normal results of the same tool first. Besides
the switches and cables a job may cross, a perftest pair names its two servers, their NICs and the leaf
ports they are cabled to, and a single-server nccl-tests run its server, so a slow NIC (in two ring
pairs, both slow) is told from its partners (each in one slow and one normal pair). The NIC, its cable
and its leaf port are one link: they share every result and are named together. Each signal covers
the slow results its part explains; the rest give further signals.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from gpufabric.acceptance.model import NcclJob, PerfJob, Suite
from gpufabric.acceptance.parse import FailedOutputError, InvalidOutputError, OutputError, observed
from gpufabric.acceptance.paths import Fabric
from gpufabric.acceptance.report import MAX_OUTPUT, rank_parts
from gpufabric.errors import GpufabricError
from gpufabric.inputs import read_text
from gpufabric.plan.model import Plan

DEFAULT_FACTOR = 1.5
MIN_PEERS = 3
SIGNAL_KIND = "gpufabric.slow-results"
# The alert `screen report --alertmanager` posts for each part behind slow results; the remediation loop acts on it.
SLOW_ALERT = "GpufabricSlowPart"
# Which of parts named together leads a signal: the node's side of a link first (what a drain acts on).
KIND_ORDER = ("nic", "node", "host-cable", "leaf-port", "leaf", "fabric-cable", "switch")

Job = PerfJob | NcclJob


class ScreenError(ValueError, GpufabricError):
    """A screen that cannot be judged as asked (a factor of 1 or less, too few peers)."""


@dataclass(frozen=True, slots=True)
class Part:
    name: str
    kind: str  # one of KIND_ORDER
    nodes: tuple[str, ...]  # the servers behind it; none for a fabric part (servers keep other paths)


@dataclass(frozen=True, slots=True)
class Result:
    job: Job
    status: str  # measured | failed (the output shows a fault) | missing | unreadable | invalid
    value: float | None
    detail: str
    parts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Compared:
    result: Result
    group: str
    median: float
    threshold: float
    peers: int
    slow: bool


@dataclass(frozen=True, slots=True)
class Signal:
    part: Part
    together: tuple[Part, ...]  # parts in exactly the same results, named with it
    evidence: tuple[Compared, ...]  # the slow results it explains
    normal: int  # results of the same tools through it that were not slow


@dataclass(slots=True)
class Screen:
    fabric: str
    factor: float
    compared: list[Compared] = field(default_factory=list)
    unjudged: list[tuple[Result, str]] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)

    @property
    def slow(self) -> list[Compared]:
        return [c for c in self.compared if c.slow]


def parts_index(plan: Plan) -> dict[str, Part]:
    """Every part a screen result can name: servers, their rail NICs and leaf ports, cables, switches."""
    out: dict[str, Part] = {}
    below: dict[str, set[str]] = defaultdict(set)
    for s in plan.servers:
        out[s.name] = Part(s.name, "node", (s.name,))
        for nic in s.nics:
            out[f"{s.name} {nic.interface}"] = Part(f"{s.name} {nic.interface}", "nic", (s.name,))
            if nic.leaf:
                port = f"{nic.leaf} {nic.leaf_port}"
                out[port] = Part(port, "leaf-port", (s.name,))
                below[nic.leaf].add(s.name)
    for name, plane in plan.planes.items():
        fabric = Fabric.of(plan, name)
        for (server, _), cable in fabric.host_cable.items():
            out[cable] = Part(cable, "host-cable", (server,))
        for cable in fabric.ends:
            out[cable] = Part(cable, "fabric-cable", ())
        for d in plane.devices:
            if d.role == "leaf":
                out[d.name] = Part(d.name, "leaf", tuple(sorted(below[d.name])))
            else:
                out.setdefault(d.name, Part(d.name, "switch", ()))
    return out


def job_parts(job: Job) -> tuple[str, ...]:
    if isinstance(job, PerfJob):
        ends = (job.client, job.server)
        named = [e.server for e in ends] + [f"{e.server} {e.interface}" for e in ends]
        named += [f"{e.leaf} {e.leaf_port}" for e in ends]
        return tuple(dict.fromkeys([*named, *job.cables, *job.crosses]))
    return tuple(dict.fromkeys([*job.servers, *job.cables, *job.crosses]))


def _group(job: Job) -> str:
    if isinstance(job, PerfJob):
        return f"{job.tool} {job.plane} {job.line_rate:g} Gb/s"
    return f"{job.tool} {job.plane} {len(job.servers)} x {job.gpus_per_server} GPUs"


def read_result(job: Job, results: Path) -> Result:
    path = results / f"{job.id}.txt"
    parts = job_parts(job)
    if not path.exists():
        return Result(job, "missing", None, f"no result file {path.name}", parts)
    text = read_text(path, what=f"{job.tool}'s output", max_bytes=MAX_OUTPUT)
    try:
        seen = observed(job.expect(), text)
    except FailedOutputError as exc:
        return Result(job, "failed", None, str(exc), parts)
    except OutputError as exc:
        return Result(job, "invalid" if isinstance(exc, InvalidOutputError) else "unreadable", None, str(exc), parts)
    return Result(job, "failed" if seen.failed else "measured", seen.value, seen.detail, parts)


def screen(suite: Suite, plan: Plan, results: Path, *, factor: float = DEFAULT_FACTOR,
           min_peers: int = MIN_PEERS) -> Screen:  # fmt: skip
    """Read every job's output under `results`, compare like with like, localise the slow ones."""
    if factor <= 1.0:
        raise ScreenError(f"factor {factor:g}: a result is slow below the median divided by a factor above 1")
    if min_peers < 3:
        raise ScreenError(f"min peers {min_peers}: a median of fewer than 3 results cannot tell which one is slow")
    out = Screen(suite.fabric, factor)
    groups: dict[str, list[Result]] = defaultdict(list)
    jobs: list[Job] = [*suite.perf, *suite.nccl]
    for job in jobs:
        result = read_result(job, results)
        if result.status in ("measured", "failed"):
            groups[_group(job)].append(result)
        else:
            out.unjudged.append((result, result.detail))
    for group, members in groups.items():
        values = [r.value for r in members if r.value is not None]
        if len(values) < min_peers:
            why = f"{len(values)} results of {group}: fewer than {min_peers} to compare"
            out.unjudged += [(r, why) for r in members]
            continue
        median = statistics.median(values)
        threshold = median / factor
        for r in members:
            slow = r.status == "failed" or (r.value is not None and r.value < threshold)
            out.compared.append(Compared(r, group, median, threshold, len(values), slow))
    out.signals = _localise(out.compared, parts_index(plan))
    return out


def _localise(compared: list[Compared], index: dict[str, Part]) -> list[Signal]:
    """Greedy: the best-ranked part of the slow results not yet explained, then the next."""
    left = [c for c in compared if c.slow]
    signals: list[Signal] = []
    while left:
        tools = {c.result.job.tool for c in left}
        normal = [c.result.parts for c in compared if not c.slow and c.result.job.tool in tools]
        ranked = rank_parts([c.result.parts for c in left], normal, at_least=1)
        name, failing, passing = ranked[0]
        explained = [c for c in left if name in c.result.parts]
        same = {c.result.job.id for c in explained}
        together = [
            p for p, f, n in ranked
            if (f, n) == (failing, passing) and {c.result.job.id for c in left if p in c.result.parts} == same
        ]  # fmt: skip
        known = [index.get(p, Part(p, "switch", ())) for p in together]
        known.sort(key=lambda p: (KIND_ORDER.index(p.kind), p.name))
        signals.append(Signal(known[0], tuple(known[1:]), tuple(explained), passing))
        left = [c for c in left if c.result.job.id not in same]
    return signals


_PART = {
    "type": "object",
    "additionalProperties": False,
    "required": ["part", "part_kind"],
    "properties": {"part": {"type": "string"}, "part_kind": {"enum": list(KIND_ORDER)}},
}
_EVIDENCE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["job", "tool", "status", "observed", "unit", "median", "threshold", "peers", "detail"],
    "properties": {
        "job": {"type": "string"},
        "tool": {"type": "string"},
        "status": {"enum": ["measured", "failed"]},
        "observed": {"type": ["number", "null"]},
        "unit": {"type": "string"},
        "median": {"type": "number"},
        "threshold": {"type": "number"},
        "peers": {"type": "integer", "minimum": 3},
        "detail": {"type": "string"},
    },
}
# The signal record's contract (JSON Schema, draft 2020-12): what the remediation loop may rely on.
SIGNAL_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "gpufabric slow-results signal record, version 1",
    "type": "object", "additionalProperties": False,
    "required": ["kind", "version", "fabric", "results", "factor", "signals", "compared", "slow", "unjudged"],
    "properties": {
        "kind": {"const": SIGNAL_KIND}, "version": {"const": 1}, "fabric": {"type": "string"},
        "results": {"type": "string"}, "factor": {"type": "number", "exclusiveMinimum": 1},
        "compared": {"type": "integer", "minimum": 0}, "slow": {"type": "integer", "minimum": 0},
        "signals": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["part", "part_kind", "with", "nodes", "slow_results", "normal_results", "evidence"],
            "properties": {
                "part": {"type": "string"}, "part_kind": {"enum": list(KIND_ORDER)},
                "with": {"type": "array", "items": _PART},
                "nodes": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
                "slow_results": {"type": "integer", "minimum": 1}, "normal_results": {"type": "integer", "minimum": 0},
                "evidence": {"type": "array", "items": _EVIDENCE, "minItems": 1},
            },
        }},
        "unjudged": {"type": "array", "items": {
            "type": "object", "additionalProperties": False, "required": ["job", "status", "why"],
            "properties": {"job": {"type": "string"}, "status": {"type": "string"}, "why": {"type": "string"}},
        }},
    },
}  # fmt: skip


def _figure(c: Compared) -> dict[str, Any]:
    return {
        "job": c.result.job.id,
        "tool": c.result.job.tool,
        "status": c.result.status,
        "observed": c.result.value,
        "unit": c.result.job.unit,
        "median": round(c.median, 3),
        "threshold": round(c.threshold, 3),
        "peers": c.peers,
        "detail": c.result.detail,
    }


def slow_alerts(record: dict[str, Any], now: datetime, valid_for: timedelta) -> list[dict[str, Any]]:
    """The signal record's signals as Alertmanager alerts (API v2 postableAlert), one per part: `SLOW_ALERT`
    with the part's name and kind, which the remediation loop maps to the servers behind it by the plan.
    Each ends `valid_for` after this screen unless the next screen posts it again (still slow)."""
    out: list[dict[str, Any]] = []
    for sig in record["signals"]:
        nodes = ", ".join(sig["nodes"]) or "none: a fabric part"
        out.append(
            {
                "labels": {
                    "alertname": SLOW_ALERT,
                    "severity": "warning",
                    "fabric": record["fabric"],
                    "part": sig["part"],
                    "part_kind": sig["part_kind"],
                },
                "annotations": {
                    "summary": f"{sig['part']} ({sig['part_kind']}) behind {sig['slow_results']} slow results of "
                    f"the screen (factor {record['factor']:g} below the median); nodes {nodes}"
                },
                "startsAt": now.isoformat(timespec="seconds"),
                "endsAt": (now + valid_for).isoformat(timespec="seconds"),
            }
        )
    return out


def signal_record(s: Screen, results: Path) -> dict[str, Any]:
    """What the remediation loop reads: one signal per part behind slow results, with the nodes behind
    it (none for a fabric part), the parts named with it and the results that show it."""
    return {
        "kind": SIGNAL_KIND,
        "version": 1,
        "fabric": s.fabric,
        "results": str(results),
        "factor": s.factor,
        "signals": [
            {
                "part": sig.part.name,
                "part_kind": sig.part.kind,
                "with": [{"part": p.name, "part_kind": p.kind} for p in sig.together],
                "nodes": sorted({n for p in (sig.part, *sig.together) for n in p.nodes}),
                "slow_results": len(sig.evidence),
                "normal_results": sig.normal,
                "evidence": [_figure(c) for c in sig.evidence],
            }
            for sig in s.signals
        ],
        "compared": len(s.compared),
        "slow": len(s.slow),
        "unjudged": [{"job": r.job.id, "status": r.status, "why": why} for r, why in s.unjudged],
    }
