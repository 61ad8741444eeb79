"""The offline lane's order: modules holding the longest tests first (`--long-first`, scripts/test.sh).

The offline lane runs beside the lab and Molecule, niced, and ends last. Run in collection order, its longest
tests (pip installing a wheel, a simulator waiting out its timers) could fall at its end, when the other lanes
are done: one worker then ran a long test alone while the other core idled (a CI run: 161 s with two thirds of
the cores idle). Started first, they run while the machine is full, and the lane ends on short tests spread
over both workers.

Each module keeps its tests together and in their order, so a module-scoped fixture is made once a worker as
before; modules go by the longest test each holds (seconds from tests/offline_seconds.txt, which
scripts/offline_seconds.py writes from a run's --durations=0), and modules with none listed keep their place
after them.
"""

from __future__ import annotations

from pathlib import Path

SECONDS_FILE = Path(__file__).resolve().parent / "offline_seconds.txt"


def read_seconds(path: Path = SECONDS_FILE) -> dict[str, float]:
    """node id -> seconds (setup, call and teardown), from lines "SECONDS NODEID"; '#' starts a comment."""
    out: dict[str, float] = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        seconds, node = line.split(maxsplit=1)
        out[node] = float(seconds)
    return out


def long_first(nodeids: list[str], seconds: dict[str, float]) -> list[int]:
    """The indexes of `nodeids` in the order to run them: their modules (contiguous runs of one file, as
    collected) by the longest listed test each holds, longest first; ties and unlisted modules in collection
    order; each module's tests in their own order."""
    blocks: list[list[int]] = []
    last = None
    for i, node in enumerate(nodeids):
        module = node.split("::", 1)[0]
        if module != last:
            blocks.append([])
            last = module
        blocks[-1].append(i)
    keyed = [(-max(seconds.get(nodeids[i], 0.0) for i in block), n, block) for n, block in enumerate(blocks)]
    return [i for _, _, block in sorted(keyed, key=lambda k: (k[0], k[1])) for i in block]
