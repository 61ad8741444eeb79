"""`job timeline --prometheus`: counter jumps read from the real Prometheus (Debian's 2.42, the package
scripts/test.sh unpacks into .cache/prometheus), on loopback, over history written beforehand: the exporter's
counter series as OpenMetrics text, turned into TSDB blocks by the real `promtool tsdb create-blocks-from
openmetrics` in Prometheus's data folder before it starts. No root: Prometheus listens on 127.0.0.1 only and is
stopped by its PID.

The job is the default fabric's gpu[01,03]; its footprint ports are the NICs' leaf ports (cmp-su1-leaf1 swp1, ...)
and both ends of the links its paths cross (cmp-spine1 swp1, ...)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.conftest import run_in_process
from tests.loopback import free_port, http_ready

ROOT = Path(__file__).resolve().parents[2]
CACHED = ROOT / ".cache" / "prometheus" / "usr" / "bin"
SCRAPE = 15  # seconds between the written samples, as a scrape interval


def _binary(name: str) -> str:
    found = shutil.which(name) or (str(CACHED / name) if (CACHED / name).exists() else None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing: scripts/test.sh unpacks Debian's prometheus package into .cache")
        pytest.skip(f"{name} is not installed (scripts/test.sh unpacks Debian's prometheus package into .cache)")
    return found


# (metric, labels, [(minutes after T0, value from then on)]): each series written every SCRAPE seconds for 90
# minutes from T0, holding the value of its last step. The window is T0+10m to T0+70m.
SERIES = [
    # gpu01's leaf port: +40 errors at 30m (an event), tx flat
    ("gpufabric_interface_errors_total", 'device="cmp-su1-leaf1",port="swp1",direction="rx"', [(0, 5), (30, 45)]),
    ("gpufabric_interface_errors_total", 'device="cmp-su1-leaf1",port="swp1",direction="tx"', [(0, 7)]),
    # a port of a footprint switch that is not the footprint's (gpu02's), and a switch off the footprint
    ("gpufabric_interface_errors_total", 'device="cmp-su1-leaf1",port="swp2",direction="rx"', [(0, 0), (40, 100)]),
    ("gpufabric_interface_errors_total", 'device="cmp-su3-leaf1",port="swp1",direction="rx"', [(0, 0), (40, 100)]),
    # a jump before the window
    ("gpufabric_interface_errors_total", 'device="cmp-su1-leaf2",port="swp1",direction="rx"', [(0, 0), (5, 9)]),
    # a counter reset (the exporter restarted): no increase
    ("gpufabric_interface_errors_total", 'device="cmp-su2-leaf2",port="swp1",direction="rx"', [(0, 1000), (25, 0)]),
    # +50 discards (under 100), then +500 (an event)
    (
        "gpufabric_interface_discards_total",
        'device="cmp-spine1",port="swp1",direction="rx"',
        [(0, 0), (20, 50), (50, 550)],
    ),
    # 2,000,000 pause frames received at once on one priority (an event); a transmitted burst is not counted
    (
        "gpufabric_pfc_pause_frames_total",
        'device="cmp-spine2",port="swp3",priority="3",direction="rx"',
        [(0, 0), (36, 2_000_000)],
    ),
    (
        "gpufabric_pfc_pause_frames_total",
        'device="cmp-spine2",port="swp4",priority="3",direction="tx"',
        [(0, 0), (36, 5_000_000)],
    ),
    # the link flapped twice
    ("gpufabric_link_carrier_changes_total", 'device="cmp-su2-leaf1",port="swp3"', [(0, 2), (45, 4)]),
    # ECN marks and the watchdog: quiet (their queries still run against the real server)
    ("gpufabric_ecn_marked_packets_total", 'device="cmp-spine1",port="swp2"', [(0, 10)]),
    ("gpufabric_pfc_watchdog_events_total", 'device="cmp-spine1",port="swp2"', [(0, 0)]),
]


def _openmetrics(t0: datetime) -> str:
    lines = []
    for metric, labels, steps in SERIES:
        for k in range(90 * 60 // SCRAPE + 1):
            minute = k * SCRAPE / 60
            value = next(v for m, v in reversed(steps) if m <= minute)
            lines.append(f"{metric}{{{labels}}} {value} {t0.timestamp() + k * SCRAPE:.0f}")
    return "\n".join(lines) + "\n# EOF\n"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, datetime]]:
    """The real Prometheus on loopback holding SERIES from T0 (three hours ago, on a whole minute)."""
    promtool, binary = _binary("promtool"), _binary("prometheus")
    tmp = tmp_path_factory.mktemp("prometheus")
    t0 = (datetime.now(UTC) - timedelta(hours=3)).replace(second=0, microsecond=0)
    (tmp / "history.om").write_text(_openmetrics(t0))
    data = tmp / "data"
    made = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(tmp / "history.om"), str(data)],
                          check=False, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert made.returncode == 0, made.stderr
    (tmp / "prometheus.yml").write_text("global:\n  scrape_interval: 15s\n")
    port = free_port()
    log = (tmp / "prometheus.log").open("w")
    server = subprocess.Popen(
        [binary, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={data}",
         "--storage.tsdb.retention.time=3650d", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    try:
        end = time.monotonic() + 120
        while not http_ready(port):
            assert server.poll() is None and time.monotonic() < end, (tmp / "prometheus.log").read_text()
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}", t0
    finally:
        server.terminate()
        server.wait(60)
        log.close()


def _timeline(url: str, t0: datetime, tmp_path: Path, *extra: str) -> list[dict]:
    since, until = t0 + timedelta(minutes=10), t0 + timedelta(minutes=70)
    done = run_in_process("gpufabric", "job", "timeline", "--nodes", "gpu[01,03]", "--since", since.isoformat(),
                          "--until", until.isoformat(), "--prometheus", url, "--audit-log", tmp_path / "none",
                          "--remediation-log", tmp_path / "none", "--json", *extra)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "no counter jump read" not in done.stderr
    return [e for e in json.loads(done.stdout)["events"] if e["kind"] == "counter"]


def _z(when: datetime) -> str:
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_the_footprint_s_counter_jumps_from_the_real_prometheus(prometheus, tmp_path):
    url, t0 = prometheus
    events = _timeline(url, t0, tmp_path)
    got = [(e["time"], e["device"], e["port"], e["summary"].split(":")[0]) for e in events]
    assert got == [
        (_z(t0 + timedelta(minutes=29)), "cmp-su1-leaf1", "swp1", "errors"),
        (_z(t0 + timedelta(minutes=35)), "cmp-spine2", "swp3", "pauses"),
        (_z(t0 + timedelta(minutes=44)), "cmp-su2-leaf1", "swp3", "flaps"),
        (_z(t0 + timedelta(minutes=49)), "cmp-spine1", "swp1", "discards"),
    ]
    # The increase Prometheus computed (its extrapolation may add up to a third over a step of 4 samples).
    size = {e["summary"].split(":")[0]: float(e["summary"].split("+")[1].split()[0].replace(",", "")) for e in events}
    assert 40 <= size["errors"] <= 54 and 500 <= size["discards"] <= 667 and 2 <= size["flaps"] <= 2.7
    assert 2e6 <= size["pauses"] <= 2.67e6
    assert events[0]["summary"].endswith(f"errored frames in the 60 s to {_z(t0 + timedelta(minutes=30))} (over 0)")
    assert all(e["source"].startswith(url + "/api/v1/query_range#") for e in events)


def test_thresholds_and_the_step_are_the_caller_s(prometheus, tmp_path):
    url, t0 = prometheus
    events = _timeline(url, t0, tmp_path, "--counter-threshold", "discards=10", "--counter-threshold", "errors=100",
                       "--counter-step", "600")  # fmt: skip
    got = [(e["time"], e["device"], e["summary"].split(":")[0]) for e in events]
    # Ten-minute steps from T0+10m: the +50 discards (at 20m) now count, the +40 errors do not, and 2,000,000
    # pauses are under the default for ten minutes (6,000,000).
    assert got == [
        (_z(t0 + timedelta(minutes=10)), "cmp-spine1", "discards"),
        (_z(t0 + timedelta(minutes=40)), "cmp-spine1", "discards"),
        (_z(t0 + timedelta(minutes=40)), "cmp-su2-leaf1", "flaps"),
    ]
