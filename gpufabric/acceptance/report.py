"""Judge results against the suite: per job expected, threshold and observed; the switches and cables
that failing jobs share (two failing pairs through one optic point at that optic); JUnit for CI."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree as ET

from gpufabric.acceptance.counters import Evidence, SnapshotError, judge_nic, judge_switches, parse_nic
from gpufabric.acceptance.model import IncastJob, NcclJob, PerfJob, Suite
from gpufabric.acceptance.parse import OutputError, observed, perftest_bw
from gpufabric.outputs import xml_text

Job = PerfJob | NcclJob | IncastJob
MAX_OUTPUT = 4 << 20  # bytes read from one result file: perftest and nccl-tests print a few KiB


@dataclass(frozen=True, slots=True)
class Verdict:
    job: Job
    status: str  # passed | failed | missing | unreadable | unstressed (an incast that congested nothing)
    observed: float | None
    detail: str

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
        bad = Counter(x for v in failing for x in (*v.job.crosses, *v.job.cables))
        good = Counter(
            x for v in self.verdicts if v.passed and _kind(v.job) in kinds for x in (*v.job.crosses, *v.job.cables)
        )
        ranked = [(x, n, good[x]) for x, n in bad.items() if n >= 2]
        return sorted(ranked, key=lambda r: (r[2], -r[1], r[0]))


def _kind(job: Job) -> str:
    """Incasts judge counters, pairs a rate: a passing incast clears no pair's suspects, nor the reverse."""
    return "incast" if isinstance(job, IncastJob) else job.tool


def judge(suite: Suite, results: Path) -> Report:
    report = Report()
    for job in suite.jobs():
        if isinstance(job, IncastJob):
            report.verdicts.append(incast_verdict(job, results / job.id))
        else:
            report.verdicts.append(_verdict(job, results / f"{job.id}.txt"))
    return report


def _read(path: Path) -> str:
    with path.open("rb") as fh:
        return fh.read(MAX_OUTPUT).decode("utf-8", errors="replace")


def incast_verdict(job: IncastJob, folder: Path) -> Verdict:
    """From `<job id>/`: each sender's perftest output (`<server>.txt`), every NIC's counters before
    and after (`nic.before.<server>.txt`), the switches' (`switches.before.json`)."""
    rates = []
    for s in job.senders:
        path = folder / f"{s.server}.txt"
        if not path.is_file():
            return Verdict(job, "missing", None, f"no output of sender {s.server} ({folder.name}/{path.name})")
        try:
            rates.append(perftest_bw(_read(path)).value)
        except (OutputError, ValueError, IndexError) as exc:
            return Verdict(job, "unreadable", None, f"sender {s.server}: {exc}")
    aggregate = round(sum(rates), 2)
    ev = Evidence()
    try:
        for end in job.servers():
            before, after = (parse_nic(_read(folder / f"nic.{when}.{end.server}.txt")) for when in ("before", "after"))
            judge_nic(ev, f"{end.server} {end.interface}", before, after, job.priority)
        switches = [json.loads(_read(folder / f"switches.{when}.json")) for when in ("before", "after")]
    except (OSError, SnapshotError, ValueError) as exc:
        return Verdict(job, "missing", aggregate, f"counter snapshot: {exc}")
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


def _verdict(job: PerfJob | NcclJob, path: Path) -> Verdict:
    if not path.is_file():
        return Verdict(job, "missing", None, f"no result file {path.name}")
    text = _read(path)
    try:
        seen = observed(job.tool, text)
    except (OutputError, ValueError, IndexError) as exc:
        return Verdict(job, "unreadable", None, str(exc))
    lower_is_better = job.tool in ("ib_write_lat", "ping")
    ok = seen.value <= job.threshold if lower_is_better else seen.value >= job.threshold
    return Verdict(job, "passed" if ok else "failed", seen.value, seen.detail)


def as_dict(report: Report) -> dict[str, object]:
    return {
        "jobs": [
            {
                "id": v.job.id,
                "tool": v.job.tool,
                "status": v.status,
                "expected": v.job.expected,
                "threshold": v.job.threshold,
                "observed": v.observed,
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
        errors=str(sum(v.status in ("missing", "unreadable") for v in report.verdicts)),
    )
    for v in report.verdicts:
        case = ET.SubElement(
            suite, "testcase", classname=xml_text(f"acceptance.{v.job.plane}.{v.job.tool}"), name=xml_text(v.job.id)
        )
        path = xml_text(f"crosses: {', '.join(v.job.crosses)}\ncables: {', '.join(v.job.cables)}")
        if isinstance(v.job, IncastJob) and v.status in ("failed", "unstressed"):
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
