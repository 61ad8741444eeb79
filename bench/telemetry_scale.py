"""One exporter shard's scrape cycle against a simulated fleet, and the shards the 32k fabric needs.

    sudo python -m bench.telemetry_scale                        # 1/256 of the 32k example (140 switches)
    sudo python -m bench.telemetry_scale --scale 1/256,1/128 --repeats 5 --workers 16,32

The switches are the fleet simulator's (bench/fleet_sim, a test double: Cumulus over SSH, each read
delayed by its latency table: 0.05 s an exec channel, 0.1 s a vtysh command, assumptions stated
there), in a network namespace of its own (bench/telemetry_sim.py); the exporter is `gpufabric
telemetry serve --shard 0/1` (every switch), run as a user runs it. Per size and worker count it
fetches /metrics `--repeats` + 1 times: the first opens every SSH connection (logins), the others
reuse them, as Prometheus's scrapes do. It prints the cycle times (median, min-max), the exporter's
CPU per cycle, the cost per switch, and from those the shards the whole 32k fabric needs for the
interval with the headroom asked (a shard's cycle within `--headroom` of the interval).

The simulated switches hold no configuration (the reads find no planned port up and no BGP session),
so a real switch's answer is longer to parse: treat the CPU figure as a floor.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from bench.telemetry_sim import SimFleet, sim_fleet
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

EXAMPLE = Path(__file__).resolve().parent.parent / "inventory" / "examples" / "three-tier-32k.yml"
PORT = 9400

# Runs inside the namespace: fetch /metrics n times, each one's wall time and the exporter's CPU.
FETCH = """
import json, socket, sys, time, urllib.request
url, pid, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / 100  # utime + stime, clock ticks of 1/100 s
host, port = url.split("/")[2].rsplit(":", 1)
for _ in range(300):  # the port open (a GET of any path would be a whole scrape: not a probe)
    try:
        socket.create_connection((host, int(port)), timeout=2).close(); break
    except OSError:
        time.sleep(0.2)
out = []
for _ in range(n):
    c0, t0 = cpu(), time.perf_counter()
    body = urllib.request.urlopen(url, timeout=600).read().decode()
    ok = sum(1 for ln in body.splitlines() if ln.startswith("gpufabric_scrape_ok{") and ln.endswith(" 1.0"))
    out.append({"wall_s": time.perf_counter() - t0, "cpu_s": cpu() - c0, "answered": ok})
print(json.dumps(out))
"""


def measure(fleet: SimFleet, workers: int, repeats: int) -> dict[str, Any]:
    switches = len(list(fleet.plan.devices()))
    listen = f"127.0.0.1:{PORT + workers}"
    proc = fleet.serve("0/1", listen, workers)
    try:
        done = fleet.run([sys.executable, "-c", FETCH, f"http://{listen}/metrics", str(proc.pid), str(repeats + 1)],
                         timeout=3600)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"fetching /metrics failed: {done.stderr[-2000:]}")
        cycles = json.loads(done.stdout)
    finally:
        proc.terminate()
        proc.wait(15)
        fleet.procs.remove(proc)
    first, steady = cycles[0], cycles[1:]
    walls = [c["wall_s"] for c in steady]
    median = statistics.median(walls)
    cpu = statistics.median(c["cpu_s"] for c in steady)
    return {
        "switches": switches, "workers": workers, "first_s": round(first["wall_s"], 2),
        "cycle_median_s": round(median, 2), "cycle_min_s": round(min(walls), 2), "cycle_max_s": round(max(walls), 2),
        "cpu_per_cycle_s": round(cpu, 2), "ms_per_switch": round(1000 * median / switches, 1),
        "cpu_ms_per_switch": round(1000 * cpu / switches, 1),
        "answered": min(c["answered"] for c in cycles),
    }  # fmt: skip


def shards_needed(row: dict[str, Any], fabric: int, interval: float, headroom: float) -> dict[str, Any]:
    """Shards so a cycle of the whole fabric's share fits headroom x interval, by wall time at this
    worker count; and the exporter CPU cores the fabric needs at that rate (the floor said above)."""
    budget = interval * headroom
    wall = fabric * row["ms_per_switch"] / 1000
    cores = fabric * row["cpu_ms_per_switch"] / 1000 / interval
    return {"fabric_cycle_one_shard_s": round(wall, 1), "shards": max(1, math.ceil(wall / budget)),
            "cores": round(cores, 2)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="1/256", help="fractions of the 32k example, comma-separated")
    parser.add_argument("--workers", default="16", help="exporter workers (serve --workers), comma-separated")
    parser.add_argument("--repeats", type=int, default=5, help="steady cycles timed (after the first, which logs in)")
    parser.add_argument("--latency-scale", type=float, default=1.0, help="multiply the simulator's latencies")
    parser.add_argument("--interval", type=float, default=30.0, help="the scrape interval, seconds")
    parser.add_argument("--headroom", type=float, default=0.5, help="share of the interval a cycle may take")
    parser.add_argument("--json", type=Path, help="write the rows here")
    args = parser.parse_args()
    plan = build_plan(load_intent(str(EXAMPLE)))
    by_plane: dict[str, int] = {}
    for d in plan.devices():
        by_plane[d.plane] = by_plane.get(d.plane, 0) + 1
    fabric = sum(by_plane.values())
    rows = []
    for text in args.scale.split(","):
        with sim_fleet(Fraction(text.strip()), args.latency_scale) as fleet:
            for w in (int(x) for x in args.workers.split(",")):
                print(f"measuring {text} with {w} workers ...", file=sys.stderr)
                row = {"scale": text.strip(), **measure(fleet, w, args.repeats)}
                rows.append({**row, **shards_needed(row, fabric, args.interval, args.headroom)})
    planes = ", ".join(f"{p} {n}" for p, n in by_plane.items())
    cols = [("scale", "scale"), ("switches", "switches"), ("workers", "workers"), ("answered", "answered"),
            ("first_s", "first s"), ("cycle_median_s", "cycle s"), ("cycle_min_s", "min s"), ("cycle_max_s", "max s"),
            ("cpu_per_cycle_s", "cpu s"), ("ms_per_switch", "ms/switch"), ("cpu_ms_per_switch", "cpu ms/sw"),
            ("fabric_cycle_one_shard_s", "32k 1 shard s"), ("shards", "shards"), ("cores", "cores")]  # fmt: skip
    print(" ".join(f"{title:>9}" for _, title in cols))
    for row in rows:
        print(" ".join(f"{row[k]!s:>9}" for k, _ in cols))
    print(
        f"(steady cycles: median, min-max of {args.repeats}, connections kept open; first: with every login; "
        f"32k = {fabric} switches ({planes}); shards: a cycle within {args.headroom:.0%} of {args.interval:g} s; "
        f"cores: exporter CPU for the whole fabric every {args.interval:g} s; latency scale {args.latency_scale:g})"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
