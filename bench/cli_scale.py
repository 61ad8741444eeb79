"""What users wait for: the CLI on the 32,768-GPU example, end to end, with anchors from the same run.

    python -m bench.cli_scale               # the table (about 2 minutes on 2 cores)
    python -m bench.cli_scale --runs 5      # more runs per figure
    python -m bench.cli_scale --json
    python -m bench.cli_scale --dir /tmp    # render into another filesystem than the project's

The rendered files go where `render` writes by default: under the project's build/ folder (in a
scratch folder removed afterwards), unless --dir names another parent.

Fresh folders are made fresh by moving the last run's folder aside; everything is deleted once the
figures are taken. ext4 passes over the inodes freed in the last 30 seconds (minutes, while their
inode table block is not yet written) each time it allocates one, so a render or an anchor started
right after deleting 1,280 files pays for the delete: up to 1.5 s more on this machine kind.

Each figure is a whole command in a fresh process (start-up, imports, work, exit), run --runs
times: the median, min-max spread and peak RSS are printed beside the goal. Anchors, measured in
the same run on the same machine:
- `import pydantic, yaml, jinja2`: the floor of any command that reads an intent;
- creating 1,280 empty files in a fresh folder beside the rendered ones: what `render` pays the
  filesystem before writing a byte. On this machine kind a create costs 0.03 to 1 ms of kernel
  time, varying from moment to moment (mostly 1 ms in /tmp), and creates in two processes do not
  overlap: the floor of a render into a fresh folder;
- Arista's pyavd (`eos_cli_config_gen`) on EOS switches of the same fabric (the 32k example with
  every switch on EOS), against gpufabric's render of the same switches, on a sample of --avd
  switches; and the bare Jinja2 loop (one template, the same variables) as the floor of a
  template renderer. Needs the `bench` extra (pyavd); without it those rows say so.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.fabrics import eos_32k_text, use_placeholder_secrets

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "inventory" / "examples" / "three-tier-32k.yml"
GPUFABRIC = [sys.executable, "-m", "gpufabric"]
use_placeholder_secrets()
ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


def _child_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _timed(cmd: list[str], before: Any = None) -> tuple[float, float]:
    """Seconds and peak RSS (MiB) of one run of `cmd` in a fresh process (after `before()`)."""
    if before is not None:
        before()
    code = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
        "seconds = time.perf_counter() - t\n"
        "if done.returncode: sys.exit(done.stderr[-2000:])\n"
        "print(seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True, env=ENV, check=False)
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr}")
    seconds, rss = out.stdout.split()
    return float(seconds), float(rss)


def _series(cmd: list[str], runs: int, before: Any = None) -> dict[str, float]:
    samples = [_timed(cmd, before) for _ in range(runs)]
    times = [s for s, _ in samples]
    return {
        "median": statistics.median(times),
        "min": min(times),
        "max": max(times),
        "rss": max(r for _, r in samples),
    }


def _python(code: str, runs: int) -> dict[str, float]:
    return _series([sys.executable, "-c", code], runs)


def measure(runs: int, avd_sample: int, parent: Path) -> list[dict[str, Any]]:
    parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gpufabric-bench-", dir=parent))
    configs = work / "configs"
    rows: list[dict[str, Any]] = []

    def fresh_folder() -> None:
        if configs.exists():
            configs.rename(work / f"configs-{time.monotonic_ns()}")  # deleted after the figures

    def row(name: str, goal: float | None, figures: dict[str, float], note: str = "") -> None:
        rows.append({"figure": name, "goal_s": goal, **figures, "note": note})
        print(f"  {name}: {figures['median']:.2f} s", file=sys.stderr)

    try:
        row("import pydantic, yaml, jinja2 (anchor)", None, _python("import pydantic, yaml, jinja2", runs))
        row("gpufabric --version", 0.35, _series([*GPUFABRIC, "--version"], runs))
        row("gpufabric plan 32k --json", 1.0, _series([*GPUFABRIC, "plan", str(EXAMPLE), "--json"], runs))
        files = (
            f"import os, sys, tempfile\nd = tempfile.mkdtemp(dir={str(work)!r})\n"
            "for i in range(1280):\n    os.close(os.open(f'{d}/f{i}', os.O_WRONLY | os.O_CREAT))\n"
        )
        row("create 1,280 empty files (anchor)", None, _python(files, runs), "the filesystem's share of render")
        render = [*GPUFABRIC, "render", str(EXAMPLE), "-o", str(configs)]
        row("gpufabric render 32k (fresh folder)", 2.5, _series(render, runs, fresh_folder))
        row("gpufabric render 32k (again, unchanged)", None, _series(render, runs))
        # gpufabric's own readers and checks; NVIDIA's model, where installed, is a row of its own
        verify = [*GPUFABRIC, "verify", str(EXAMPLE), "--configs", str(configs), "--no-vendor"]
        row("gpufabric verify 32k", 5.0, _series(verify, runs))
        row("gpufabric verify 32k + NVUE model", None, _series(verify[:-1], runs))
        rows += _avd_rows(avd_sample)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def _avd_rows(sample: int) -> list[dict[str, Any]]:
    """pyavd and a bare Jinja2 loop against gpufabric on the same EOS switches, in this process."""
    try:
        from gpufabric.nos.eos.judge import render as avd_render  # needs pyavd (the bench extra)
        from gpufabric.nos.eos.judge import structured_config
    except ImportError as exc:
        return [{"figure": "pyavd eos_cli_config_gen (anchor)", "note": f"not installed: {exc}"}]
    import jinja2

    from gpufabric.config.context import LinkIndex, build
    from gpufabric.config.render import render_context, variables
    from gpufabric.intent import load_intent_text
    from gpufabric.plan import build_plan

    plan = build_plan(load_intent_text(eos_32k_text(), "three-tier-32k-eos"))
    index = LinkIndex(plan)
    devices = [d for d in plan.devices() if d.platform == "eos"]
    step = max(1, len(devices) // sample)
    picked = devices[::step][:sample]
    contexts = [build(plan, d, index) for d in picked]
    ours = _per_switch(lambda: [render_context(c) for c in contexts], len(picked))
    structured = [structured_config(c) for c in contexts]
    # Three passes like ours, the median taken: a single pass would charge pyavd its start-up (schema
    # and template loading) that our median leaves out, and would show no spread.
    arista = _per_switch(lambda: [avd_render(sc) for sc in structured], len(picked))
    template = jinja2.Environment(autoescape=False).from_string(
        "hostname {{ d.name }}\n{% for p in ports %}interface {{ p.name }}\n   mtu {{ p.mtu }}\n"
        "   description {{ p.kind }}: {{ p.peer }} {{ p.peer_port }}\n{% endfor %}"
        "{% for n in neighbors %}neighbor {{ n.address }} remote-as {{ n.remote_asn }}\n{% endfor %}"
    )
    values = [variables(c) for c in contexts]
    floor = _per_switch(lambda: [template.render(v) for v in values], len(picked))
    note = f"{len(picked)} of {len(devices)} EOS switches; ms per switch, render only (the plan is built once)"
    return [
        {"figure": "gpufabric render, EOS (ms/switch)", "per_switch_ms": ours, "note": note},
        {"figure": "pyavd eos_cli_config_gen (anchor, ms/switch)", "per_switch_ms": arista, "note": note},
        {"figure": "bare Jinja2 loop (floor, ms/switch)", "per_switch_ms": floor, "note": "ports and sessions only"},
    ]


def _per_switch(work: Any, switches: int, passes: int = 3) -> dict[str, float]:
    """ms per switch of `work` (all the sample's switches), over `passes` passes in this process."""
    times = []
    for _ in range(passes):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000 / switches)
    return {"median": statistics.median(times), "min": min(times), "max": max(times)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="fresh-process runs per figure (default 3)")
    parser.add_argument("--avd", type=int, default=24, help="EOS switches in the pyavd sample (default 24)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument(
        "--dir", type=Path, default=ROOT / "build", help="parent of the scratch folder (default: the project's build/)"
    )
    args = parser.parse_args()
    rows = measure(args.runs, args.avd, args.dir)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'figure':46} {'median':>8} {'min':>8} {'max':>8} {'peak MiB':>8} {'goal':>6}")
    over = False
    for r in rows:
        if "per_switch_ms" in r:
            f = r["per_switch_ms"]
            print(f"{r['figure']:46} {f['median']:7.2f}m {f['min']:7.2f}m {f['max']:7.2f}m {'':>8} {'':>6}")
        elif "median" in r:
            goal = f"{r['goal_s']:.2f}" if r["goal_s"] else ""
            over |= bool(r["goal_s"]) and r["median"] > r["goal_s"]
            mark = "  OVER" if r["goal_s"] and r["median"] > r["goal_s"] else ""
            spread = f"{r['median']:8.2f} {r['min']:8.2f} {r['max']:8.2f}"
            print(f"{r['figure']:46} {spread} {r['rss']:8.0f} {goal:>6}{mark}")
        else:
            print(f"{r['figure']:46} {r['note']}")
    ms = {r["figure"]: r["per_switch_ms"]["median"] for r in rows if "per_switch_ms" in r}
    if len(ms) == 3:
        ours, arista, floor = ms.values()
        print("(seconds; m = ms per switch)")
        print(f"pyavd / gpufabric on the same EOS switches: {arista / ours:.0f}x")
        print(f"gpufabric / bare Jinja2 loop: {ours / floor:.1f}x")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
