"""Write tests/offline_seconds.txt from a run's durations: each offline test that took at least MIN seconds
(setup, call and teardown together), which `--long-first` (tests/long_first.py) runs first, by module.

    python -m pytest -q -n auto -m "not lab" --durations=0 tests > durations.log
    python scripts/offline_seconds.py durations.log            # tests of 2 s and more

Run it as CI runs the offline lane (root, CI=true: the tests that need root run) on a quiet machine of the kind
CI runs on. Only the order depends on it: a test missing from the file runs all the same.
"""

from __future__ import annotations

import sys
from pathlib import Path

from slow_by_measure import spent  # the same durations read (scripts/ is the script's own folder)

OUT = Path(__file__).resolve().parent.parent / "tests" / "offline_seconds.txt"
HEADER = (
    "# The offline tests' seconds (setup, call and teardown), those of MIN s and more: scripts/offline_seconds.py\n"
    "# writes this file from a run's --durations=0; tests/long_first.py orders the offline lane's modules by it.\n"
)


def main(log: str, least: float = 2.0) -> int:
    seconds = {node: s for node, s in spent(log).items() if not node.startswith("tests/lab/")}
    kept = sorted(((s, node) for node, s in seconds.items() if s >= least), key=lambda sn: (-sn[0], sn[1]))
    if not kept:
        print(f"{log}: no test took {least:g} s or more (is it a --durations=0 log?)", file=sys.stderr)
        return 2
    OUT.write_text(HEADER.replace("MIN", f"{least:g}") + "".join(f"{s:.1f} {node}\n" for s, node in kept))
    print(f"{len(kept)} tests in {OUT.name}, {sum(s for s, _ in kept):.0f} s in all", file=sys.stderr)
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(main(sys.argv[1], *(float(a) for a in sys.argv[2:])))
