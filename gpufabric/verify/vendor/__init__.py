"""The vendors' own models as `verify`'s second judge, where they are installed.

`verify`'s readers take out the facts the plan is checked against; a typo in a line they do not
read (an NVUE enum value, an EOS `speed` form, a misspelt keyword) passes them. Where a platform
names a judge (`Platform.judge`: NVIDIA's NVUE object model for Cumulus, Arista's AVD for EOS)
and its package is installed, `verify` also hands each file to it; where it is not, the report says
the judge was skipped and how to install it. The test suite judges every rendered file with the
same code (tests/oracles/test_oracle_*.py).
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path

from gpufabric.config.context import DeviceContext
from gpufabric.platforms import platform
from gpufabric.verify.facts import Finding


@cache
def installed(name: str) -> bool:
    """The platform's judge can run: its vendor package imports."""
    judge = platform(name).judge
    if judge is None:
        return False
    try:
        importlib.import_module(judge.package)
    except ImportError:
        return False
    return True


def title(name: str) -> str:
    judge = platform(name).judge
    return judge.title if judge else ""


def skipped_note(name: str) -> str:
    judge = platform(name).judge
    assert judge is not None
    return f"{judge.title} not installed: pip install '{judge.requirement}' (or the project's `vendor` extra)"


def warm(name: str, release: str) -> None:
    """Build the judge's model of `release` now, where its module offers `warm`: `verify` calls this
    before it forks its workers, which then share the one copy instead of each building its own
    (NVIDIA's model of a release is 741 pydantic classes: half a second of CPU per process, with
    only its root built). A model that fails to build is left for `judge`, which reports it on
    each file."""
    spec = platform(name)
    if spec.judge is None:
        return
    try:
        prepare = getattr(importlib.import_module(spec.judge.module), "warm", None)
        if prepare is not None:
            prepare(release)
    except Exception:  # the same failure is a finding on each file, from judge()
        return


def judge(ctx: DeviceContext, folder: Path) -> list[Finding]:
    """The vendor's findings on one switch's candidate file; none for a platform without a judge."""
    spec = platform(ctx.device.platform)
    if spec.judge is None:
        return []
    path = folder / f"{ctx.device.name}{spec.facts.candidate_suffix}"
    try:
        found: list[Finding] = importlib.import_module(spec.judge.module).judge(ctx, path)
    except Exception as exc:  # a vendor's code on a hand-edited file: a finding, never a crash
        what = f"{type(exc).__name__}: {exc}"[:300]
        return [Finding("vendor-error", ctx.device.name, path.name, 1, f"{spec.judge.title} to judge the file", what)]
    return found
