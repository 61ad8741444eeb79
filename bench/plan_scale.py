"""Plan time and peak memory against fabric size, up to the 131,072-GPU example (the intent's limit).

    python -m bench.plan_scale                          # the table
    python -m bench.plan_scale --json                   # the same figures for machines
    python -m bench.plan_scale --only multiplane-131k   # one fabric

Each fabric is measured in a fresh process (so peak RSS is that fabric's own), as
load + validate + plan, --repeat runs: the first, the best and the worst. Budgets (first run):
the 32k-GPU plan 2 s and 500 MiB, the 131k-GPU plan (12,702 switches, 894k links) 3 s and 4 GiB.
Anchor, measured in the same process: reading and validating the
intent alone (YAML with line numbers, the pydantic schema, the cross-field rules),
the floor under any plan. pyavd's anchor, on the same EOS switches, is measured by
bench/cli_scale.py.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

from bench.fresh import rows_from_fresh_processes

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    ROOT / "inventory" / "fabric.yml",
    ROOT / "inventory" / "examples" / "multi-vendor.yml",
    ROOT / "inventory" / "examples" / "superpod-1su.yml",
    ROOT / "inventory" / "examples" / "superpod-4su.yml",
    ROOT / "inventory" / "examples" / "rail-28k.yml",
    ROOT / "inventory" / "examples" / "three-tier-32k.yml",
    ROOT / "inventory" / "examples" / "multiplane-131k.yml",
]
BUDGETS = {"three-tier-32k": (2.0, 500.0), "multiplane-131k": (3.0, 4096.0)}  # seconds, MiB


def measure_one(path: str, repeat: int) -> dict[str, float]:
    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan

    times, loads = [], []
    plan = None
    for _ in range(repeat):
        start = time.perf_counter()
        loaded = load_intent(path)
        loads.append(time.perf_counter() - start)
        plan = build_plan(loaded)
        times.append(time.perf_counter() - start)
    assert plan is not None
    return {
        "first_seconds": times[0],
        "seconds": min(times),
        "worst_seconds": max(times),
        "load_seconds": min(loads),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "switches": len(plan.devices()),
        "links": len(plan.links()),
        "gpus": sum(s.gpus for s in plan.servers),
    }


def main() -> int:
    rows = rows_from_fresh_processes(__file__, __doc__, measure_one, {path.stem: str(path) for path in CASES})
    if rows is None:
        return 0
    print(
        f"{'fabric':16} {'GPUs':>7} {'switches':>9} {'links':>7} {'first s':>8} {'best s':>8} {'worst s':>8} "
        f"{'peak MiB':>9} {'us/link':>8} {'load s':>7} {'plan/load':>10}"
    )
    for r in rows:
        print(
            f"{r['fabric']:16} {r['gpus']:7.0f} {r['switches']:9.0f} {r['links']:7.0f} {r['first_seconds']:8.3f} "
            f"{r['seconds']:8.3f} {r['worst_seconds']:8.3f} "
            f"{r['peak_rss_mib']:9.1f} {r['seconds'] * 1e6 / r['links']:8.2f} "
            f"{r['load_seconds']:7.3f} {r['seconds'] / r['load_seconds']:9.1f}x"
        )
    print("(load s: reading and validating the intent alone, measured in the same process: the floor.)")
    ok = True
    for big in (r for r in rows if r["fabric"] in BUDGETS):
        budget_s, budget_mib = BUDGETS[big["fabric"]]
        within = big["first_seconds"] <= budget_s and big["peak_rss_mib"] <= budget_mib
        ok &= within
        print(
            f"{big['fabric']} budget (first run): {big['first_seconds']:.3f} s of {budget_s} s "
            f"({big['first_seconds'] / budget_s:.0%}), {big['peak_rss_mib']:.0f} MiB of {budget_mib:.0f} MiB "
            f"({big['peak_rss_mib'] / budget_mib:.0%}){'' if within else '  OVER BUDGET'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
