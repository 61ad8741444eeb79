"""What a drain's wait costs to plan at 32k: the prefixes each neighbour of a drained switch must route around it.

    python -m bench.drain_wait_scale             # the 32k example, a spine drained (its leaves read)
    python -m bench.drain_wait_scale --repeat 7
    python -m bench.drain_wait_scale --example multiplane-131k --repeat 1   # minutes: the anchor is all pairs

Before its first reading of the switches, a wait works out what each neighbour of the drained switches should
route, and how widely, without them (gpufabric/maintenance/wait.py): the plan's path vectors over the plane
(the loopbacks), and beside each leaf's loopback one of its servers' subnets at the same width. Timed apart:

- loopbacks: the path vectors alone (`expected_widths`), the anchor: what the wait read before the subnets;
- subnets: finding one subnet per leaf (`host_prefixes`), over every server NIC of the plan;
- the wait's table: both, for the drained spine's neighbours, as a wait builds it once. On a multi-plane
  fabric it walks the drained spine's plane alone (the others never reach it), so it is below the anchor.

It prints the median and the spread (min-max) of each over the repeats, one process, and the prefixes each
neighbour is then held to. The switches' readings and the port samples that follow are not timed: they are the
switches' answers, not gpufabric's work.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.fabrics import EXAMPLES
from gpufabric.intent import load_intent
from gpufabric.maintenance import wait
from gpufabric.plan import build_plan
from gpufabric.plan.ecmp import expected_widths


def _timed(repeat: int, work: Callable[[], Any]) -> tuple[list[float], Any]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return times, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each step (default 5)")
    parser.add_argument("--example", default="three-tier-32k", help="the example (default three-tier-32k)")
    opts = parser.parse_args(argv)
    plan = build_plan(load_intent(str(EXAMPLES / f"{opts.example}.yml")))
    spine = next(d for d in plan.devices() if d.plane == "compute" and d.role == "spine")
    drained = frozenset({spine.name})
    neighbours = sorted(wait.facing(plan, drained))
    rows = []
    times, _ = _timed(opts.repeat, lambda: expected_widths(plan, "compute", {}, without=drained))
    rows.append(("loopbacks (path vectors, the anchor)", times))
    times, hosts = _timed(opts.repeat, lambda: wait.host_prefixes(plan))
    rows.append(("subnets (one per leaf)", times))
    times, table = _timed(
        opts.repeat, lambda: wait._widths(plan, neighbours, {}, drained, wait.host_prefixes(plan))
    )  # as a wait builds it: both
    rows.append(("the wait's table (both)", times))
    nics = sum(len(s.nics) for s in plan.servers)
    print(f"{opts.example}: {len(list(plan.devices()))} switches, {nics} server NICs; {spine.name} drained, "
          f"{len(neighbours)} neighbours read; {opts.repeat} runs each")  # fmt: skip
    print(f"{'step':<40} {'median s':>9} {'min-max s':>17}")
    for name, found in rows:
        print(f"{name:<40} {statistics.median(found):>9.3f} {min(found):>8.3f}-{max(found):<8.3f}")
    held = [len(v) for v in table.values()]
    print(f"prefixes a neighbour is held to: {min(held)}-{max(held)} ({len(hosts)} leaves with a subnet of their own)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
