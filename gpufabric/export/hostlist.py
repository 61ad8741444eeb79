"""Slurm hostlist compression: gpu01 gpu02 gpu03 gpu07 -> gpu[01-03,07]."""

from __future__ import annotations

import re

_TAIL = re.compile(r"^(.*?)(\d+)$")


def compress(names: list[str]) -> str:
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    for name in names:
        m = _TAIL.match(name)
        if m is None:
            plain.append(name)
            continue
        groups.setdefault((m.group(1), len(m.group(2))), []).append(int(m.group(2)))
    parts = list(plain)
    for (prefix, width), numbers in groups.items():
        ranges = _ranges(sorted(set(numbers)))
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            parts.append(f"{prefix}{ranges[0][0]:0{width}d}")
            continue
        text = ",".join(f"{a:0{width}d}" if a == b else f"{a:0{width}d}-{b:0{width}d}" for a, b in ranges)
        parts.append(f"{prefix}[{text}]")
    return ",".join(parts)


def _ranges(numbers: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in numbers:
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out
