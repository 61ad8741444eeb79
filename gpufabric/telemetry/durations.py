"""Prometheus durations, as the rules files' `for:` fields take them (checked before they are written)."""

from __future__ import annotations

import re

from gpufabric.errors import GpufabricError

# Prometheus's duration (its model.ParseDuration): units largest first, each at most once, e.g. 1m, 1h30m, 500ms.
_DURATION = re.compile(
    r"(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?(?:([0-9]+)ms)?"
)
_UNIT_MS = (365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1_000, 1)
MAX_DURATION_CHARS = 32
_MAX_MS = (2**63 - 1) // 1_000_000  # Prometheus holds `for:` as Go's int64 nanoseconds: beyond, "out of range"


class DurationError(ValueError, GpufabricError):
    """A text that is not a Prometheus duration; the message says what one looks like."""


def check_duration(text: str) -> str:
    """`text` when it is a Prometheus duration Prometheus accepts (`1m`, `90s`, `1h30m`), else DurationError.
    It goes into the rules file's `for:` field: a newline or YAML in it must never get that far."""
    found = _DURATION.fullmatch(text) if 0 < len(text) <= MAX_DURATION_CHARS else None
    if found is None or not any(found.groups()):
        raise DurationError(
            f"{text[:MAX_DURATION_CHARS]!r} is not a Prometheus duration: write digits and units largest first, "
            "each unit once (y, w, d, h, m, s, ms), e.g. 1m, 90s or 1h30m"
        )
    total = sum(int(n) * ms for n, ms in zip(found.groups(), _UNIT_MS, strict=True) if n is not None)
    if total > _MAX_MS:
        raise DurationError(f"{text!r} is longer than Prometheus can hold (about 292 years)")
    return text
