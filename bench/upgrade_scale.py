"""`nornir upgrade` of the 32k example against the fleet simulator, timed against the bound its plan allows.

    python -m bench.upgrade_scale                          # the whole fabric (1,309 switches)
    python -m bench.upgrade_scale --scale 1/64 --plant 3   # a small share; a switch of batch 3 hangs

Every switch of the fabric (the 32k example plus an out-of-band plane, as bench/rollout_scale.py makes it:
every switch Cumulus Linux) runs Cumulus Linux 5.13.1 on the simulator (bench/fleet_sim, its image slots and
reboots in bench/fleet_sim/upgrade.py) and `nornir upgrade --release 5.14` installs 5.14.0 on all of them,
one failure domain of a plane at a time, run as a user runs it (a fresh process, the installed command)
inside a network namespace of its own, as bench/rollout_scale.py does.

The simulator's install and reboot times are stated assumptions (no vendor publishes them: the table in
bench/fleet_sim/upgrade.py), multiplied by `--latency-scale` (default 0.01: an install of 240 s takes 2.4 s)
so that the run fits in minutes; the figures scale back by the same factor. The bound is the plan's waves
(the batches that went out) times one switch's fetch, checksum, install and reboot at those figures, plus
the 2 s its checks must hold: what no controller could beat with every switch of a wave handled at once.

`--plant N` makes one switch of batch N hang on the new release (its watchdog brings it back on the previous
partition): the rollout must stop at batch N with that switch fallen back, and no later switch touched.
`--drain always` drains through the drivers' own drain (the simulator has none yet): the default is never,
and the bound counts no drain.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from bench.fabrics import PLACEHOLDER_SECRETS
from bench.fleet_sim import upgrade as sim
from bench.rollout_scale import (
    PASSWORD_ENV,
    SETTLE,
    Simulator,
    _cpu,
    _enter_namespace,
    _nornir,
    _raise_file_limit,
    intent_text,
    timed,
)
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

FROM, TO = "5.13.1", "5.14.0"
IMAGE = f"cumulus-linux-{TO}-mlx-amd64.bin"
IMAGE_URL = f"http://10.254.0.1/images/{IMAGE}"  # the namespace's own address: nothing is fetched
FABRIC = "fleet-sim-upgrade"  # its own push lock and trail, apart from bench/rollout_scale.py's
MODE = "warm"
# The controller's bound on a switch's return, in wall seconds: a batch of 64 switches logging in again at once
# on two shared cores took 18 s to see a 0.9 s simulated boot (a first run with 10 s stopped at the
# superspines), so the bound is the controller's, not the simulated switch's.
BOOT_TIMEOUT = 120.0  # Cumulus's least disruptive reboot, the one `nornir upgrade` picks


def switches_of(fraction: Fraction, folder: Path, plant: int | None) -> tuple[Path, list[dict[str, Any]]]:
    import ipaddress

    intent = folder / "fabric.yml"
    doc = yaml.safe_load(intent_text(fraction))
    doc["fabric"]["name"] = FABRIC
    intent.write_text(yaml.safe_dump(doc, sort_keys=False))
    plan = build_plan(load_intent(str(intent)))
    entries: list[dict[str, object]] = [
        {"name": d.name, "address": str(ipaddress.IPv4Address(d.mgmt_ip)), "platform": d.platform, "release": FROM}
        for d in plan.devices()
    ]
    if plant is not None:
        from gpufabric.fleet.target import WORKERS
        from gpufabric.push.targets import batches

        planned = batches(plan, list(plan.devices()), None, width=WORKERS)
        victim = planned[plant - 1].devices[-1]
        for e in entries:
            if e["name"] == victim:
                e["hang_on"] = [TO]
    return intent, entries


def measure(
    fraction: Fraction, scale: float, plant: int | None, drain: str, budget: float | None, *, keep: Path | None = None
) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="upgrade-sim-"))
    intent, entries = switches_of(fraction, folder, plant)
    simulator = Simulator(folder, entries, scale)
    argv = _nornir(
        "upgrade", str(intent), "--known-hosts", str(simulator.known_hosts), "--json",
        "--release", "5.14", "--image", IMAGE_URL, "--sha512", sim.image_sha512(IMAGE),
        "--drain", drain, "--poll", str(max(0.5, 20 * scale)),
        "--drain-timeout", "0",  # the simulator routes nothing: a wait on its routes would never end
        "--audit-log", str(folder / "audit.jsonl"),
        "--boot-timeout", str(max(BOOT_TIMEOUT, 4 * sim.SECONDS[MODE] * scale)),
        "--fallback-timeout", str(max(BOOT_TIMEOUT, 2 * sim.SECONDS[sim.WATCHDOG] * scale)),
    )  # fmt: skip
    try:
        before = simulator.snapshot()
        run = timed(argv, budget)
        after = simulator.snapshot()
    finally:
        simulator.stop()
        shutil.rmtree(folder, ignore_errors=True)
    result = run["result"] or {}
    if keep is not None and result:  # the upgrade's own JSON (every switch, every batch's timing) beside the row
        keep.with_suffix(".result.json").write_text(json.dumps(result) + "\n")
    if not result:
        print(f"upgrade exited {run['rc']}: {run['stderr']}", file=sys.stderr)
    sim_cpu = after["user_s"] + after["sys_s"] - before["user_s"] - before["sys_s"]
    return _row(fraction, scale=scale, n=len(entries), run=run, result=result, sim_cpu=sim_cpu, plant=plant)


def _spread(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"min": None, "median": None, "p95": None, "max": None}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return {"min": ordered[0], "median": statistics.median(ordered), "p95": p95, "max": ordered[-1]}


def _row(
    fraction: Fraction,
    *, scale: float, n: int, run: dict[str, Any], result: dict[str, Any], sim_cpu: float,
    plant: int | None,
) -> dict[str, Any]:  # fmt: skip
    devices = result.get("devices", [])
    timings = result.get("timings", [])
    waves = len(timings)
    per_wave = sim.wave_bound(MODE, scale, SETTLE)
    bound = waves * per_wave
    states: dict[str, int] = {}
    for d in devices:
        states[d["state"]] = states.get(d["state"], 0) + 1
    wall = run["wall_s"]
    rollout = sum(t["total_s"] for t in timings)  # the batches alone: the plan, the reads before them aside
    return {
        "fraction": str(fraction),
        "switches": n,
        "latency_scale": scale,
        "rc": run["rc"],
        "wall_s": round(wall, 1),
        "waves": waves,
        "per_wave_bound_s": round(per_wave, 2),
        "lower_bound_s": round(bound, 1),
        "ratio": round(wall / bound, 2) if bound else None,
        "rollout_s": round(rollout, 1),
        "rollout_ratio": round(rollout / bound, 2) if bound else None,
        "at_full_latency_bound_h": round((bound - waves * SETTLE) / scale / 3600 + waves * SETTLE / 3600, 1),
        "states": states,
        "stopped_at": result.get("stopped_at"),
        "fell_back": [d["device"] for d in devices if d["state"] == "fell back"],
        "stops": [(d["device"], d["state"], d["reason"]) for d in devices if d["state"] in ("failed", "fell back")][:5],
        "wave_s": _spread([t["total_s"] for t in timings]),
        "wave_back_s": _spread([t["back_s"] for t in timings]),
        "switch_back_s": _spread([d["back_s"] for d in devices if d.get("back_s") is not None]),
        "controller_cpu_s": round(_cpu(run["usage"]), 1),
        "controller_peak_rss_mib": round(run["usage"].ru_maxrss / 1024, 1),
        "simulator_cpu_s": round(sim_cpu, 1),
        "planted_batch": plant,
    }


def print_table(row: dict[str, Any]) -> None:
    print(f"upgrade of {row['switches']} switches ({row['fraction']} of the 32k fabric), Cumulus {FROM} -> {TO}, "
          f"latency scale {row['latency_scale']:g}, reboot {MODE}")  # fmt: skip
    print(f"  wall {row['wall_s']:.1f} s in {row['waves']} waves; bound {row['lower_bound_s']:.1f} s "
          f"({row['per_wave_bound_s']:.2f} s a wave); ratio {row['ratio']}")  # fmt: skip
    print(f"  the batches alone {row['rollout_s']:.1f} s (ratio {row['rollout_ratio']}); before them, the plan, "
          f"the reads of what each switch must get back: {row['wall_s'] - row['rollout_s']:.1f} s")  # fmt: skip
    print(f"  at full latency the bound is {row['at_full_latency_bound_h']} h")
    print(f"  switches: {row['states']}; stopped at batch {row['stopped_at']}; fell back: {row['fell_back'] or 'none'}")
    header = f"  {'spread (s)':<28}{'min':>9}{'median':>9}{'p95':>9}{'max':>9}"
    print(header)
    for key, title in (("wave_s", "a wave, whole"), ("wave_back_s", "a wave, reboot to all back"),
                       ("switch_back_s", "a switch, reboot to back")):  # fmt: skip
        s = row[key]
        cells = "".join(
            f"{v:9.2f}" if v is not None else f"{'-':>9}" for v in (s["min"], s["median"], s["p95"], s["max"])
        )
        print(f"  {title:<28}{cells}")
    print(f"  controller: {row['controller_cpu_s']} s CPU, {row['controller_peak_rss_mib']} MiB peak; "
          f"simulator {row['simulator_cpu_s']} s CPU")  # fmt: skip
    for device, state, reason in row["stops"]:
        print(f"  {state} {device}: {reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="1", help="the fraction of the 32k fabric (1/64, 1/8, 1)")
    parser.add_argument("--latency-scale", type=float, default=0.01, help="multiply the simulator's latencies")
    parser.add_argument("--plant", type=int, help="a switch of this batch hangs on the new release")
    parser.add_argument("--drain", choices=["never", "always"], default="never")
    parser.add_argument("--budget", type=float, help="stop the upgrade after this many seconds")
    parser.add_argument("--json", type=Path, help="write the row here as JSON")
    args = parser.parse_args()
    _enter_namespace()
    _raise_file_limit()
    os.environ.setdefault(PASSWORD_ENV, PLACEHOLDER_SECRETS[PASSWORD_ENV])
    row = measure(Fraction(args.scale), args.latency_scale, args.plant, args.drain, args.budget, keep=args.json)
    print_table(row)
    if args.json:
        args.json.write_text(json.dumps(row, indent=2) + "\n")


if __name__ == "__main__":
    main()
