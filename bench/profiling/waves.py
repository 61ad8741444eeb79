"""Where a rollout's waves spend their time, from the simulator's command trace (`rollout_scale
--keep-events PATH` keeps it beside the event log as PATH.<scale>.trace.jsonl).

    python -m bench.profiling.waves /tmp/ev.1-8.trace.jsonl [--all]

Each switch's commands run one after another, so a switch's time is its commands (the simulator's
latency and the exec channel's) plus the gaps between them (the controller: opening a channel, its
threads, parsing, and waiting for the rest of its batch at each step every switch of a batch must
finish). Per wave (switches whose commands overlap in time, the push's batches) it prints the wave's
span, the sum of the slowest switch's command time and gaps, and the commands of that switch with the
gap before each, so a reader sees which commands and which waits make a wave longer than its bound.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections import defaultdict
from pathlib import Path
from typing import Any


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def runs(trace: list[dict[str, Any]], quiet: float = 2.5) -> list[list[dict[str, Any]]]:
    """The trace cut where no command runs for `quiet` seconds or more: one process's run each (the dry run,
    the push, the second push: a fresh controller plans before its first command)."""
    out: list[list[dict[str, Any]]] = []
    end = float("-inf")
    for cmd in sorted(trace, key=lambda c: c["start"]):
        if cmd["start"] - end >= quiet or not out:
            out.append([])
        out[-1].append(cmd)
        end = max(end, cmd["end"])
    return out


def waves(run: list[dict[str, Any]], apart: float = 5.0) -> list[list[dict[str, Any]]]:
    """A run's waves: each switch's commands cut where it waits `apart` seconds or more (its preview, then
    its batch), and the pieces whose spans overlap merged: the preview of every switch, then each batch."""
    per: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in sorted(run, key=lambda c: c["start"]):
        per[c["switch"]].append(c)
    pieces: list[list[dict[str, Any]]] = []
    for cmds in per.values():
        pieces.append([cmds[0]])
        for a, b in itertools.pairwise(cmds):
            if b["start"] - a["end"] >= apart:
                pieces.append([])
            pieces[-1].append(b)
    pieces.sort(key=lambda p: p[0]["start"])
    out: list[list[dict[str, Any]]] = []
    end = float("-inf")
    for piece in pieces:
        if piece[0]["start"] > end or not out:
            out.append([])
        out[-1].extend(piece)
        end = max([end, *(c["end"] for c in piece)])
    return out


def describe(wave: list[dict[str, Any]], detail: bool) -> list[str]:
    start = min(c["start"] for c in wave)
    stop = max(c["end"] for c in wave)
    per: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in wave:
        per[c["switch"]].append(c)
    busy = {n: sum(c["end"] - c["start"] for c in cs) for n, cs in per.items()}
    last = max(per, key=lambda n: per[n][-1]["end"])
    lines = [
        f"{start:.1f}: {stop - start:.2f} s, {len(per)} switches, {len(wave)} commands; slowest {last}: "
        f"{len(per[last])} commands, {busy[last]:.2f} s in them, {stop - start - busy[last]:.2f} s between"
    ]
    if detail:
        at = start
        for c in sorted(per[last], key=lambda c: c["start"]):
            lines.append(f"    +{c['start'] - at:5.2f} gap  {c['end'] - c['start']:5.2f} s  {c['kind']}")
            at = c["end"]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", type=Path)
    parser.add_argument("--all", action="store_true", help="every wave's slowest switch in detail (default: 2)")
    args = parser.parse_args()
    found = runs(load(args.trace))
    push = max(found, key=len)  # the push itself: the most commands
    print(f"{len(found)} runs; the push: {len(push)} commands")
    parts = waves(push)
    for i, wave in enumerate(parts):
        for line in describe(wave, args.all or i in (1, 2, len(parts) // 2, len(parts) - 1)):
            print(line)


if __name__ == "__main__":
    main()
