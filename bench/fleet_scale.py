"""`nornir validate` against fleet size: the lab (real FRR switches) and up to 1,000 simulated switches.

    python -m bench.fleet_scale               # the whole table (the lab rows need root)
    python -m bench.fleet_scale --no-lab      # simulated fleets only
    python -m bench.fleet_scale --json        # the same figures for machines

Lab rows: `gpufabric lab up`, `nornir push` (every plane), then `nornir validate` timed as a user
runs it (a fresh process), on the default fabric (16 switches) and a 40-switch variant (20 GPU
nodes, a 96-port management switch); `lab down` after each. `lab up` (switches only) and `lab down`
are timed too. Budgets: the 40-switch lab validated in under 10 s, brought up in under 10 s and
taken down in under 10 s.

Simulated rows: the same validate task (NAPALM getters of the `frr` driver, then every check) on
N switches whose answers are replayed from a recording of the lab's cmp-spine1
(tests/recorded/frr/), with --latency seconds injected per command, as a slow switch's SSH round
trip. Flat ms per switch as N grows means the fleet is worked in parallel, not in series.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.fabrics import use_placeholder_secrets

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "tests" / "recorded" / "frr" / "cmp-spine1.yml"
SIM_SIZES = (10, 100, 1000)
BUDGET_40_S = 10.0  # validate, lab up and lab down of the 40-switch lab, each
use_placeholder_secrets()  # what a push renders names them; this benchmark's lab is its own


def _cli(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`gpufabric ...` or `nornir ...`, the installed commands next to this Python."""
    exe = str(Path(sys.executable).parent / tool)
    return subprocess.run([exe, *args], capture_output=True, text=True, check=False)


def _forty_switch_intent(folder: Path) -> Path:
    doc: Any = yaml.safe_load((ROOT / "inventory" / "fabric.yml").read_text())
    doc = copy.deepcopy(doc)
    doc["server_groups"][0]["count"] = 20
    doc["planes"]["oob"]["switches"]["mgmt"]["ports"] = 96
    path = folder / "fabric-40.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _wait_converged(file_arg: list[str], limit: float = 120.0) -> float:
    """Seconds after the push until validate first passes: the last batch's sessions are still coming up
    when push returns (its checks ask only that nothing got worse), and a fabric is timed converged."""
    start = time.perf_counter()
    while _cli("nornir", "validate", *file_arg, "--lab", "--format", "json").returncode != 0:
        if time.perf_counter() - start > limit:
            raise SystemExit(f"validate still failing {limit:.0f} s after the push")
        time.sleep(2)
    return time.perf_counter() - start


def lab_row(name: str, intent: Path | None) -> dict[str, Any]:
    file_arg = [str(intent)] if intent else []
    start = time.perf_counter()
    up = _cli("gpufabric", "lab", "up", "--no-hosts", *file_arg)
    up_s = time.perf_counter() - start
    if up.returncode != 0:
        raise SystemExit(f"lab up failed for {name}: {up.stderr.strip()}")
    try:
        pushed = _cli("nornir", "push", *file_arg, "--lab", "--json", "--confirm-timeout", "120")
        if pushed.returncode != 0:
            raise SystemExit(f"push failed for {name}: {pushed.stdout[-2000:]} {pushed.stderr[-2000:]}")
        converged = _wait_converged(file_arg)
        start = time.perf_counter()
        checked = _cli("nornir", "validate", *file_arg, "--lab", "--format", "json")
        seconds = time.perf_counter() - start
        report = json.loads(checked.stdout)
    finally:
        start = time.perf_counter()
        down = _cli("gpufabric", "lab", "down")
        down_s = time.perf_counter() - start
        if down.returncode != 0:
            raise SystemExit(f"lab down failed for {name}: {down.stderr.strip()}")
    results = report["results"]
    devices = len({r["device"] for r in results})
    return {
        "fleet": name,
        "kind": "lab (FRR)",
        "switches": devices,
        "checks": len(results),
        "failed": sum(1 for r in results if r["verdict"] != "pass"),
        "seconds": seconds,
        "ms_per_switch": 1000 * seconds / devices,
        "converged_after_s": converged,
        "up_s": up_s,
        "down_s": down_s,
    }


def simulated_row(size: int, latency: float) -> dict[str, Any]:
    from nornir.core import Nornir
    from nornir.core.inventory import ConnectionOptions, Defaults, Groups, Host, Hosts, Inventory
    from nornir.core.plugins.connections import ConnectionPluginRegister
    from nornir.plugins.runners import ThreadedRunner
    from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

    from gpufabric.config.context import LinkIndex
    from gpufabric.config.secrets import PasswordHasher
    from gpufabric.drivers.recording import ReplayTransport, load
    from gpufabric.fleet.lab.topology import topology
    from gpufabric.fleet.runner import run_per_host
    from gpufabric.fleet.target import WORKERS
    from gpufabric.intent import load_intent
    from gpufabric.validate.planned import planned
    from nornir_tasks.validate import validate_device

    if CONNECTION_NAME not in ConnectionPluginRegister.available:
        ConnectionPluginRegister.register(CONNECTION_NAME, Napalm)
    plan = topology(load_intent(None)).plan
    index = LinkIndex(plan, PasswordHasher(plan.intent.fabric.name, {"GPUFABRIC_SWITCH_PASSWORD": "unused"}, None))
    spine = planned(plan, index, ["cmp-spine1"], "compute")["cmp-spine1"]
    answers = load(RECORDED)
    hosts = Hosts()
    transports = []
    for i in range(size):
        name = f"sim{i:04d}"
        hosts[name] = Host(name=name, hostname=name, username="u", password="p", platform="frr")
        transport = ReplayTransport(answers, latency)
        transports.append(transport)
        hosts[name].connection_options[CONNECTION_NAME] = ConnectionOptions(
            extras={"optional_args": {"transport": transport, "pathspace": "sim", "lldp_socket": "/run/sim"}}
        )
    nr = Nornir(inventory=Inventory(hosts=hosts, groups=Groups(), defaults=Defaults()), runner=ThreadedRunner(WORKERS))
    names = list(hosts)
    start = time.perf_counter()
    found = run_per_host(
        nr, names, validate_device, planned=dict.fromkeys(names, spine), candidate=dict.fromkeys(names, None)
    )
    seconds = time.perf_counter() - start
    nr.close_connections()
    sent = sum(len(t.sent) for t in transports)
    results = [r for rs in found.values() for r in rs]
    return {
        "fleet": f"simulated x{size}",
        "kind": f"replay, {latency * 1000:.0f} ms/command",
        "switches": size,
        "checks": len(results),
        "failed": sum(1 for r in results if not r.ok),
        "seconds": seconds,
        "ms_per_switch": 1000 * seconds / size,
        # the least a switch can cost: its commands' latency, shared by the workers in flight
        "floor_ms": 1000 * (sent / size) * latency / min(size, WORKERS),
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    base = {row["kind"].split(",")[0]: row["ms_per_switch"] for row in reversed(rows)}
    head = (
        f"{'fleet':<18} {'kind':<26} {'switches':>8} {'checks':>7} {'failed':>6} "
        f"{'seconds':>8} {'ms/switch':>9} {'floor ms':>8} {'x first':>7} {'up s':>6} {'down s':>6}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        ratio = r["ms_per_switch"] / base[r["kind"].split(",")[0]]
        floor = f"{r['floor_ms']:.1f}" if "floor_ms" in r else "-"
        up = f"{r['up_s']:.2f}" if "up_s" in r else "-"
        down = f"{r['down_s']:.2f}" if "down_s" in r else "-"
        print(
            f"{r['fleet']:<18} {r['kind']:<26} {r['switches']:>8} {r['checks']:>7} {r['failed']:>6} "
            f"{r['seconds']:>8.2f} {r['ms_per_switch']:>9.1f} {floor:>8} {ratio:>7.2f} {up:>6} {down:>6}"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-lab", action="store_true", help="skip the lab rows (they need root and take minutes)")
    ap.add_argument("--latency", type=float, default=0.02, help="seconds per replayed command [0.02]")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    if not args.no_lab:
        if os.geteuid() != 0:
            print("error: the lab rows need root (or pass --no-lab)", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory() as tmp:
            rows.append(lab_row("default (16)", None))
            rows.append(lab_row("40-switch", _forty_switch_intent(Path(tmp))))
    for size in SIM_SIZES:
        print(f"simulating {size} switches ...", file=sys.stderr)
        rows.append(simulated_row(size, args.latency))
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print_table(rows)
        forty = next((r for r in rows if r["fleet"] == "40-switch"), None)
        if forty:
            for what, seconds in (("validated", forty["seconds"]), ("up", forty["up_s"]), ("down", forty["down_s"])):
                verdict = "within" if seconds < BUDGET_40_S else "OVER"
                print(f"40-switch lab {what} in {seconds:.2f} s: {verdict} the {BUDGET_40_S:.0f} s budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
