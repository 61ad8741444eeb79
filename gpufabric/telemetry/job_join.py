"""Running jobs joined to the switch ports and NICs of their footprints, as info series beside the exporter's
counters (kube-state-metrics' `kube_pod_info` joins pods to nodes the same way):

    gpufabric_job_port_info{job_id, user, device, port, role} 1
    gpufabric_job_nic_info{job_id, user, host, interface} 1

`role` is `host` (the leaf port of one of the job's NICs), `uplink` (a port of one of the job's leaves toward a
spine its ECMP paths cross) or `downlink` (that link's spine end). A recording rule joins a counter to its jobs
by `device, port` (or `host, interface`) and takes the port's plan labels (peer, cable, rail) from the counter,
which has them already: gpufabric/telemetry/job_rules.py. The info series carry only the join's keys, so that
a scrape of 2,000 running jobs stays small and fast.

The jobs are read from the scheduler (Slurm's `squeue --json`) at most every `interval` seconds, on a thread of
their own when served (a slow scheduler never holds a scrape), inline for a one-off scrape. The series of an
answer are built once, when it is read, and served as they are until the next. Each scrape serves the last
answer only while it is younger than `max_age`: a scheduler that failed its last read, or has not answered
for that long, leaves no job series at all and `gpufabric_job_scheduler_up 0`, never the jobs of an older
answer. A job that ended is absent from the next answer, so its series end there (Prometheus marks them stale
on the scrape that lacks them) and every rule joined on them gives nothing for it.

Cardinality: one port row per NIC of a running job, plus two per leaf-to-spine link its paths cross on its own
leaves; one NIC row per NIC. Whole-node jobs put each NIC in one job, so NIC and host rows are at most the
cluster's planned NICs; uplink rows are at most (jobs under a leaf) x (the leaf's uplinks) x 2 per leaf, and
none for a job whose nodes share one leaf per rail. docs/telemetry.md has the figures of the 32k example.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.samples import Sample as PromSample

from gpufabric.errors import GpufabricError
from gpufabric.jobs.ports import JobPorts, JobRows
from gpufabric.jobs.running import read_running
from gpufabric.plan.model import Plan
from gpufabric.telemetry.metrics import Metric as MetricSpec
from gpufabric.telemetry.read import Sample

log = logging.getLogger(__name__)

JOB_PORT = ("job_id", "user", "device", "port", "role")
JOB_NIC = ("job_id", "user", "host", "interface")
SCHEDULER = ("scheduler",)
INTERVAL = 15.0  # seconds between two reads of the scheduler
SHARD_KEY = "gpufabric-jobs"  # with exporter shards, the one that owns this name serves the jobs

JOB_METRICS = {
    m.name: m
    for m in (
        MetricSpec("gpufabric_job_port_info", "gauge", JOB_PORT, "a switch port on a running job's footprint (1)"),
        MetricSpec("gpufabric_job_nic_info", "gauge", JOB_NIC, "a data NIC of a running job's node (1)"),
        MetricSpec(
            "gpufabric_job_scheduler_up",
            "gauge",
            SCHEDULER,
            "1 when the scheduler's last answer is recent and read: the job series are served only then",
        ),
        MetricSpec("gpufabric_jobs_running", "gauge", SCHEDULER, "jobs holding nodes in the scheduler's last answer"),
        MetricSpec(
            "gpufabric_job_nodes_unplanned",
            "gauge",
            SCHEDULER,
            "nodes of running jobs that the plan does not hold (their NICs are not joined)",
        ),
    )
}


@dataclass(frozen=True)
class _Answer:
    at: float  # monotonic time of the read
    rows: list[JobRows] | None  # None: the read failed
    error: str = ""
    families: tuple[Metric, ...] = ()  # the answer's series, built once


class JobCollector:
    """The job join's series for a prometheus_client registry (beside the FabricCollector)."""

    def __init__(
        self,
        plan: Plan,
        read: Callable[[], str],
        *,
        scheduler: str = "slurm",
        interval: float = INTERVAL,
        max_age: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval <= 0:
            raise ValueError("the scheduler's read interval must be positive")
        self.ports = JobPorts(plan)
        self.read, self.scheduler, self.interval, self.clock = read, scheduler, interval, clock
        self.max_age = max_age if max_age is not None else 2 * interval + 5
        self._answer: _Answer | None = None
        self._lock = threading.Lock()  # one read at a time
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def refresh(self) -> None:
        """Read the scheduler once and join its running jobs (the failure is the answer when it fails)."""
        with self._lock:
            at = self.clock()
            try:
                rows = self.ports.join(read_running(self.read()))
            except (GpufabricError, OSError) as exc:  # SchedulerError, a plan refusal, a command that cannot run
                log.warning("jobs: %s did not answer as read: %s", self.scheduler, exc)
                self._answer = _Answer(at, None, str(exc))
                return
            self._answer = _Answer(at, rows, "", self._families(rows))

    def _families(self, rows: list[JobRows]) -> tuple[Metric, ...]:
        ports = GaugeMetricFamily(
            "gpufabric_job_port_info", JOB_METRICS["gpufabric_job_port_info"].help, labels=JOB_PORT
        )
        nics = GaugeMetricFamily("gpufabric_job_nic_info", JOB_METRICS["gpufabric_job_nic_info"].help, labels=JOB_NIC)
        unplanned: set[str] = set()
        # The samples made directly (add_metric's own zip per sample costs a third of a refresh at 80,000 rows).
        port_samples, nic_samples = ports.samples, nics.samples
        for job in rows:
            job_id, user = job.job.job_id, job.job.user
            unplanned.update(job.unplanned)
            for p in job.ports:
                labels = {"job_id": job_id, "user": user, "device": p.device, "port": p.port, "role": p.role}
                port_samples.append(PromSample("gpufabric_job_port_info", labels, 1.0, None))
            for n in job.nics:
                labels = {"job_id": job_id, "user": user, "host": n.host, "interface": n.interface}
                nic_samples.append(PromSample("gpufabric_job_nic_info", labels, 1.0, None))
        sched = [self.scheduler]
        running = GaugeMetricFamily(
            "gpufabric_jobs_running", JOB_METRICS["gpufabric_jobs_running"].help, labels=SCHEDULER
        )
        running.add_metric(sched, float(len(rows)))
        left = GaugeMetricFamily(
            "gpufabric_job_nodes_unplanned", JOB_METRICS["gpufabric_job_nodes_unplanned"].help, labels=SCHEDULER
        )
        left.add_metric(sched, float(len(unplanned)))
        return ports, nics, running, left

    def start(self) -> None:
        """Read on a daemon thread every `interval` (the first read now), until close()."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="gpufabric-jobs", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.refresh()
            except Exception as exc:  # a last resort: the thread keeps reading, the failure is the answer
                self._answer = _Answer(self.clock(), None, f"{type(exc).__name__}: {exc}")
            self._stop.wait(self.interval)

    def close(self) -> None:
        self._stop.set()

    def _served(self) -> _Answer | None:
        """The answer a scrape serves: the last, when it was read and is recent; None otherwise."""
        if self._thread is None:
            answer = self._answer
            if answer is None or self.clock() - answer.at >= self.interval:
                self.refresh()
        answer = self._answer
        if answer is None or answer.rows is None or self.clock() - answer.at > self.max_age:
            return None
        return answer

    def describe(self) -> Iterator[Metric]:
        yield from families([])

    def collect(self) -> Iterator[Metric]:
        answer = self._served()
        up = GaugeMetricFamily(
            "gpufabric_job_scheduler_up", JOB_METRICS["gpufabric_job_scheduler_up"].help, labels=SCHEDULER
        )
        up.add_metric([self.scheduler], 0.0 if answer is None else 1.0)
        yield up
        if answer is not None:
            yield from answer.families


def families(samples: list[Sample]) -> Iterator[Metric]:
    """The job metrics' families holding `samples` (every family, empty or not: what describe() lists)."""
    by_metric: dict[str, list[Sample]] = {}
    for s in samples:
        by_metric.setdefault(s.metric, []).append(s)
    for m in JOB_METRICS.values():
        family = GaugeMetricFamily(m.name, m.help, labels=list(m.labels))
        for s in by_metric.get(m.name, []):
            family.add_metric([s.labels.get(label, "") for label in m.labels], s.value)
        yield family


def markdown() -> str:
    rows = ["| metric | type | labels | what |", "| --- | --- | --- | --- |"]
    rows += [f"| `{m.name}` | {m.kind} | {', '.join(m.labels)} | {m.help} |" for m in JOB_METRICS.values()]
    return "\n".join(rows) + "\n"
