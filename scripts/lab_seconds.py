"""Write tests/lab_seconds.txt from a CI run's log: the seconds each lab module took in the lab lane (its
tests' setup, call and teardown), by which the lane hands out its units longest first (tests/conftest.py).

    # scripts/test.sh with the lab lane's --durations=25 made --durations=0, its output kept in ci.log:
    python scripts/lab_seconds.py ci.log

Only the lab lane's durations section is read (the first `slowest durations` list of the log: the lab lane's
output comes first). Take it from a whole CI run, where the parts share the cores as they do in CI.
"""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "lab_seconds.txt"
LINE = re.compile(r"^([0-9.]+)s (?:call|setup|teardown)\s+(tests/\S+?\.py)::")
HEADER = (
    "# Seconds each lab module took in a CI run's lab lane (scripts/lab_seconds.py writes this file from the\n"
    "# lane's --durations=0): the lane hands out its units longest first by them (tests/conftest.py).\n"
)


def lab_lane_durations(text: str) -> dict[str, float]:
    """module -> seconds, from the first `slowest durations` section of `text` (a CI run's log)."""
    spent: collections.defaultdict[str, float] = collections.defaultdict(float)
    inside = False
    for line in text.splitlines():
        if "slowest" in line and "durations" in line:
            if inside:
                break
            inside = True
            continue
        if inside and line.startswith("====="):
            break
        m = LINE.match(line) if inside else None
        if m:
            spent[m[2]] += float(m[1])
    return dict(spent)


def main(log: str) -> int:
    spent = lab_lane_durations(Path(log).read_text())
    if not spent:
        print(f"{log}: no durations section (run the lab lane with --durations=0)", file=sys.stderr)
        return 2
    OUT.write_text(HEADER + "".join(f"{s:.0f} {m}\n" for m, s in sorted(spent.items(), key=lambda kv: -kv[1])))
    print(f"{len(spent)} modules in {OUT.name}, {sum(spent.values()):.0f} s in all", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
