"""The InfiniBand lab at NVIDIA's SuperPOD sizes: what each step costs, with the real OpenSM.

    python -m bench.ib_scale                          # H100 1 and 4 SU, B200 8 and 16 SU
    python -m bench.ib_scale dgx-b200:64 --json       # any published size, as SYSTEM:SU

Per fabric, in one temporary folder removed afterwards: plan, export, ibsim ready, ibnetdiscover
(before any SM), OpenSM's first SUBNET UP with up/down routing and QoS on, and again with QoS off
(SL-to-VL programming is most of the difference), then `gpufabric.ib.validate` without the
partition check (one SMP per compute port: its time grows with the ports) and with it. Needs
ibsim-utils, opensm and infiniband-diags; every process is stopped by PID.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from gpufabric.ib import discovery, opensm, sim, topology, validate
from gpufabric.ib.design import superpod
from gpufabric.ib.model import IbFabric
from gpufabric.ib.planner import plan_fabric

DEFAULT = ("dgx-h100:1", "dgx-h100:4", "dgx-b200:8", "dgx-b200:16")


def _timed(step: Callable[[], Any]) -> tuple[Any, float]:
    start = time.monotonic()
    value = step()
    return value, round(time.monotonic() - start, 2)


def _start_sm(
    s: sim.Simulator, fabric: IbFabric, found: discovery.Discovery, folder: Path, *, qos: bool, standby: bool = False
) -> tuple[sim.OpenSm, float]:
    role: Literal["primary", "standby"] = "standby" if standby else "primary"
    opensm.write(opensm.render(fabric, found, opensm.SmSettings(qos=qos), folder, role=role), folder)
    name = fabric.sm.standby if standby else fabric.sm.primary
    assert name is not None
    sm = sim.OpenSm(s, folder, folder / "opensm.conf", topology.node_id(fabric.by_name[name]))
    try:
        return sm, round(sm.start(timeout=1800, ready="Entering STANDBY state" if standby else "SUBNET UP"), 2)
    except BaseException:
        sm.stop()
        raise


def measure(spec: str, folder: Path, partitions: bool) -> dict[str, Any]:
    system, su = spec.split(":")
    fabric, plan_s = _timed(lambda: plan_fabric(superpod(system, int(su))))
    topo = folder / "fabric.topo"
    _, export_s = _timed(lambda: topo.write_text(topology.render(fabric)))
    size = sim.limits(len(fabric.nodes), len(fabric.switches), sum(n.ports + 1 for n in fabric.nodes))
    row: dict[str, Any] = {
        "fabric": spec,
        "tiers": fabric.tiers,
        "switches": len(fabric.switches),
        "adapters": len(fabric.adapters),
        "plan_s": plan_s,
        "export_s": export_s,
    }
    s = sim.Simulator(folder, topo, limits=size)
    try:
        row["ibsim_s"] = round(s.start(timeout=600), 2)
        text, row["ibnetdiscover_s"] = _timed(lambda: s.run("ibnetdiscover", timeout=1800))
        found = discovery.discover(fabric, topology.parse(text))
        sm, row["subnet_up_qos_s"] = _start_sm(s, fabric, found, folder / "sm-qos", qos=True)
        sm.stop()
        sm, row["subnet_up_s"] = _start_sm(s, fabric, found, folder / "sm", qos=False)
        try:
            standby, _ = _start_sm(s, fabric, found, folder / "standby", qos=False, standby=True)
            try:
                row.update(_validate(s, sm, fabric, partitions))
            finally:
                standby.stop()
        finally:
            sm.stop()
    finally:
        s.stop()
    return row


def _validate(s: sim.Simulator, sm: sim.OpenSm, fabric: IbFabric, partitions: bool) -> dict[str, Any]:
    def run(args: Sequence[str]) -> str:
        return s.run(*args, host=sm.host, timeout=1800)

    settings = opensm.SmSettings(qos=False)
    quick = tuple(c for c in validate.CHECKS if c != "partitions")
    out: dict[str, Any] = {}
    results, out["validate_s"] = _timed(lambda: validate.validate(fabric, settings, run, rates=False, checks=quick))
    out["validate_ok"] = all(r.ok for r in results)
    if partitions:
        results, out["validate_all_s"] = _timed(lambda: validate.validate(fabric, settings, run, rates=False))
        out["validate_all_ok"] = all(r.ok for r in results)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("fabrics", nargs="*", default=list(DEFAULT), help="SYSTEM:SU (dgx-h100:4, dgx-b200:16 ...)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--no-partitions", action="store_true", help="Leave out validate with the partition check.")
    args = parser.parse_args(argv)
    if missing := sim.missing():
        parser.error(f"needs {', '.join(missing)}")
    rows = []
    for spec in args.fabrics:
        with tempfile.TemporaryDirectory(prefix="gpufabric-ib-bench-") as tmp:
            rows.append(measure(spec, Path(tmp), not args.no_partitions))
        if not args.json:
            print(" ".join(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
