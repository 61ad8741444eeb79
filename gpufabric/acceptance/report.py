"""Judge results against the suite: per job expected, threshold and observed; the switches and cables
that failing jobs share (two failing pairs through one optic point at that optic); JUnit for CI."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree as ET

from gpufabric.acceptance.model import NcclJob, PerfJob, Suite
from gpufabric.acceptance.parse import OutputError, observed

Job = PerfJob | NcclJob
MAX_OUTPUT = 4 << 20  # bytes read from one result file: perftest and nccl-tests print a few KiB


@dataclass(frozen=True, slots=True)
class Verdict:
    job: Job
    status: str  # passed | failed | missing | unreadable
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
        tools = {v.job.tool for v in failing}  # a latency pass does not clear a bandwidth failure
        bad = Counter(x for v in failing for x in (*v.job.crosses, *v.job.cables))
        good = Counter(
            x for v in self.verdicts if v.passed and v.job.tool in tools for x in (*v.job.crosses, *v.job.cables)
        )
        ranked = [(x, n, good[x]) for x, n in bad.items() if n >= 2]
        return sorted(ranked, key=lambda r: (r[2], -r[1], r[0]))


def judge(suite: Suite, results: Path) -> Report:
    report = Report()
    for job in suite.jobs():
        report.verdicts.append(_verdict(job, results / f"{job.id}.txt"))
    return report


def _verdict(job: Job, path: Path) -> Verdict:
    if not path.is_file():
        return Verdict(job, "missing", None, f"no result file {path.name}")
    with path.open("rb") as fh:
        text = fh.read(MAX_OUTPUT).decode("utf-8", errors="replace")
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
    suite = ET.Element(
        "testsuite",
        name="gpufabric-acceptance",
        tests=str(len(report.verdicts)),
        failures=str(sum(v.status == "failed" for v in report.verdicts)),
        errors=str(sum(v.status in ("missing", "unreadable") for v in report.verdicts)),
    )
    for v in report.verdicts:
        case = ET.SubElement(suite, "testcase", classname=f"acceptance.{v.job.plane}.{v.job.tool}", name=v.job.id)
        if v.status == "failed":
            relation = ">" if v.job.tool in ("ib_write_lat", "ping") else "<"
            node = ET.SubElement(
                case,
                "failure",
                message=f"observed {v.observed} {v.job.unit} {relation} threshold {v.job.threshold} "
                f"(expected {v.job.expected})",
            )
            node.text = f"crosses: {', '.join(v.job.crosses)}\ncables: {', '.join(v.job.cables)}"
        elif v.status != "passed":
            ET.SubElement(case, "error", message=v.detail)
    return ET.tostring(suite, encoding="unicode") + "\n"
