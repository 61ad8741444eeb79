"""Instructions a switch's render costs, counted by valgrind's callgrind: a figure the machine's load does not move.

    python -m bench.profiling.render_instructions                                # every 64th switch of the 131k example
    python -m bench.profiling.render_instructions --example three-tier-32k --every 16
    python -m bench.profiling.render_instructions --no-valgrind                  # the same sample, CPU time only

The plan and the link index are built first, and one switch of each platform rendered, uncounted; only
the render of the sample is counted.
Collection is switched on and off by callgrind's `--toggle-collect` on the C function behind
`functools.reduce`, which runs the sample's render as its one step: Python has no hook of its own for
callgrind's client requests, and nothing in the render calls `reduce` (a nested call would switch the
count off). The cycle collector is paused around the render, as `gpufabric render` does; PYTHONHASHSEED
is fixed in the counted process so that two checkouts' counts compare.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _sample(example: str, every: int) -> Callable[[], list[str]]:
    """The render of every `every`th switch of the example, ready to run: returns the files' texts."""
    from bench.fabrics import use_placeholder_secrets
    from gpufabric.config.context import LinkIndex
    from gpufabric.config.render import render_device
    from gpufabric.gc_pause import gc_paused
    from gpufabric.intent import load_intent_text
    from gpufabric.plan import build_plan

    use_placeholder_secrets()
    text = (ROOT / "inventory" / "examples" / f"{example}.yml").read_text()
    plan = build_plan(load_intent_text(text, example))
    index = LinkIndex(plan)
    devices = plan.devices()[::every]
    # One switch of each platform first, uncounted: the modules a platform imports at its first render
    # (compiled from source when changed, 30 million instructions) are not a switch's cost.
    for first in {d.platform: d for d in reversed(devices)}.values():
        render_device(plan, first, index)

    def render() -> list[str]:
        with gc_paused():
            return [body for device in devices for body in render_device(plan, device, index).files.values()]

    render.switches = len(devices)  # type: ignore[attr-defined]
    return render


def _run_inside_reduce(work: Callable[[], list[str]]) -> list[str]:
    """Runs `work` as the one step of `functools.reduce`, the only call callgrind is told to count."""
    return functools.reduce(lambda _done, _item: work(), [None], [])


def _counted(args: argparse.Namespace) -> int:
    render = _sample(args.example, args.every)
    cpu = time.process_time()
    texts = _run_inside_reduce(render)
    cpu = time.process_time() - cpu
    lines = sum(text.count("\n") for text in texts)  # after the count: the lines are not the render's work
    switches = render.switches  # type: ignore[attr-defined]
    print(f"{switches} switches, {lines / switches:.0f} lines a switch, {cpu * 1000 / switches:.3f} ms of CPU a switch")
    return switches


def _under_valgrind(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            "--collect-atstart=no",
            "--toggle-collect=functools_reduce",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-m",
            "bench.profiling.render_instructions",
            "--inside",
            f"--example={args.example}",
            f"--every={args.every}",
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return done.returncode
        print(done.stdout, end="")
        switches = int(done.stdout.split()[0])
        if args.keep:
            Path(args.keep).write_bytes(out.read_bytes())
        total = _total_instructions(out.read_text())
    print(f"{total:,} instructions for {switches} switches: {total / switches / 1e6:.2f} million a switch")
    return 0


def _total_instructions(callgrind_out: str) -> int:
    found = re.search(r"^(?:summary|totals): (\d+)", callgrind_out, re.MULTILINE)
    if found is None:
        raise SystemExit("callgrind wrote no total")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--example", default="multiplane-131k")
    parser.add_argument("--every", type=int, default=64, help="render every Nth switch (default 64)")
    parser.add_argument("--no-valgrind", action="store_true", help="time the sample's render, no count")
    parser.add_argument("--keep", metavar="FILE", help="keep callgrind's output here (for callgrind_annotate)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)  # the counted process
    args = parser.parse_args()
    if args.inside or args.no_valgrind:
        _counted(args)
        return 0
    return _under_valgrind(args)


if __name__ == "__main__":
    sys.exit(main())
