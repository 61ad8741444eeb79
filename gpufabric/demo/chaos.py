"""`--chaos`: cut one spine (stop its FRR), show what validation and ECMP see and that hosts still reach
each other on every rail, restore it, and show everything green again."""

from __future__ import annotations

import time
from pathlib import Path

from gpufabric.demo import measure
from gpufabric.demo.fact import Fact
from gpufabric.demo.flow import Report, converge
from gpufabric.demo.runner import Runner
from gpufabric.lab import frr_node, netlink
from gpufabric.lab.daemons import node_dir
from gpufabric.plan.model import Plan

# How long the leaves get to withdraw the stopped spine's paths: BGP notices at once (bgpd's sessions
# close), a loaded machine takes its time. The chaos step waits for the narrowed width, not a fixed
# number of seconds; this only bounds a fabric that never narrows (then reported as observed).
SETTLE_TIMEOUT = 120.0


def _check(name: str, expected: str, observed: str, passed: bool) -> Fact:
    return Fact(f"chaos: {name}", expected, observed, passed, "compute")


def _narrowed(plan: Plan, width: int) -> Fact:
    """The compute plane's ECMP fact once every leaf has `width` next hops, or as found at the deadline."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        fact = next(f for f in measure.ecmp(plan) if f.plane == "compute")
        if fact.observed == str(width) or time.monotonic() > deadline:
            return fact
        time.sleep(1)


def run(runner: Runner, plan: Plan, intent: Path, state_dir: Path, report: Report) -> None:
    spines = [d for d in plan.devices() if d.plane == "compute" and d.role == "spine"]
    spine = spines[0].name
    uts = node_dir(state_dir, spine) / "uts"
    runner.say(f"chaos: stopping FRR on {spine}")
    netlink.run("nsenter", f"--uts={uts}", frr_node.FRRINIT, "stop", spine)
    width = _narrowed(plan, len(spines) - 1)
    cut = runner.json(
        "validate with a spine down", [runner.tool("nornir"), "validate", str(intent), "--lab", "--format", "json"]
    )
    report.chaos.append(
        _check(
            f"validate reports {spine} down",
            "findings > 0",
            f"{cut.get('failed', 0)} findings",
            cut.get("failed", 0) > 0,
        )
    )
    report.chaos.append(
        _check(
            "ECMP width drops by one spine",
            f"{len(spines) - 1} (planned {width.expected})",
            width.observed,
            width.observed == str(len(spines) - 1),
        )
    )
    pings = [f for f in measure.jumbo(plan) if "reaches every other" in f.name]
    report.chaos.append(
        _check(
            "every GPU host still reaches every other on every rail",
            "; ".join(f.expected for f in pings),
            "; ".join(f.observed for f in pings),
            all(f.passed for f in pings),
        )
    )
    runner.say(f"chaos: starting FRR on {spine} again")
    frr_node.start(spine, uts)
    healed = converge(runner, intent, report)
    report.chaos.append(
        _check("validate is green again", "0 findings", f"{healed.get('failed', 0)} findings", bool(healed.get("ok")))
    )
    width = next(f for f in measure.ecmp(plan) if f.plane == "compute")
    report.chaos.append(_check("ECMP width is back", width.expected, width.observed, width.passed))
