"""Write tests/slow_by_measure.txt from a fast-tier run's durations: the slowest tests, by measure, until
what is left fits the fast tier's budget; conftest marks each of them `slow` (the whole suite runs them).

    python -m pytest -q -n 2 -m "not lab and not slow" --durations=0 tests > durations.log
    python scripts/slow_by_measure.py durations.log            # seconds of test time the tier keeps: 115

Run it on a quiet machine of the kind CI runs on (2 cores): 115 s of test time on 2 workers, with the
collection and the workers' start, is about 90 s of wall time. Tests already listed stay listed.
"""

from __future__ import annotations

import collections
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "slow_by_measure.txt"
LINE = re.compile(r"^([0-9.]+)s (?:call|setup|teardown)\s+(\S+)")
HEADER = (
    "# Tests the fast tier leaves to the whole suite, by measure (scripts/slow_by_measure.py writes this file\n"
    "# from a fast-tier run's --durations=0): the slowest, until the rest fits the fast tier's 90 s on 2 cores.\n"
)


def spent(log: str) -> dict[str, float]:
    """node id -> its seconds (setup, call and teardown together), from a pytest --durations=0 output."""
    out: collections.defaultdict[str, float] = collections.defaultdict(float)
    for line in Path(log).read_text().splitlines():
        m = LINE.match(line)
        if m:
            out[m[2]] += float(m[1])
    return dict(out)


def main(log: str, keep: float = 115.0) -> int:
    spent_on = spent(log)
    listed = {ln for ln in OUT.read_text().splitlines() if ln and not ln.startswith("#")} if OUT.exists() else set()
    left = sum(spent_on.values())
    for node, seconds in sorted(spent_on.items(), key=lambda kv: -kv[1]):
        if left <= keep:
            break
        listed.add(node)
        left -= seconds
    OUT.write_text(HEADER + "".join(f"{node}\n" for node in sorted(listed)))
    print(f"{len(listed)} tests in {OUT.name}; {left:.0f} s of test time left in the fast tier", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], *(float(a) for a in sys.argv[2:3])))
