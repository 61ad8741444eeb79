"""The Prometheus exporter: each scrape reads every switch (and server) the plan names, on a bounded
pool of workers, over connections kept open between scrapes (reopened when one fails).

A scrape has a budget (it must answer before Prometheus's scrape timeout) and each switch's read a
deadline inside it, counted from when the read starts: a switch that has not answered by then is
reported for this scrape as not read (`gpufabric_scrape_ok 0`) and the scrape is served with the others.
Its read is left to end on its own thread (a read cannot be interrupted safely mid-answer); until it
does, the switch is not asked again: a scrape meanwhile (or one running beside it, from a second
Prometheus) waits for that same read within its own deadline. So one slow switch holds one thread,
never a shard's scrape. Workers are daemon threads: a hung read never delays the exit.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from gpufabric.errors import GpufabricError
from gpufabric.telemetry.bmc import BmcTarget, read_bmc
from gpufabric.telemetry.bmc import samples as bmc_samples
from gpufabric.telemetry.metrics import METRICS
from gpufabric.telemetry.read import Sample, host_script, read_host, read_switch
from gpufabric.telemetry.redfish import Endpoint, Limits
from gpufabric.telemetry.shards import SCRAPE_BUDGET, SWITCH_DEADLINE
from gpufabric.telemetry.targets import NicTarget, SwitchTarget

Connect = Callable[[SwitchTarget], Any]  # an open NAPALM driver
RunOnHost = Callable[[str, str], str]  # (server, shell command) -> stdout


class BudgetError(ValueError, GpufabricError):
    """A per-switch deadline that does not fit the scrape's budget, or a budget that is not positive."""


@dataclass(eq=False)
class _Read:
    """One read of a switch or a server, shared by the scrapes that wait for it."""

    key: str  # "switch NAME" or "host NAME": one read of it at a time
    read: Callable[[], list[Sample]]
    not_read: list[Sample]  # what a scrape serves when it has no answer in time
    waiters: int = 1  # scrapes not yet served
    started: float | None = None
    samples: list[Sample] | None = None  # set when the read has ended


class FabricCollector:
    def __init__(
        self,
        switches: list[SwitchTarget],
        connect: Connect,
        hosts: dict[str, list[NicTarget]] | None = None,
        run_on_host: RunOnHost | None = None,
        workers: int = 16,
        *,
        budget: float = SCRAPE_BUDGET,
        deadline: float = SWITCH_DEADLINE,
        infiniband: Callable[[], list[Sample]] | None = None,
        bmcs: list[tuple[BmcTarget, Endpoint]] | None = None,
    ) -> None:
        if not 0 < deadline <= budget:
            raise BudgetError(
                f"each switch's deadline ({deadline:g} s) must be positive and fit the scrape's budget ({budget:g} s)"
            )
        self.switches, self.connect = switches, connect
        self.hosts, self.run_on_host = hosts or {}, run_on_host
        self.workers = max(1, workers)
        self.infiniband = infiniband  # the InfiniBand plane's port counters (telemetry/ib.py), read like a switch
        self.budget, self.deadline = budget, deadline
        # Servers' BMCs over Redfish (telemetry/bmc.py): each read within the switches' deadline, its requests
        # within the Redfish client's own timeout (or the deadline, when shorter).
        self.bmcs = bmcs or []
        self._bmc_limits = Limits(request_timeout=min(Limits().request_timeout, deadline), deadline=deadline)
        self._conns: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition()  # a read started or ended
        self._reads: dict[str, _Read] = {}  # reads not yet ended, whichever scrape asked for them

    def describe(self) -> Iterator[Metric]:
        yield from _families([])

    def collect(self) -> Iterator[Metric]:
        yield from _families(self.scrape())

    def scrape(self) -> list[Sample]:
        """Every switch's and server's samples, within the budget; a switch without an answer within its
        deadline is `gpufabric_scrape_ok 0` (a server without one has no samples)."""
        started = time.monotonic()
        asked = [(f"switch {t.device}", _bind(self._switch, t), [_scrape_ok(t, 0.0)]) for t in self.switches]
        if self.run_on_host is not None:
            asked += [(f"host {name}", _bind(self._host, name), []) for name in sorted(self.hosts)]
        if self.infiniband is not None:
            asked.append(("infiniband", self.infiniband, []))
        for target, endpoint in self.bmcs:  # a BMC without an answer in time is gpufabric_bmc_up 0
            asked.append((f"bmc {target.node}", _bmc_read(target, endpoint, self._bmc_limits), _bmc_down(target)))
        jobs: queue.SimpleQueue[_Read] = queue.SimpleQueue()
        reads = []
        with self._changed:
            for key, read, not_read in asked:
                r = self._reads.get(key)
                if r is None:
                    r = self._reads[key] = _Read(key, read, not_read)
                else:  # being read already (an earlier or a parallel scrape): that read's answer serves this one
                    r.waiters += 1
                if r.started is None:
                    jobs.put(r)
                reads.append(r)
        for _ in range(min(self.workers, jobs.qsize())):
            self._worker(jobs)
        self._wait(reads, jobs, started + self.budget)
        return [s for r in reads for s in self._served(r)]

    def _wait(self, reads: list[_Read], jobs: queue.SimpleQueue[_Read], end: float) -> None:
        """Until every read has ended or passed its deadline, or the budget is spent. A worker whose read
        passed its deadline is replaced, so the reads still queued keep the pool's width."""
        overdue: set[int] = set()
        with self._changed:
            while True:
                now = time.monotonic()
                for r in reads:
                    late = r.samples is None and r.started is not None and now >= r.started + self.deadline
                    if late and id(r) not in overdue:
                        overdue.add(id(r))
                        if not jobs.empty():
                            self._worker(jobs)
                pending = [r for r in reads if r.samples is None and id(r) not in overdue]
                if not pending or now >= end:
                    return
                wake = min([end] + [r.started + self.deadline for r in pending if r.started is not None])
                self._changed.wait(max(0.0, wake - now))

    def _served(self, r: _Read) -> list[Sample]:
        """This scrape's share of a read: its answer, or `not_read` if it has none yet."""
        with self._changed:
            r.waiters -= 1
            if r.samples is not None:
                return r.samples
            if r.started is None and r.waiters == 0 and self._reads.get(r.key) is r:
                del self._reads[r.key]  # asked by no scrape now: it will not start (and a later scrape asks anew)
            return r.not_read

    def _worker(self, jobs: queue.SimpleQueue[_Read]) -> None:
        threading.Thread(target=self._work, args=(jobs,), name="gpufabric-scrape", daemon=True).start()

    def _work(self, jobs: queue.SimpleQueue[_Read]) -> None:
        while True:
            try:
                r = jobs.get_nowait()
            except queue.Empty:
                return
            with self._changed:
                if r.started is not None or r.samples is not None or r.waiters == 0:
                    continue  # taken from another scrape's queue, or no scrape waits for it any more
                r.started = time.monotonic()
                self._changed.notify_all()
            try:
                samples = r.read()
            except Exception:  # the read functions report their own failures; this is a last resort
                samples = r.not_read
            with self._changed:
                r.samples = samples
                if self._reads.get(r.key) is r:
                    del self._reads[r.key]  # the switch is free: the next scrape reads it again
                self._changed.notify_all()

    def _switch(self, t: SwitchTarget) -> list[Sample]:
        try:
            conn = self._conn(t)
            samples = read_switch(conn, t)
        except Exception:  # one switch that cannot be read is its scrape_ok 0, not a failed scrape
            self._drop(t.device)
            return [_scrape_ok(t, 0.0)]
        return [_scrape_ok(t, 1.0), *samples]

    def _host(self, name: str) -> list[Sample]:
        assert self.run_on_host is not None
        nics = self.hosts[name]
        try:
            return read_host(self.run_on_host(name, host_script(nics)), nics)
        except Exception:
            return []

    def _conn(self, t: SwitchTarget) -> Any:
        with self._lock:
            conn = self._conns.get(t.device)
        if conn is None:
            conn = self.connect(t)
            with self._lock:
                self._conns[t.device] = conn
        return conn

    def _drop(self, device: str) -> None:
        with self._lock:
            conn = self._conns.pop(device, None)
        if conn is not None:
            with contextlib.suppress(Exception):  # a connection already broken closes as it can
                conn.close()

    def close(self) -> None:
        for device in list(self._conns):
            self._drop(device)


def _scrape_ok(t: SwitchTarget, value: float) -> Sample:
    return Sample("gpufabric_scrape_ok", {"plane": t.plane, "device": t.device, "role": t.role}, value)


def _bmc_read(target: BmcTarget, endpoint: Endpoint, limits: Limits) -> Callable[[], list[Sample]]:
    return lambda: bmc_samples(read_bmc(target, endpoint, limits))


def _bmc_down(target: BmcTarget) -> list[Sample]:
    return [Sample("gpufabric_bmc_up", target.labels, 0.0)]


def _bind(read: Callable[[Any], list[Sample]], what: Any) -> Callable[[], list[Sample]]:
    return lambda: read(what)


def _families(samples: list[Sample]) -> Iterator[Metric]:
    by_metric: dict[str, list[Sample]] = {}
    for s in samples:
        by_metric.setdefault(s.metric, []).append(s)
    for m in METRICS.values():
        family: GaugeMetricFamily | CounterMetricFamily
        if m.kind == "counter":
            family = CounterMetricFamily(m.name.removesuffix("_total"), m.help, labels=list(m.labels))
        else:
            family = GaugeMetricFamily(m.name, m.help, labels=list(m.labels))
        for s in by_metric.get(m.name, []):
            family.add_metric([s.labels.get(label, "") for label in m.labels], s.value)
        yield family
