"""The shared shell of the benchmarks: measure each case in a fresh process, so peak RSS is that case's own."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Measure = Callable[[str, int], dict[str, float]]
ROOT = Path(__file__).resolve().parent.parent


def rows_from_fresh_processes(
    script: str, doc: str | None, measure_one: Measure, cases: dict[str, str]
) -> list[dict[str, Any]] | None:
    """Parse the command line; run `python -m bench.<script> --one CASE` per case and collect its JSON.

    cases maps a row name to the argument `measure_one` takes. Returns None when the
    command was fully handled here (`--one`, or `--json` printed the rows).
    """
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--only", help=f"measure these cases alone, comma-separated (of {', '.join(cases)})")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one, args.repeat)))
        return None
    # The benchmark's own module, run from the repository root as it was (`python -m bench.plan_scale`).
    module = ".".join(Path(script).resolve().relative_to(ROOT).with_suffix("").parts)
    if args.only:
        wanted = args.only.split(",")
        unknown = [w for w in wanted if w not in cases]
        if unknown:
            parser.error(f"no case named {', '.join(unknown)} (known: {', '.join(cases)})")
        cases = {name: case for name, case in cases.items() if name in wanted}
    rows = []
    for name, case in cases.items():
        print(f"measuring {name} ...", file=sys.stderr)
        out = subprocess.run(
            [sys.executable, "-m", module, "--one", case, "--repeat", str(args.repeat)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append({"fabric": name, **json.loads(out.stdout)})
    if args.json:
        print(json.dumps(rows, indent=2))
        return None
    return rows
