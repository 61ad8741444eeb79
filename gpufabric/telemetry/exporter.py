"""The Prometheus exporter: each scrape reads every switch (and server) the plan names, on a bounded
pool of workers, over connections kept open between scrapes (reopened when one fails)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from gpufabric.telemetry.metrics import METRICS
from gpufabric.telemetry.read import Sample, host_script, read_host, read_switch
from gpufabric.telemetry.targets import NicTarget, SwitchTarget

Connect = Callable[[SwitchTarget], Any]  # an open NAPALM driver
RunOnHost = Callable[[str, str], str]  # (server, shell command) -> stdout


class FabricCollector:
    def __init__(
        self,
        switches: list[SwitchTarget],
        connect: Connect,
        hosts: dict[str, list[NicTarget]] | None = None,
        run_on_host: RunOnHost | None = None,
        workers: int = 16,
    ) -> None:
        self.switches, self.connect = switches, connect
        self.hosts, self.run_on_host = hosts or {}, run_on_host
        self.workers = max(1, workers)
        self._conns: dict[str, Any] = {}
        self._lock = threading.Lock()

    def describe(self) -> Iterator[Metric]:
        yield from _families([])

    def collect(self) -> Iterator[Metric]:
        with ThreadPoolExecutor(self.workers) as pool:
            parts = list(pool.map(self._switch, self.switches))
            if self.run_on_host is not None:
                parts += list(pool.map(self._host, sorted(self.hosts)))
        yield from _families([s for part in parts for s in part])

    def _switch(self, t: SwitchTarget) -> list[Sample]:
        ok = {"plane": t.plane, "device": t.device, "role": t.role}
        try:
            conn = self._conn(t)
            samples = read_switch(conn, t)
        except Exception:  # one switch that cannot be read is its scrape_ok 0, not a failed scrape
            self._drop(t.device)
            return [Sample("gpufabric_scrape_ok", ok, 0.0)]
        return [Sample("gpufabric_scrape_ok", ok, 1.0), *samples]

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
