"""A revert timer must outlive the staging of its whole batch.

A batch is staged in waves of at most WORKERS switches; the first wave's timers start at its
commits and are confirmed only when the last wave has passed its checks. If the timer is shorter,
the switches of the first wave revert healthy changes by themselves while the push still counts
them as staged, and the confirm then fails or, worse, confirms nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gpufabric.fleet.errors import PushRefusedError

if TYPE_CHECKING:
    from gpufabric.platforms.spec import Platform

# Per switch, besides the checks: SSH login, candidate upload, diff and commit (seconds, generous).
STAGE_OVERHEAD = 15.0
MARGIN = 1.25  # the confirm must land well before the timer, not just before it


class TimingError(PushRefusedError):
    """The timeouts cannot protect the batches as asked."""


def needed_confirm_timeout(
    *, check_timeout: float, settle: float, connect_timeout: float, largest_batch: int, workers: int
) -> int:
    waves = math.ceil(largest_batch / workers)
    per_wave = check_timeout + settle + connect_timeout + STAGE_OVERHEAD
    return math.ceil(waves * per_wave * MARGIN)


def check_timing(
    *,
    confirm_timeout: int,
    check_timeout: float,
    settle: float,
    connect_timeout: float,
    largest_batch: int,
    workers: int,
) -> None:
    if check_timeout + settle >= confirm_timeout:
        raise TimingError(
            f"--check-timeout {check_timeout:g} s (plus {settle:g} s of settling) does not fit in --confirm-timeout "
            f"{confirm_timeout} s: a switch would revert while still being checked"
        )
    need = needed_confirm_timeout(
        check_timeout=check_timeout,
        settle=settle,
        connect_timeout=connect_timeout,
        largest_batch=largest_batch,
        workers=workers,
    )
    if confirm_timeout < need:
        waves = math.ceil(largest_batch / workers)
        raise TimingError(
            f"a batch of {largest_batch} switches is staged in {waves} waves of {workers}; its first switches "
            f"would revert before the last are checked: use --confirm-timeout {need} or more, or --batch {workers}"
        )


def check_platform_timers(confirm_timeout: int, platforms: Iterable[Platform]) -> None:
    """The revert timer must be one every targeted platform accepts (NX-OS's commit-timeout: 30-3600 s)."""
    for spec in sorted(set(platforms), key=lambda s: s.name):
        low, high = spec.facts.confirm_timeout_range
        if not low <= confirm_timeout <= high:
            raise TimingError(
                f"--confirm-timeout {confirm_timeout} s: {spec.title} takes a revert timer of {low}-{high} s"
            )
