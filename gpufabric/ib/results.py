"""What a check of the live fabric reports, and how it runs the diagnostics."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Runner = Callable[[Sequence[str]], str]  # runs a diagnostic with its arguments, returns its stdout


@dataclass(frozen=True, slots=True)
class Result:
    check: str
    item: str
    expected: str
    observed: str
    ok: bool
