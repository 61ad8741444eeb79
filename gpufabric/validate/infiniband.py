"""`nornir validate --plane compute` on an InfiniBand compute plane: the fabric read with the real
infiniband-diags (on this host, which must sit on the fabric, or on the lab's ibsim fabric) and judged
against the plan by gpufabric.ib.validate; the results in the same form as the Ethernet checks'.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Collection, Sequence
from pathlib import Path

from gpufabric.ib import lab as ib_lab
from gpufabric.ib import validate as ib_validate
from gpufabric.ib.errors import fail
from gpufabric.ib.results import Result, Runner
from gpufabric.plan.infiniband import IbPlan
from gpufabric.verify.running.results import CheckResult

# The diagnostics answer in seconds on a fabric of thousands of ports; a tool that does not is stuck.
TOOL_TIMEOUT = 300
_NODE = re.compile(r'"([^"]+)"')


def local_runner(args: Sequence[str]) -> str:
    """One of infiniband-diags on this host's fabric (the host must have an InfiniBand port on it)."""
    try:
        done = subprocess.run(list(args), capture_output=True, text=True, check=False, timeout=TOOL_TIMEOUT)
    except FileNotFoundError:
        raise fail(
            args[0], "not found on this host", "install infiniband-diags, or run from the fabric's SM host"
        ) from None
    except subprocess.TimeoutExpired:
        raise fail(args[0], f"no answer in {TOOL_TIMEOUT} s", "check the host's InfiniBand port and the SM") from None
    if done.returncode != 0:
        raise fail(" ".join(args), f"exited {done.returncode}: {done.stderr.strip()[-300:]}", "check the fabric")
    return done.stdout


def lab_runner(lab_state: Path) -> Runner:
    """The diagnostics on the lab's ibsim fabric (`gpufabric lab up` with an InfiniBand compute plane)."""
    return ib_lab.runner(lab_state)


def check_plane(
    ib: IbPlan, run: Runner, *, rates: bool = True, checks: Collection[str] = ib_validate.CHECKS
) -> list[CheckResult]:
    """Every InfiniBand check as a CheckResult: `ib-<check>`, the first node the item names as device."""
    found = ib_validate.validate(ib.fabric, ib.settings, run, rates=rates, checks=checks)
    return [as_check(r, set(ib.fabric.by_name)) for r in found]


def as_check(r: Result, nodes: set[str]) -> CheckResult:
    """The device is the node the item is about (a port's node, an adapter), else the fabric as a whole."""
    named = _NODE.search(r.item)
    device = named[1] if named else (r.item if r.item in nodes else "fabric")
    return CheckResult(f"ib-{r.check}", device, r.item, r.expected, r.observed, r.ok)
