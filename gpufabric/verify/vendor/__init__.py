"""The vendors' own models as `verify`'s second judge, where they are installed.

`verify`'s readers take out the facts the plan is checked against; a typo in a line they do not
read (an NVUE enum value, an EOS `speed` form, a misspelt keyword) passes them. Where NVIDIA's NVUE
object model (`nvueschema`) or Arista's AVD (`pyavd`) is installed, `verify` also hands each file to
it; where it is not, the report says the judge was skipped and how to install it. The test suite
judges every rendered file with the same code (tests/test_oracle_*.py).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from gpufabric.config.context import DeviceContext
from gpufabric.platforms import platform
from gpufabric.verify.facts import Finding


@dataclass(frozen=True)
class Judge:
    platform: str
    title: str  # whose model it is
    package: str  # the import name of the vendor's package
    requirement: str  # what to install


JUDGES = {
    "cumulus": Judge("cumulus", "NVIDIA's NVUE object model", "nvueschema", "nvueschema>=0.1"),
    "eos": Judge("eos", "Arista's AVD eos_cli_config_gen", "pyavd", "pyavd>=5,<7"),
}


@cache
def installed(name: str) -> bool:
    """The platform's judge can run: its vendor package imports."""
    judge = JUDGES.get(name)
    if judge is None:
        return False
    try:
        importlib.import_module(judge.package)
    except ImportError:
        return False
    return True


def skipped_note(name: str) -> str:
    judge = JUDGES[name]
    return f"{judge.title} not installed: pip install '{judge.requirement}' (or the project's `vendor` extra)"


def judge(ctx: DeviceContext, folder: Path) -> list[Finding]:
    """The vendor's findings on one switch's candidate file; none for a platform without a judge."""
    name = ctx.device.name
    spec = platform(ctx.device.platform)
    path = folder / f"{name}{spec.candidate_suffix}"
    if ctx.device.platform == "cumulus":
        from gpufabric.verify.vendor import nvue

        return nvue.judge(name, path, ctx.release)
    if ctx.device.platform == "eos":
        from gpufabric.verify.vendor import avd

        return avd.judge(ctx, path)
    return []
