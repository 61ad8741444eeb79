"""Where a profiled command spent its samples: py-spy's raw (collapsed) stacks summed by function and
by component, so a profile of `nornir push` reads as figures rather than a flame graph.

    python -m bench.profiling.spy_top PROFILE.txt [--top 25]

py-spy samples threads that are running (not those waiting on a socket or a sleep), so the shares
are of the time some thread held or wanted the CPU.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

# A stack's component: its innermost frame from one of these, first match in this order.
COMPONENTS = [
    ("paramiko crypto/transport", re.compile(r"paramiko/|cryptography/|nacl/")),
    ("yaml", re.compile(r"/yaml/")),
    ("rendering", re.compile(r"gpufabric/config/|jinja2/")),
    ("planning, intent", re.compile(r"gpufabric/(plan|intent)/")),
    ("nornir, inventory", re.compile(r"nornir/|nornir_napalm/|gpufabric/fleet/inventory")),
    ("rich, output", re.compile(r"rich/|gpufabric/cli/")),
    ("drivers", re.compile(r"gpufabric/drivers/|gpufabric/platforms/|napalm")),
    ("push, tasks", re.compile(r"gpufabric/push/|gpufabric/fleet/|nornir_tasks/")),
    ("imports", re.compile(r"<frozen importlib")),
]


def component(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, pattern in COMPONENTS:
            if pattern.search(frame):
                return name
    return "other"


def summary(path: Path) -> tuple[int, Counter[str], Counter[str], Counter[str]]:
    total = 0
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    parts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")[1:]]  # drop the thread, the line numbers
        total += count
        for frame in set(frames):
            inclusive[frame] += count
        if frames:
            own[frames[-1]] += count
        parts[component(frames)] += count
    return total, inclusive, own, parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    total, inclusive, own, parts = summary(args.profile)
    print(f"{total} samples")
    print("\nby component (innermost frame):")
    for name, count in parts.most_common():
        print(f"  {100 * count / total:5.1f}%  {name}")
    print(f"\ntop {args.top} functions, inclusive:")
    for frame, count in inclusive.most_common(args.top):
        print(f"  {100 * count / total:5.1f}%  {frame}")
    print(f"\ntop {args.top} functions, own:")
    for frame, count in own.most_common(args.top):
        print(f"  {100 * count / total:5.1f}%  {frame}")


if __name__ == "__main__":
    main()
