"""Plan plus render of every switch, against fabric size, up to the 131,072-GPU example.

    python -m bench.render_scale                          # the table
    python -m bench.render_scale --json                   # the same figures for machines
    python -m bench.render_scale --only multiplane-131k   # one fabric

Each fabric is measured in a fresh process (so peak RSS is that fabric's own): load +
validate + plan, then the render context and templates of every switch, in memory (no
disk), the first run and the best of --repeat, in wall time and in the render's CPU time (the
figure to compare on a shared machine: the wall time also counts waiting for a core, and the load
average is printed beside it). `three-tier-32k-eos` is the 32k example
with every switch on EOS (/31 links). This is one process, as a library user renders; the
CLI's figures (on every core, files written) and Arista's pyavd on the same EOS switches, measured
in the same run, are bench/cli_scale.py's.
Budgets: the 32k-GPU fabric planned and rendered in under 5 s and 1 GiB; the 131k-GPU fabric
(12,702 switches) rendered in under 8 s (the render alone, its plan is bench/plan_scale.py's) and 4 GiB.
The worst of the runs is printed beside the best: the spread.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

from bench.fabrics import eos_32k_text, use_placeholder_secrets
from bench.fresh import rows_from_fresh_processes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "inventory" / "examples"
CASES = [
    "fabric",
    "multi-vendor",
    "superpod-1su",
    "superpod-4su",
    "three-tier-32k",
    "three-tier-32k-eos",
    "multiplane-131k",
]
# fabric: (what the budget counts: "total" = plan + render, "render" = the render alone; seconds; MiB)
BUDGETS = {
    "three-tier-32k": ("total", 5.0, 1024.0),
    "three-tier-32k-eos": ("total", 5.0, 1024.0),
    "multiplane-131k": ("render", 8.0, 4096.0),
}
use_placeholder_secrets()


def _intent_text(case: str) -> str:
    if case == "fabric":
        return (ROOT / "inventory" / "fabric.yml").read_text()
    if case != "three-tier-32k-eos":
        return (EXAMPLES / f"{case}.yml").read_text()
    return eos_32k_text()


def measure_one(case: str, repeat: int) -> dict[str, float]:
    from gpufabric.config.context import LinkIndex
    from gpufabric.config.render import render_device
    from gpufabric.gc_pause import gc_paused
    from gpufabric.intent import load_intent_text
    from gpufabric.plan import build_plan

    text = _intent_text(case)
    runs = []
    cpus: list[float] = []  # the render's CPU seconds, each run
    lines = 0
    switches = 0
    for _ in range(repeat):
        start = time.perf_counter()
        plan = build_plan(load_intent_text(text, case))
        planned = time.perf_counter()
        cpu = time.process_time()
        index = LinkIndex(plan)
        lines = 0
        devices = plan.devices()
        with gc_paused():  # as `gpufabric render` does
            for device in devices:
                for body in render_device(plan, device, index).files.values():
                    lines += body.count("\n")
        done = time.perf_counter()
        cpus.append(time.process_time() - cpu)
        switches = len(devices)
        runs.append((planned - start, done - planned, done - start))
    first = runs[0]
    best = min(runs, key=lambda r: r[2])
    worst = max(runs, key=lambda r: r[2])
    return {
        "first_render_seconds": first[1],
        "worst_render_seconds": worst[1],
        "worst_seconds": worst[2],
        "switches": switches,
        "lines_per_switch": lines / switches,
        "first_seconds": first[2],
        "plan_seconds": best[0],
        "render_seconds": best[1],
        "first_render_cpu_seconds": cpus[0],
        "render_cpu_seconds": min(cpus),
        "load_average": os.getloadavg()[0],
        "seconds": best[2],
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> int:
    rows = rows_from_fresh_processes(__file__, __doc__, measure_one, {case: case for case in CASES})
    if rows is None:
        return 0
    print(
        f"{'fabric':19} {'switches':>8} {'lines/sw':>8} {'plan s':>7} {'render s':>8} {'total s':>7} "
        f"{'first s':>7} {'worst s':>7} {'switch/s':>8} {'ms/sw':>6} {'cpu s':>7} {'cpu ms/sw':>9} "
        f"{'peak MiB':>8} {'load':>5}"
    )
    for r in rows:
        ms = r["seconds"] * 1000 / r["switches"]
        print(
            f"{r['fabric']:19} {r['switches']:8.0f} {r['lines_per_switch']:8.0f} {r['plan_seconds']:7.3f} "
            f"{r['render_seconds']:8.3f} {r['seconds']:7.3f} {r['first_seconds']:7.3f} {r['worst_seconds']:7.3f} "
            f"{r['switches'] / r['seconds']:8.0f} {ms:6.2f} {r['render_cpu_seconds']:7.3f} "
            f"{r['render_cpu_seconds'] * 1000 / r['switches']:9.3f} {r['peak_rss_mib']:8.1f} {r['load_average']:5.1f}"
        )
    ok = True
    for r in (r for r in rows if r["fabric"] in BUDGETS):
        counts, budget_s, budget_mib = BUDGETS[r["fabric"]]
        first = r["first_seconds"] if counts == "total" else r["first_render_seconds"]
        within = first <= budget_s and r["peak_rss_mib"] <= budget_mib
        ok &= within
        print(
            f"{r['fabric']} budget ({'plan and render' if counts == 'total' else 'the render'}, first run): "
            f"{first:.2f} s of {budget_s:.0f} s ({first / budget_s:.0%}), {r['peak_rss_mib']:.0f} MiB of "
            f"{budget_mib:.0f} MiB ({r['peak_rss_mib'] / budget_mib:.0%}){'' if within else '  OVER BUDGET'}; "
            f"the render's CPU {r['first_render_cpu_seconds']:.2f} s"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
