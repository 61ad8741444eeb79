"""The job join and the probe plan on the 32,768-GPU example (4,096 servers, 8 rails, 512 leaves, 3 tiers).

    python -m bench.job_telemetry_scale              # the table (about a minute on 2 cores)
    python -m bench.job_telemetry_scale --runs 5
    python -m bench.job_telemetry_scale --json

Figures, in one process on a plan built once before (not counted; the collector off, as the commands run):
- the job join for 2,000 running jobs: Slurm's `squeue --json` text (written here in Slurm 22.05's layout:
  2,000 RUNNING jobs on 4,080 nodes, placed as Slurm's tree plugin packs them: 1,600 one-node jobs, 300 of 4,
  90 of 8 and 10 of 56 nodes, each on consecutive nodes) read, every job placed on the plan and its rows
  made, then served: the collector's families written in Prometheus's text format (prometheus_client's own
  writer), as a scrape reads them. The plan's indexes are built when the collector starts, not counted.
  - `telemetry serve --jobs slurm`: a read on the join's own thread (every job placed; then the same jobs,
    their rows kept), and a scrape, which serves the last answer. Goal: each under 2 s;
  - a one-off scrape (`telemetry scrape --jobs slurm`): the read, every job placed and served, in one go
    (no goal: the two costs above together, once).
- the probe plan for 4,096 servers: every rail's leaf pairs, the rounds for the spines; checked here: every
  (leaf, leaf) pair of every rail covered, every host at most 64 probes, the spine and superspine miss figures.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.cli_scale import EXAMPLE

GOAL_SCRAPE = 2.0
GOAL_PLAN = 10.0
SIZES = ((1600, 1), (300, 4), (90, 8), (10, 56))  # (jobs, nodes each): 2,000 jobs on 4,080 of 4,096 nodes


def squeue_text(servers: list[str]) -> str:
    """2,000 RUNNING jobs on consecutive nodes, in `squeue --json`'s 22.05 layout (the fields the reader reads)."""
    jobs = []
    at = 0
    job_id = 100_000
    for count, size in SIZES:
        for _ in range(count):
            names = servers[at : at + size]
            at += size
            job_id += 1
            nodes = names[0] if size == 1 else f"gpu[{names[0][3:]}-{names[-1][3:]}]"
            jobs.append({"job_id": job_id, "user_name": f"user{job_id % 97}", "job_state": "RUNNING", "nodes": nodes})
    return json.dumps({"meta": {}, "errors": [], "jobs": jobs})


def _times(runs: int, work: Callable[[], Any]) -> tuple[dict[str, float], Any]:
    times = []
    result = None
    for _ in range(runs):
        start = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - start)
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}, result


def measure(runs: int) -> list[dict[str, Any]]:
    from prometheus_client import CollectorRegistry, generate_latest

    from gpufabric.export.probe_plan import covered_leaf_pairs, leaves_of, probe_plan
    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan
    from gpufabric.telemetry.job_join import JobCollector

    gc.disable()
    start = time.perf_counter()
    plan = build_plan(load_intent(str(EXAMPLE)))
    planned = time.perf_counter() - start
    servers = sorted(s.name for s in plan.servers if s.nics)
    text = squeue_text(servers)
    rows: list[dict[str, Any]] = []

    class Clock:
        now = 0.0

        def __call__(self) -> float:
            return self.now

    def scrape(collector: JobCollector) -> bytes:
        registry = CollectorRegistry()
        registry.register(collector)
        return generate_latest(registry)

    fresh = []  # a one-off scrape (`telemetry scrape --jobs slurm`): the first read, every job placed, served
    served = b""
    collector = None
    for _ in range(runs):
        clock = Clock()
        collector = JobCollector(plan, lambda: text, interval=15, clock=clock)  # the plan's indexes: at start
        start = time.perf_counter()
        served = scrape(collector)
        fresh.append(time.perf_counter() - start)
    assert collector is not None
    series = served.count(b"\ngpufabric_job_port_info{") + served.count(b"\ngpufabric_job_nic_info{")
    ports = served.count(b"\ngpufabric_job_port_info{")
    uplinks = served.count(b'role="uplink"')
    rows.append(
        {"figure": "one-off scrape: read, 2,000 jobs placed, served", "goal_s": None,
         "median": statistics.median(fresh), "min": min(fresh), "max": max(fresh), "series": series, "ports": ports,
         "uplinks": uplinks, "bytes": len(served), "plan_s": planned}
    )  # fmt: skip

    def placed() -> None:  # `serve`: on the join's own thread, beside the scrapes
        JobCollector(plan, lambda: text, interval=15).refresh()

    def again() -> None:
        collector.refresh()  # the same jobs: their rows kept

    for name, work in (
        ("serve: a read placing 2,000 jobs (thread)", placed),
        ("serve: a read, same jobs (thread)", again),
    ):
        figures, _ = _times(runs, work)
        rows.append({"figure": name, "goal_s": GOAL_SCRAPE, **figures})
    figures, _ = _times(runs, lambda: scrape(collector))
    rows.append({"figure": "serve: a scrape (the last answer)", "goal_s": GOAL_SCRAPE, **figures})

    figures, found = _times(max(1, runs), lambda: probe_plan(plan))
    wanted = leaves_of(plan)
    covered = covered_leaf_pairs(found)
    every = all(len(covered.get(k, ())) == len(v) * (len(v) - 1) // 2 for k, v in wanted.items())
    most = max(len(p) for p in found.probes.values())
    rows.append(
        {"figure": "probe plan, 4,096 servers", "goal_s": GOAL_PLAN, **figures, "hosts": len(found.responders),
         "most_probes": most, "every_leaf_pair": every, "groups": len(found.groups),
         "pairs": sum(g.leaf_pairs for g in found.groups), "rounds": max(g.rounds for g in found.groups),
         "spines": max(len(g.spines) for g in found.groups),
         "superspines": max(len(g.superspines) for g in found.groups),
         "spine_miss": max(g.spine_miss for g in found.groups),
         "superspine_miss": max(g.superspine_miss for g in found.groups),
         "probes": sum(len(p) for p in found.probes.values())}
    )  # fmt: skip
    for r in rows:
        print(f"  {r['figure']}: {r['median']:.3f} s", file=sys.stderr)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = measure(args.runs)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'figure':46} {'median':>8} {'min':>8} {'max':>8} {'goal':>6}")
    over = False
    for r in rows:
        mark = "  OVER" if r["goal_s"] is not None and r["median"] > r["goal_s"] else ""
        over |= bool(mark)
        goal = "" if r["goal_s"] is None else f"{r['goal_s']:.2f}"
        print(f"{r['figure']:46} {r['median']:8.3f} {r['min']:8.3f} {r['max']:8.3f} {goal:>6}{mark}")
    join, probes = rows[0], rows[-1]
    print(
        f"(seconds) join: {join['series']} info series ({join['ports']} port rows, {join['uplinks']} of them uplinks), "
        f"{join['bytes'] / 1e6:.1f} MB of text; plan built once before in {join['plan_s']:.2f} s, not counted"
    )
    print(
        f"probe plan: {probes['hosts']} hosts, {probes['probes']} probes, at most {probes['most_probes']} a host; "
        f"{probes['groups']} rails, {probes['pairs']} leaf pairs, every one covered: {probes['every_leaf_pair']}; "
        f"{probes['rounds']} round(s); {probes['spines']} spines and {probes['superspines']} superspines a rail, "
        f"none reached: p <= {probes['spine_miss']:.1e} and {probes['superspine_miss']:.1e}"
    )
    return 1 if over or not probes["every_leaf_pair"] or probes["most_probes"] > 64 else 0


if __name__ == "__main__":
    sys.exit(main())
