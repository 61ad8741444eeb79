"""Exporter shards under a real Prometheus (Debian's, from .cache/prometheus): three `telemetry serve
--shard I/3` exporters and one Prometheus configured by `telemetry prometheus --shards 3` together
report every planned switch exactly once.

The switches are the fleet simulator's (bench/fleet_sim: a test double answering the Cumulus driver's
reads over SSH, every switch on its management address in a network namespace of its own), not the
FRR lab: 140 switches of the 32k example at 1/256 of its nodes, more than the lab holds. Every
process runs inside that namespace; the test reads Prometheus's HTTP API there too."""

from __future__ import annotations

import json
import shutil
import sys
import time
import urllib.parse
from fractions import Fraction

import pytest
from conftest import run

from gpufabric.telemetry.shards import shard_of

pytestmark = [pytest.mark.lab, pytest.mark.root]
asyncssh = pytest.importorskip("asyncssh")  # the `test` extra installs it

from bench.telemetry_sim import SimFleet, sim_fleet  # noqa: E402 (after the importorskip: it needs asyncssh)

SHARDS = 3
BASE = 9300  # inside the namespace nothing else listens


def _query(fleet: SimFleet, port: int, expr: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    code = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=30).read().decode())"
    done = fleet.run([sys.executable, "-c", code], timeout=60)
    if done.returncode != 0:
        return []
    return list(json.loads(done.stdout)["data"]["result"])


def test_three_shards_report_every_switch_exactly_once(tmp_path):
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        pytest.fail("prometheus is missing: scripts/test.sh unpacks Debian's package into .cache/prometheus")
    with sim_fleet(Fraction(1, 256), latency_scale=0.1, folder=tmp_path) as fleet:
        planned = {d.name for d in fleet.plan.devices()}
        out = tmp_path / "prom"
        # A shard's scrape logs in to (then reads) its ~47 switches, and its timeout is the interval: on a
        # loaded machine a short one fails scrapes. The test waits for what Prometheus holds, not for seconds.
        run("gpufabric", "telemetry", "prometheus", str(fleet.intent), "--shards", str(SHARDS),
            "--listen-base", f"127.0.0.1:{BASE}", "--interval", "10s", "-o", str(out), check=True)  # fmt: skip
        for i in range(SHARDS):
            fleet.serve(f"{i}/{SHARDS}", f"127.0.0.1:{BASE + i}")
        prom_port = BASE + 90
        fleet.start([prometheus, f"--config.file={out / 'prometheus.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                     f"--web.listen-address=127.0.0.1:{prom_port}"], "prometheus.log")  # fmt: skip

        # Until every switch is counted and the last scrape of each shard read every one of its switches.
        deadline = time.monotonic() + 240
        while True:
            per_device = _query(fleet, prom_port, "count by (device) (gpufabric_scrape_ok)")
            by_shard = _query(fleet, prom_port, "gpufabric_scrape_ok")
            up = _query(fleet, prom_port, 'up{job="gpufabric"}')
            complete = len({r["metric"]["device"] for r in per_device}) >= len(planned)
            answered = by_shard and all(r["value"][1] == "1" for r in by_shard)
            if (complete and answered and len(up) == SHARDS and all(r["value"][1] == "1" for r in up)) or (
                time.monotonic() > deadline
            ):
                break
            time.sleep(2)
        logs = {p.name: p.read_text()[-1500:] for p in tmp_path.glob("*.log")}
        seen = {r["metric"]["device"]: int(r["value"][1]) for r in per_device}
        assert set(seen) == planned, (sorted(planned - set(seen))[:10], sorted(set(seen) - planned)[:10], logs)
        assert set(seen.values()) == {1}, {d: n for d, n in seen.items() if n != 1}

        # Each device came from the shard the hash gives it, and every shard was scraped and answered.
        assert {(r["metric"]["device"], r["metric"]["shard"]) for r in by_shard} == {
            (d, str(shard_of(d, SHARDS))) for d in planned
        }
        unread = [r["metric"]["device"] for r in by_shard if r["value"][1] != "1"]
        assert not unread, unread  # every simulated switch answered its shard
        assert sorted((r["metric"]["shard"], r["value"][1]) for r in up) == [(str(i), "1") for i in range(SHARDS)]
        sizes = _query(fleet, prom_port, "count by (shard) (gpufabric_scrape_ok)")
        assert sum(int(r["value"][1]) for r in sizes) == len(planned)
