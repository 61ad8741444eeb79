"""`gpufabric verify` on the 32,768-GPU example with the vendors' models and without, with anchors.

    python -m bench.verify_scale              # the table (about a minute on 2 cores)
    python -m bench.verify_scale --runs 9     # more runs per figure
    python -m bench.verify_scale --json
    python -m bench.verify_scale --dir /tmp   # render into another filesystem than the project's
    python -m bench.verify_scale --baseline ../old-checkout   # also time another checkout's verify
    python -m bench.verify_scale --example multiplane-131k --runs 3   # the 131,072-GPU example (12,702 switches)

The example is rendered once into a scratch folder under the project's build/ (or --dir), removed
afterwards. Each figure is a whole command in a fresh process (start-up, imports, planning, reading,
judging, exit), run --runs times, the runs of the figures interleaved so that a change in the
machine's load falls on all of them alike: the median, the min-max spread and the peak RSS are
printed beside the goal. The example's switches are Cumulus Linux, so the vendor's model is
NVIDIA's NVUE object model (`nvueschema`, the `vendor` extra); without it that row says so.
Anchors from the same run:
- `import pydantic, yaml, jinja2`: the floor of any command that reads an intent;
- `gpufabric plan 32k --json`: the planning `verify` does before it reads a file;
- `verify --no-vendor`: gpufabric's own readers and checks, which the vendor's model comes on top of.
The load average is printed before and after: on a shared machine the figures are only comparable
with the anchors beside them. --baseline times the two verify rows again with the gpufabric of
another checkout (first on PYTHONPATH), interleaved with this one's: a before/after on the same load.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.cli_scale import ENV, EXAMPLE, GPUFABRIC, ROOT

# seconds: verify of an example with the vendor's model, on this 2-core machine kind; its short name in the rows
GOALS = {"three-tier-32k": (5.0, "32k"), "multiplane-131k": (20.0, "131k")}


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """Seconds, CPU seconds (its workers' included) and peak RSS (MiB) of one run of `cmd` in a fresh
    process. CPU time moves less than wall time with the machine's load: the work, not the wait."""
    code = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
        "seconds = time.perf_counter() - t\n"
        "if done.returncode: sys.exit(done.stderr[-2000:])\n"
        "used = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(seconds, used.ru_utime + used.ru_stime, used.ru_maxrss / 1024)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *cmd], capture_output=True, text=True, env=env, cwd=cwd, check=False
    )
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr}")
    seconds, cpu, rss = out.stdout.split()
    return float(seconds), float(cpu), float(rss)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def measure(
    runs: int, parent: Path, baseline: Path | None, example: str = "three-tier-32k"
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    goal_s, short = GOALS[example]
    intent = EXAMPLE.parent / f"{example}.yml"
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpufabric-bench-", dir=parent))
    configs = work / "configs"
    load = {"before": _load()}
    try:
        render = [*GPUFABRIC, "render", str(intent), "-o", str(configs)]
        subprocess.run(render, env=ENV, check=True, capture_output=True)
        verify = [*GPUFABRIC, "verify", str(intent), "--configs", str(configs)]
        imports = [sys.executable, "-c", "import pydantic, yaml, jinja2"]
        here = (ENV, ROOT)
        figures: list[tuple[str, float | None, list[str], str, tuple[dict[str, str], Path]]] = [
            ("import pydantic, yaml, jinja2 (anchor)", None, imports, "", here),
            (f"gpufabric plan {short} --json (anchor)", None, [*GPUFABRIC, "plan", str(intent), "--json"], "", here),
            (
                f"gpufabric verify {short} --no-vendor (anchor)",
                None,
                [*verify, "--no-vendor"],
                "readers and checks",
                here,
            ),
        ]
        judged = importlib.util.find_spec("nvueschema") is not None
        if judged:
            figures.append(
                (f"gpufabric verify {short} (NVUE model)", goal_s, verify, "every file judged by nvueschema", here)
            )
        if baseline is not None:
            # run from the other checkout: `python -m` puts the working folder first on the path
            other = ({**ENV, "PYTHONPATH": str(baseline.resolve())}, baseline.resolve())
            figures.append(
                (f"baseline: verify {short} --no-vendor", None, [*verify, "--no-vendor"], str(baseline), other)
            )
            if judged:
                figures.append((f"baseline: verify {short} (NVUE model)", None, verify, str(baseline), other))
        samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name, *_ in figures}
        for _ in range(runs):  # interleaved: a change of load hits every figure alike
            for name, _goal, cmd, _note, (env, cwd) in figures:
                samples[name].append(_timed(cmd, env, cwd))
        rows = []
        for name, goal, _cmd, note, _env in figures:
            times = [s for s, _, _ in samples[name]]
            rows.append(
                {
                    "figure": name,
                    "goal_s": goal,
                    "median": statistics.median(times),
                    "min": min(times),
                    "max": max(times),
                    "cpu": statistics.median(c for _, c, _ in samples[name]),
                    "rss": max(r for _, _, r in samples[name]),
                    "note": note,
                }
            )
        if importlib.util.find_spec("nvueschema") is None:
            rows.append({"figure": f"gpufabric verify {short} (NVUE model)", "note": "nvueschema not installed"})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load["after"] = _load()
    return rows, load


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="fresh-process runs per figure (default 5)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument(
        "--dir", type=Path, default=ROOT / "build", help="parent of the scratch folder (default: the project's build/)"
    )
    parser.add_argument("--baseline", type=Path, help="another checkout whose verify is timed beside this one's")
    parser.add_argument("--example", choices=sorted(GOALS), default="three-tier-32k", help="the example verified")
    args = parser.parse_args()
    rows, load = measure(args.runs, args.dir, args.baseline, args.example)
    short = GOALS[args.example][1]
    if args.json:
        print(json.dumps({"rows": rows, "load_average": load, "cores": os.cpu_count()}, indent=2))
        return 0
    print(f"{'figure':44} {'median':>8} {'min':>8} {'max':>8} {'cpu':>8} {'peak MiB':>8} {'goal':>6}")
    over = False
    for r in rows:
        if "median" not in r:
            print(f"{r['figure']:44} {r['note']}")
            continue
        goal = f"{r['goal_s']:.2f}" if r["goal_s"] else ""
        mark = "  OVER" if r["goal_s"] and r["median"] > r["goal_s"] else ""
        over |= bool(mark)
        figures = f"{r['median']:8.2f} {r['min']:8.2f} {r['max']:8.2f} {r['cpu']:8.2f} {r['rss']:8.0f}"
        print(f"{r['figure']:44} {figures} {goal:>6}{mark}")
    print(f"(seconds, {args.runs} runs each; cpu: median CPU seconds of the command and its workers;")
    print(f" load average before {load['before']}, after {load['after']}; {os.cpu_count()} cores)")
    timed = {r["figure"]: r["median"] for r in rows if "median" in r}
    judged = timed.get(f"gpufabric verify {short} (NVUE model)")
    alone = timed[f"gpufabric verify {short} --no-vendor (anchor)"]
    if judged is not None:
        print(f"NVIDIA's model adds {judged - alone:.2f} s to the readers' {alone:.2f} s ({judged / alone:.2f}x)")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
