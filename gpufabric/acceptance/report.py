"""Judge results against the suite: per job expected, threshold and observed; the switches and cables
that failing jobs share (two failing pairs through one optic point at that optic); JUnit for CI."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from gpufabric.acceptance.counters import (
    Counters,
    Evidence,
    SnapshotError,
    check_snapshot,
    judge_nic,
    judge_switches,
    parse_nic,
)
from gpufabric.acceptance.dcgm import judge_diag
from gpufabric.acceptance.model import DiagJob, IncastJob, NcclJob, PerfJob, Suite
from gpufabric.acceptance.parse import (
    FailedOutputError,
    InvalidOutputError,
    Observed,
    OutputError,
    observed,
    perftest_bw,
)
from gpufabric.errors import GpufabricError
from gpufabric.inputs import InputError, MiB, json_text, read_text
from gpufabric.outputs import xml_text

Job = PerfJob | NcclJob | IncastJob | DiagJob
MAX_OUTPUT = 4 * MiB  # bytes of one result file: perftest and nccl-tests print a few KiB, a snapshot less
NO_VERDICT = ("missing", "unreadable", "invalid", "unknown")  # JUnit errors: the job could not be judged


@dataclass(frozen=True, slots=True)
class Verdict:
    """status: passed | failed | unstressed (an incast that congested nothing) | missing (no output) |
    unreadable (not the tool's output of a finished run) | invalid (another tool, test type, size or
    count than the job's, several runs in one file, or a figure no link can produce, or a DCGM run with no
    level-3 test) | unknown (an incast whose drop counters cannot be compared, a DCGM diagnostic that could
    not run)."""

    job: Job
    status: str
    observed: float | None
    detail: str
    fault: bool = False  # failed on what the output shows (wrong data, loss), not on the threshold

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass(slots=True)
class Report:
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def failed(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.passed]

    def suspects(self) -> list[tuple[str, int, int]]:
        """(switch or cable, failing jobs through it, passing jobs through it): shared by two or more
        failing jobs, fewest passing ones first. ECMP may have steered a passing job around a fault."""
        failing = [v for v in self.failed if v.status == "failed"]
        kinds = {_kind(v.job) for v in failing}  # a latency pass does not clear a bandwidth failure
        passing = [v for v in self.verdicts if v.passed and _kind(v.job) in kinds]
        return rank_parts(
            [(*v.job.crosses, *v.job.cables) for v in failing], [(*v.job.crosses, *v.job.cables) for v in passing]
        )


def rank_parts(
    failing: Iterable[Iterable[str]], passing: Iterable[Iterable[str]], at_least: int = 2
) -> list[tuple[str, int, int]]:
    """(part, failing results through it, passing results through it) for the parts in at least
    `at_least` failing results: fewest passing first, then most failing, then by name."""
    bad = Counter(x for parts in failing for x in set(parts))
    good = Counter(x for parts in passing for x in set(parts))
    ranked = [(x, n, good[x]) for x, n in bad.items() if n >= at_least]
    return sorted(ranked, key=lambda r: (r[2], -r[1], r[0]))


def _kind(job: Job) -> str:
    """Incasts judge counters, pairs a rate: a passing incast clears no pair's suspects, nor the reverse."""
    return "incast" if isinstance(job, IncastJob) else job.tool


def judge(suite: Suite, results: Path) -> Report:
    report = Report()
    for job in suite.jobs():
        if isinstance(job, IncastJob):
            report.verdicts.append(incast_verdict(job, results / job.id))
        elif isinstance(job, DiagJob):
            report.verdicts.append(diag_verdict(job, results / f"{job.id}.json"))
        else:
            report.verdicts.append(job_verdict(job, results / f"{job.id}.txt"))
    return report


def _read(path: Path, what: str) -> str:
    """A result file, read as outside input: a regular file (a FIFO would block the report forever,
    /dev/zero fill its memory), at most MAX_OUTPUT bytes, UTF-8. Anything else is an InputError,
    which the command line shows located and exits 2 on."""
    return read_text(path, what=what, max_bytes=MAX_OUTPUT)


class _AbsentError(GpufabricError):
    """A file of the evidence that is not there: the job left no verdict."""


def _evidence(path: Path, what: str) -> str:
    if not path.exists():
        raise _AbsentError(f"no {what} ({path.parent.name}/{path.name})")
    return _read(path, what)


def _rates(job: IncastJob, folder: Path) -> list[float] | Verdict:
    rates = []
    for s in job.senders:
        try:
            text = _evidence(folder / f"{s.server}.txt", f"output of sender {s.server}")
            rates.append(perftest_bw(text, job.expect()).value)
        except _AbsentError as exc:
            return Verdict(job, "missing", None, str(exc))
        except OutputError as exc:
            return _unusable(job, exc, f"sender {s.server}: ")
    return rates


def _snapshots(job: IncastJob, folder: Path) -> tuple[list[tuple[Counters, Counters]], list[Any]]:
    nics = []
    for end in job.servers():
        before, after = (
            parse_nic(_evidence(folder / f"nic.{when}.{end.server}.txt", f"NIC counters of {end.server} ({when})"))
            for when in ("before", "after")
        )
        nics.append((before, after))
    switches = []
    for when in ("before", "after"):
        name = f"switches.{when}.json"
        text = _evidence(folder / name, f"switch counters ({when})")
        try:
            doc = json_text(text, folder / name, "a switch snapshot")
        except InputError as exc:  # the file was read; what it holds is this job's evidence, unreadable
            raise SnapshotError(f"{name}: {exc.problems[0].message}") from None
        switches.append(check_snapshot(doc, name))
    return nics, switches


def incast_verdict(job: IncastJob, folder: Path) -> Verdict:
    """From `<job id>/`: each sender's perftest output (`<server>.txt`), every NIC's counters before
    and after (`nic.before.<server>.txt`), the switches' (`switches.before.json`)."""
    rates = _rates(job, folder)
    if isinstance(rates, Verdict):
        return rates
    aggregate = round(sum(rates), 2)
    try:
        nics, switches = _snapshots(job, folder)
    except _AbsentError as exc:
        return Verdict(job, "missing", aggregate, f"counter snapshot: {exc}")
    except SnapshotError as exc:
        return Verdict(job, "unreadable", aggregate, f"counter snapshot: {exc}")
    ev = Evidence()
    for end, (before, after) in zip(job.servers(), nics, strict=True):
        judge_nic(ev, f"{end.server} {end.interface}", before, after, job.priority)
    judge_switches(ev, job, switches[0], switches[1])
    status, detail = _incast_status(job, ev, aggregate)
    if ev.blind:
        detail += f"; no drop counter read on {', '.join(ev.blind)}"
    return Verdict(job, status, aggregate, detail)


def _incast_status(job: IncastJob, ev: Evidence, aggregate: float) -> tuple[str, str]:
    p = job.priority
    if ev.drops:
        return "failed", "dropped: " + "; ".join(ev.drops)
    if ev.unread:
        return "missing", "switch counters unread: " + "; ".join(ev.unread)
    if ev.unknown:
        return "unknown", "drops unknown, not none: " + "; ".join(ev.unknown)
    if not ev.pauses and not ev.ecn:
        return "unstressed", (f"not a pass: no PFC pause on priority {p} and no ECN mark or CNP on any port or NIC "
                              "of the job, so the incast congested nothing (the senders did not overlap, or ran "
                              "below line rate)")  # fmt: skip
    if not ev.pauses:
        return "unstressed", (f"not a pass: ECN rose ({'; '.join(ev.ecn)}) but no PFC pause on priority {p}: "
                              "the queue never reached its pause threshold, so losslessness under PFC is not "
                              "shown")  # fmt: skip
    if not ev.ecn:
        return "failed", (f"PFC paused ({'; '.join(ev.pauses)}) but no ECN mark or CNP rose: ECN marking on the "
                          "RoCE queue or DCQCN on the NICs is off, and PFC alone carried the congestion")  # fmt: skip
    if aggregate < job.threshold:
        return "failed", f"no drops, but the receiver got {aggregate} Gb/s in all, below {job.threshold}"
    return "passed", f"no drops; PFC: {'; '.join(ev.pauses)}; ECN: {'; '.join(ev.ecn)}"


def _unusable(job: Job, exc: OutputError, where: str = "") -> Verdict:
    if isinstance(exc, FailedOutputError):
        return Verdict(job, "failed", None, f"{where}{exc}", fault=True)
    status = "invalid" if isinstance(exc, InvalidOutputError) else "unreadable"
    return Verdict(job, status, None, f"{where}{exc}")


def job_verdict(job: PerfJob | NcclJob, path: Path) -> Verdict:
    if not path.exists():
        return Verdict(job, "missing", None, f"no result file {path.name}")
    text = _read(path, f"{job.tool}'s output")
    try:
        seen: Observed = observed(job.expect(), text)
    except OutputError as exc:
        return _unusable(job, exc)
    if seen.failed:
        return Verdict(job, "failed", seen.value, seen.detail, fault=True)
    lower_is_better = job.tool in ("ib_write_lat", "ping")
    ok = seen.value <= job.threshold if lower_is_better else seen.value >= job.threshold
    if ok:
        return Verdict(job, "passed", seen.value, seen.detail)
    side = "above" if lower_is_better else "below"
    detail = f"{seen.value:g} {job.unit} {side} the threshold {job.threshold:g} {job.unit} ({seen.detail})"
    return Verdict(job, "failed", seen.value, detail)


def diag_verdict(job: DiagJob, path: Path) -> Verdict:
    """DCGM's JSON output of one node's diagnostic (gpufabric/acceptance/dcgm.py reads its layout). A failed
    test is the node's fault, named with DCGM's own message."""
    if not path.exists():
        return Verdict(job, "missing", None, f"no result file {path.name}")
    seen = judge_diag(_read(path, "dcgmi diag's output"), path)
    return Verdict(job, seen.status, seen.failed, seen.detail, fault=seen.status == "failed")


def _finite(value: float | None) -> float | None:
    """JSON has no NaN or Infinity: a figure that is not finite is no figure (the parsers refuse them)."""
    return value if value is None or math.isfinite(value) else None


def as_dict(report: Report) -> dict[str, object]:
    return {
        "jobs": [
            {
                "id": v.job.id,
                "tool": v.job.tool,
                "status": v.status,
                "expected": v.job.expected,
                "threshold": v.job.threshold,
                "observed": _finite(v.observed),
                "unit": v.job.unit,
                "detail": v.detail,
                "crosses": list(v.job.crosses),
                "cables": list(v.job.cables),
            }
            for v in report.verdicts
        ],
        "passed": sum(v.passed for v in report.verdicts),
        "failed": len(report.failed),
        "suspects": [{"part": x, "failing": n, "passing": p} for x, n, p in report.suspects()],
    }


def junit(report: Report) -> str:
    """JUnit XML. Details quote the tools' own output: every text passes through outputs.xml_text."""
    suite = ET.Element(
        "testsuite",
        name="gpufabric-acceptance",
        tests=str(len(report.verdicts)),
        failures=str(sum(v.status in ("failed", "unstressed") for v in report.verdicts)),
        errors=str(sum(v.status in NO_VERDICT for v in report.verdicts)),
    )
    for v in report.verdicts:
        case = ET.SubElement(
            suite, "testcase", classname=xml_text(f"acceptance.{v.job.plane}.{v.job.tool}"), name=xml_text(v.job.id)
        )
        path = xml_text(f"crosses: {', '.join(v.job.crosses)}\ncables: {', '.join(v.job.cables)}")
        if (isinstance(v.job, IncastJob | DiagJob) or v.fault) and v.status in ("failed", "unstressed"):
            node = ET.SubElement(case, "failure", message=xml_text(v.detail))
            node.text = path
        elif v.status == "failed":
            relation = ">" if v.job.tool in ("ib_write_lat", "ping") else "<"
            node = ET.SubElement(
                case,
                "failure",
                message=xml_text(
                    f"observed {v.observed} {v.job.unit} {relation} threshold {v.job.threshold} "
                    f"(expected {v.job.expected})"
                ),
            )
            node.text = path
        elif v.status != "passed":
            ET.SubElement(case, "error", message=xml_text(v.detail))
    return ET.tostring(suite, encoding="unicode") + "\n"
