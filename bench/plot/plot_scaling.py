"""The scaling curve of the reads of a whole fabric, as an SVG: wall time and the controller's peak
memory against the number of switches, from the JSON `rollout_scale.py --json` writes.

    python -m bench.plot.plot_scaling docs/scaling.json -o docs/scaling.svg

No plotting library: the figure is a few lines and points, written as SVG text, so the benchmark's
extra needs nothing more and the file diffs as text.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

WIDTH, HEIGHT = 420, 300  # one panel
LEFT, RIGHT, TOP, BOTTOM = 62, 16, 34, 46
# (key in the JSON, label, colour)
TIME_SERIES = [
    ("dry_run_s", "push --dry-run", "#1f77b4"),
    ("validate_s", "validate", "#d62728"),
    ("floor_s", "floor: one login + one command", "#7f7f7f"),
]
MEMORY_SERIES = [
    ("dry_run_peak_rss_mib", "push --dry-run", "#1f77b4"),
    ("validate_peak_rss_mib", "validate (per process)", "#d62728"),
]


def _nice_top(value: float) -> float:
    """The axis' top: the value rounded up to 1, 2 or 5 times a power of ten."""
    step = 1.0
    while step * 10 <= value:
        step *= 10
    for m in (1, 2, 5, 10):
        if value <= m * step:
            return m * step
    return 10 * step


def _panel(rows: list[dict[str, Any]], series: list[tuple[str, str, str]], x0: int, title: str, *, unit: str,
           budget: float | None = None) -> list[str]:  # fmt: skip
    xs = [r["switches"] for r in rows]
    values: list[float] = [float(r[key]) for r in rows for key, _, _ in series if r.get(key) is not None]
    top = _nice_top(max([*values, budget or 0.0, 1.0]))
    right = _nice_top(max(xs))
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return x0 + LEFT + w * x / right

    def py(y: float) -> float:
        return TOP + h * (1 - y / top)

    out = [f'<text x="{x0 + LEFT}" y="20" font-size="13" font-weight="bold">{title}</text>',
           f'<rect x="{x0 + LEFT}" y="{TOP}" width="{w}" height="{h}" fill="none" stroke="#444"/>']  # fmt: skip
    for i in range(6):
        y, x = top * i / 5, right * i / 5
        out.append(f'<line x1="{x0 + LEFT}" y1="{py(y):.1f}" x2="{x0 + LEFT + w}" y2="{py(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{x0 + LEFT - 6}" y="{py(y) + 4:.1f}" font-size="11" text-anchor="end">{y:g}</text>')
        out.append(f'<text x="{px(x):.1f}" y="{TOP + h + 16}" font-size="11" text-anchor="middle">{x:g}</text>')
    out.append(f'<text x="{x0 + LEFT + w / 2}" y="{HEIGHT - 10}" font-size="12" text-anchor="middle">switches</text>')
    out.append(f'<text x="{x0 + 14}" y="{TOP + h / 2}" font-size="12" text-anchor="middle" '
               f'transform="rotate(-90 {x0 + 14} {TOP + h / 2})">{unit}</text>')  # fmt: skip
    if budget is not None:
        out.append(f'<line x1="{x0 + LEFT}" y1="{py(budget):.1f}" x2="{x0 + LEFT + w}" y2="{py(budget):.1f}" '
                   'stroke="#2ca02c" stroke-dasharray="6 4"/>')  # fmt: skip
        out.append(f'<text x="{x0 + LEFT + w - 4}" y="{py(budget) - 5:.1f}" font-size="11" text-anchor="end" '
                   f'fill="#2ca02c">budget {budget:g} s</text>')  # fmt: skip
    legend_y = TOP + 14
    for key, label, colour in series:
        points = [(px(r["switches"]), py(r[key])) for r in rows if r.get(key) is not None]
        if not points:
            continue
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in points]
        out.append(f'<text x="{x0 + LEFT + 8}" y="{legend_y}" font-size="11" fill="{colour}">{label}</text>')
        legend_y += 14
    return out


def svg(rows: list[dict[str, Any]], budget: float) -> str:
    rows = sorted(rows, key=lambda r: r["switches"])
    body = _panel(rows, TIME_SERIES, 0, "Reading every switch: wall time", unit="seconds", budget=budget)
    body += _panel(rows, MEMORY_SERIES, WIDTH, "The controller's peak memory", unit="MiB")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * WIDTH}" height="{HEIGHT}" '
            f'font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n'
            + "\n".join(body) + "\n</svg>\n")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", type=Path, help="rows written by rollout_scale.py --json")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the SVG to write")
    parser.add_argument("--budget", type=float, default=60.0, help="the budget line, seconds")
    args = parser.parse_args()
    data = json.loads(args.json.read_text())
    rows = data if isinstance(data, list) else [data]
    args.output.write_text(svg(rows, args.budget))


if __name__ == "__main__":
    main()
