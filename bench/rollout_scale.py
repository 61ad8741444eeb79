"""`nornir push` of every plane of the 32k example against a simulated fleet, timed against the bound
the plan allows.

    python -m bench.rollout_scale                         # the whole fabric (1,309 switches)
    python -m bench.rollout_scale --max-capacity-loss 12.5% --drain always
    python -m bench.rollout_scale --scale 1/8,1/4,1/2,1   # growth: each fraction of the fabric
    python -m bench.rollout_scale --scale 1/8 --latency-scale 0.1 --json out.json
    python -m bench.rollout_scale --example multiplane-131k --sim-shards 4 --max-capacity-loss 12.5% --drain always

Each fraction is the 32k example's compute plane with that share of its GPU nodes (1/8: one pod), plus an
out-of-band plane (Cumulus management switches) whose subnet gives every switch its address: the
example names none, and a push reaches switches at their management address. The run happens in a
network namespace of its own whose loopback holds that subnet, so the simulator (bench/fleet_sim, a
test double, one asyncio process) listens on every switch's address and `nornir push`, run as a user
runs it (a fresh process, the installed command), reaches them as it would real ones: SSH with the
host keys in a known_hosts file the simulator wrote, the password from the variable the intent names.
The example's storage plane (and its storage servers) is left out: the figures in docs/benchmarks.md
were measured on the compute and out-of-band planes (1,309 switches), and stay comparable.

Per fraction, in order: `push --dry-run` (every switch's diff), the push, and the same push again
(every diff must be empty). From one run it prints wall time, waves (the batches that went out), the
controller's peak RSS and CPU, the simulator's CPU, the lower bound (waves x one switch's
commit-check-confirm time by the simulator's latencies, plus the checks' 2 s settle) and the ratio;
from the simulator's event log it checks that never more than one failure domain of a plane was down
(committed and not yet confirmed) at any moment, and says per run whether the controller's CPU,
the simulator's, or waiting bounded it. `--push-budget S` stops any one run taking longer (a
whole-fabric push at full latency takes over half an hour: the bound alone is 106 waves x 13.2 s).

Before the runs of each fraction it measures the floor in the same namespace: one SSH login and one
command to every switch through the drivers' transport (bench/ssh_floor.py), the least any read of the
fleet costs here. With `--dry-run-only` the table is the reads': wall time beside that floor, and the
CPU milliseconds per switch of the controller and of the simulator (the two share the machine's
cores). `--json` writes the rows `bench/plot/plot_scaling.py` draws docs/scaling.svg from. `--keep-events
PATH` keeps the simulator's event log and its trace of every command (start, end, switch, kind, exit code)
beside PATH, which `python -m bench.profiling.waves` reads: where each wave's time went.

`--max-capacity-loss 12.5%` pushes under a capacity budget (several failure domains a batch); `--drain
always` is `push --drain always`: the push drains every switch before its change and undrains it after,
through each driver's own drain (on the simulated Cumulus switches, NVUE's maintenance unit:
bench/fleet_sim/drain.py), and a drained wave's bound then counts the drain and the undrain too. After
every push the budget is proved from the logs alone by gpufabric.push.proof (not by the planner): every
largest set of switches out of service at once in the simulator's log, and every batch the audit trail
records.

`--example multiplane-131k` pushes the 131,072-GPU example instead (12,702 switches at scale 1: two
compute planes, storage, business and its own out-of-band plane with a core, its subnet replaced by
the namespace's); a fraction scales its GPU servers, the storage servers stay. One simulator process
(one asyncio loop, one core) cannot serve that many switches as fast as the controller reads them:
`--sim-shards N` runs N simulator processes, each serving a slice of the switches, their host keys in
one known_hosts file and their event logs merged by time for the checks and the proof.

`--dry-run-only`, `--validate`, `--role ROLE` (a small fleet of the same fabric), `--platform eos`
(the data planes on Arista EOS, eAPI over HTTPS, `--ca-file`), `--profile DIR` (py-spy),
`--experiment nodelay,libyaml,switchinterval,readers64,readers128,readers512` (A/B changes to the
controller, see HOOKS), `--json-output`.
"""

from __future__ import annotations

import argparse
import copy
import ipaddress
import itertools
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from bench.fabrics import EXAMPLES, PLACEHOLDER_SECRETS, use_placeholder_secrets
from bench.fleet_sim import drain as sim_drain
from bench.fleet_sim import latency
from bench.fleet_sim.events import max_domains_down
from gpufabric.fleet.target import READ_WORKERS
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from gpufabric.push.audit import read as audit_read
from gpufabric.push.budget import parse_budget
from gpufabric.push.proof import Judge, claims_problems, from_events, from_trail

BENCH = Path(__file__).resolve().parent
NODES = 4096  # the 32k example's GPU nodes
SUBNET = ipaddress.ip_network("10.254.0.0/16")  # the OOB plane's, made local inside the namespace
FABRIC = "fleet-sim-32k"  # its own name: its push lock and trail are this benchmark's
# The examples a run can push: the 32k example (with an OOB plane added) or the 131k one (its own OOB plane).
FLEETS = {"three-tier-32k": "fleet-sim-32k", "multiplane-131k": "fleet-sim-131k"}
SETTLE = 2.0  # nornir_tasks.push.PushOptions.settle: how long a switch's checks must hold
PASSWORD_ENV = "GPUFABRIC_SWITCH_PASSWORD"
INSIDE = "FLEET_SIM_NETNS"  # set once the benchmark runs in its own network namespace
BUDGET_S = 60.0  # dry run and validate at 32k
use_placeholder_secrets()


def intent_text(fraction: Fraction, data_platform: str = "cumulus", example: str = "three-tier-32k") -> str:
    if example != "three-tier-32k":
        return _example_text(fraction, example)
    doc: Any = yaml.safe_load((EXAMPLES / "three-tier-32k.yml").read_text())
    doc = copy.deepcopy(doc)
    doc["fabric"]["name"] = FABRIC
    doc["planes"].pop("storage", None)  # the fabric of the published figures: compute and out-of-band
    doc["server_groups"] = [g for g in doc["server_groups"] if g.get("kind", "gpu") != "storage"]
    for group in doc["server_groups"]:
        group.get("nics", {}).pop("storage", None)
    doc["server_groups"][0]["count"] = int(NODES * fraction)
    doc["planes"]["oob"] = {
        "prefix": "oob",
        "subnet": str(SUBNET),
        "switches": {
            "mgmt": {"platform": "cumulus", "model": "SN2201", "ports": 48, "port_speed": "1G"},
            "spine": {"platform": "cumulus", "model": "SN2201", "ports": 48, "port_speed": "10G"},
        },
    }
    doc["credentials"]["switches"]["password"] = {"env": PASSWORD_ENV}
    if data_platform == "eos":  # as bench/fabrics.eos_32k_text: EOS takes /31 links, not unnumbered ones
        compute = doc["planes"]["compute"]
        for role in compute["switches"].values():
            role["platform"] = "eos"
        compute["routing"]["addressing"] = "p2p31"
        compute["addressing"]["p2p"] = "10.64.0.0/14"
    return yaml.safe_dump(doc, sort_keys=False)


def _example_text(fraction: Fraction, example: str) -> str:
    """An example that plans its own OOB plane: `fraction` of its GPU servers, the OOB subnet the namespace's."""
    doc: Any = yaml.safe_load((EXAMPLES / f"{example}.yml").read_text())
    doc["fabric"]["name"] = FLEETS[example]
    gpu = next(g for g in doc["server_groups"] if g.get("kind", "gpu") == "gpu")
    gpu["count"] = max(1, int(gpu["count"] * fraction))
    doc["planes"]["oob"]["subnet"] = str(SUBNET)
    doc["planes"]["oob"].pop("gateway", None)
    doc["credentials"]["switches"]["password"] = {"env": PASSWORD_ENV}
    return yaml.safe_dump(doc, sort_keys=False)


def _enter_namespace() -> None:
    """Re-run this script in a new network namespace (a user namespace too when not root) whose
    loopback holds SUBNET: nothing outside it sees the simulated switches, and nothing is left behind."""
    if os.environ.get(INSIDE):
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        subprocess.run(["ip", "addr", "add", f"{SUBNET.network_address + 1}/{SUBNET.prefixlen}", "dev", "lo"],
                       check=True)  # fmt: skip
        return
    unshare = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    # The project's root on the path: run as `python -m bench.X` from an installed (not editable) venv, the
    # re-run `python bench/X.py` would otherwise not find the `bench` package its imports name.
    path = os.pathsep.join(p for p in (str(BENCH.parent), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, INSIDE: "1", "PYTHONPATH": path}
    sys.exit(subprocess.run([*unshare, sys.executable, *sys.argv], env=env, check=False).returncode)


def _raise_file_limit() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a socket per switch, on both sides


class ShardedSimulator:
    """`shards` simulator processes, each serving a slice of the switches (one asyncio loop is one core):
    one known_hosts file, one snapshot (the shards' counts summed) and one event log merged by time."""

    def __init__(
        self, folder: Path, switches: list[dict[str, str]], scale: float, trace: bool = False, shards: int = 1
    ) -> None:
        self.folder = folder
        self.ca_file = folder / "ca.pem"  # EOS (one CA a shard) is not sharded: --sim-shards refuses it
        self.known_hosts = folder / "known_hosts"
        self.events, self.stats = folder / "events.jsonl", folder / "sim-stats.json"
        self.trace = folder / "trace.jsonl" if trace else None
        self.shards: list[Simulator] = []
        try:
            for i in range(shards):
                part = folder / f"shard{i}"
                part.mkdir()
                self.shards.append(Simulator(part, switches[i::shards], scale, trace))
        except BaseException:
            for sim in self.shards:
                sim.proc.kill()
            raise
        self.known_hosts.write_text("".join(s.known_hosts.read_text() for s in self.shards))

    def snapshot(self) -> dict[str, Any]:
        return _summed([s.snapshot() for s in self.shards])

    def stop(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        stopped = [s.stop() for s in self.shards]
        events = sorted((e for ev, _ in stopped for e in ev), key=lambda e: e["time"])
        self.events.write_text("".join(json.dumps(e) + "\n" for e in events))
        if self.trace is not None:
            lines = [ln for s in self.shards if s.trace and s.trace.exists() for ln in s.trace.read_text().splitlines()]
            self.trace.write_text("".join(ln + "\n" for ln in lines if ln.strip()))
        stats = _summed([st for _, st in stopped])
        self.stats.write_text(json.dumps(stats))
        return events, stats


def _summed(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The shards' counts and CPU seconds added up, as one simulator's would read."""
    out: dict[str, Any] = {"kinds": {}}
    for part in parts:
        for key, value in part.items():
            if key == "kinds":
                for kind, n in value.items():
                    out["kinds"][kind] = out["kinds"].get(kind, 0) + n
            elif isinstance(value, int | float):
                out[key] = out.get(key, 0) + value
    return out


class Simulator:
    def __init__(self, folder: Path, switches: list[dict[str, str]], scale: float, trace: bool = False) -> None:
        self.ca_file = folder / "ca.pem"  # written when the fleet holds EOS switches
        self.folder = folder
        spec = folder / "switches.json"
        spec.write_text(json.dumps(switches))
        self.known_hosts = folder / "known_hosts"
        self.events, self.stats = folder / "events.jsonl", folder / "sim-stats.json"
        self.trace = folder / "trace.jsonl" if trace else None  # every command's start and end
        env = {**os.environ, "PYTHONPATH": str(BENCH.parent)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.fleet_sim", "--switches", str(spec), "--username", "cumulus",
             "--password-env", PASSWORD_ENV, "--known-hosts", str(self.known_hosts), "--events", str(self.events),
             "--stats", str(self.stats), "--latency-scale", str(scale), "--tls-dir", str(folder),
             *(["--trace", str(self.trace)] if self.trace else [])],
            stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            self.proc.kill()
            raise SystemExit(f"the simulator did not start: {line!r}")

    def snapshot(self) -> dict[str, Any]:
        """The simulator's counts and CPU time so far."""
        self.stats.unlink(missing_ok=True)
        self.proc.send_signal(signal.SIGUSR1)
        for _ in range(200):
            if self.stats.exists():
                return dict(json.loads(self.stats.read_text()))
            time.sleep(0.05)
        raise SystemExit("the simulator did not answer a snapshot request")

    def stop(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)
        events = [json.loads(ln) for ln in self.events.read_text().splitlines() if ln.strip()]
        return events, json.loads(self.stats.read_text())


# A/B experiments on the controller, not fixes: each is a few lines a sitecustomize module on PYTHONPATH
# runs as the controller's Python starts, changing one thing gpufabric itself does not.
HOOKS = {
    # the drivers' candidate checks parse YAML with libyaml's reader instead of PyYAML's pure-Python one
    "libyaml": """
import yaml

def _c_safe_load(stream):
    return yaml.load(stream, Loader=yaml.CSafeLoader)

yaml.safe_load = _c_safe_load
""",
    # the interpreter hands the GIL over every 50 ms instead of 5 (fewer switches between the threads)
    "switchinterval": """
import sys

sys.setswitchinterval(0.05)
""",
    # the reads of every switch (pending-push check, preview, validate) with 64, 128 or 512 sessions in flight
    "readers64": """
import gpufabric.fleet.target

gpufabric.fleet.target.READ_WORKERS = 64
""",
    "readers128": """
import gpufabric.fleet.target

gpufabric.fleet.target.READ_WORKERS = 128
""",
    "readers512": """
import gpufabric.fleet.target

gpufabric.fleet.target.READ_WORKERS = 512
""",
    # every SSH session's socket with TCP_NODELAY (paramiko leaves Nagle's algorithm on)
    "nodelay": """
import socket
import paramiko

_transport_init = paramiko.Transport.__init__

def _nodelay_init(self, sock, *args, **kwargs):
    _transport_init(self, sock, *args, **kwargs)
    try:
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except (AttributeError, OSError):
        pass

paramiko.Transport.__init__ = _nodelay_init
""",
}


def experiment_env(folder: Path, names: tuple[str, ...]) -> dict[str, str] | None:
    """The controller's environment with the named experiments' sitecustomize on PYTHONPATH (None: none)."""
    if not names:
        return None
    hook = folder / "experiments"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text("\n".join(HOOKS[n] for n in names))
    kept = os.environ.get("PYTHONPATH")  # a worktree's own code stays first after the hook
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), *([kept] if kept else [])])}


def timed(argv: list[str], budget: float | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a command as a user does: its wall time, exit code, JSON output, and its own peak RSS and CPU
    (wait4 on its process; with py-spy wrapping it, py-spy's and the command's together)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    outputs: dict[str, str] = {}

    def drain(name: str, stream: Any) -> None:
        outputs[name] = stream.read()

    readers = [threading.Thread(target=drain, args=(n, s)) for n, s in (("out", proc.stdout), ("err", proc.stderr))]
    for r in readers:
        r.start()
    stopper = threading.Timer(budget, proc.send_signal, (signal.SIGINT,)) if budget else None
    if stopper:
        stopper.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if stopper:
        stopper.cancel()
    for r in readers:
        r.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    out = outputs.get("out", "")
    try:
        result = json.loads(out) if out.strip().startswith("{") else None
    except ValueError:
        result = None
    return {"wall_s": wall, "rc": proc.returncode, "result": result, "stderr": outputs.get("err", "")[-3000:],
            "usage": usage}  # fmt: skip


def _nornir(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "nornir"), *args]


def _cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True)
class Options:
    scale: float  # of the simulator's latencies
    budget: float | None  # seconds any one push may take
    keep: Path | None  # keep the event logs beside this path
    role: str | None  # push only this role's switches (a small fleet of the same fabric)
    profile: Path | None  # record each run with py-spy (raw stacks, only the thread holding the GIL) here
    push: bool  # False: the dry run alone
    json_output: bool  # run push with --json (every diff printed as JSON) instead of its table
    validate: bool  # time `nornir validate` too (after the push, or alone)
    platform: str  # the data planes' switches: cumulus (SSH) or eos (eAPI over HTTPS)
    experiments: tuple[str, ...]  # A/B experiments on the controller (HOOKS)
    max_capacity_loss: str | None = None  # push --max-capacity-loss (a capacity budget, "12.5%")
    drain: str | None = None  # push --drain MODE
    example: str = "three-tier-32k"  # the fabric pushed (FLEETS)
    sim_shards: int = 1  # simulator processes


def _wrap(argv: list[str], opts: Options, name: str) -> list[str]:
    if opts.profile is None:
        return argv
    opts.profile.mkdir(parents=True, exist_ok=True)
    spy = str(Path(sys.executable).parent / "py-spy")
    return [spy, "record", "--format", "raw", "--rate", "100", "--gil", "--nonblocking", "--subprocesses",
            "-o", str(opts.profile / f"{name}.txt"), "--", *argv]  # fmt: skip


def measure(fraction: Fraction, opts: Options) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="fleet-sim-"))
    try:
        intent = folder / "fabric.yml"
        intent.write_text(intent_text(fraction, opts.platform, opts.example))
        plan = build_plan(load_intent(str(intent)))
        devices = list(plan.devices())
        switches = [{"name": d.name, "address": str(ipaddress.IPv4Address(d.mgmt_ip)), "platform": d.platform}
                    for d in devices]  # fmt: skip
        domain_of = {d.name: (d.plane, d.failure_domain or d.name) for d in devices}
        for p in plan.planes.values():
            for fd in p.failure_domains:
                for n in fd.devices:
                    domain_of[n] = (p.name, fd.name)
        if opts.role:
            switches = [s for s, d in zip(switches, devices, strict=True) if d.role == opts.role]
        sim: Simulator | ShardedSimulator
        if opts.sim_shards > 1:
            sim = ShardedSimulator(folder, switches, opts.scale, trace=opts.keep is not None, shards=opts.sim_shards)
        else:
            sim = Simulator(folder, switches, opts.scale, trace=opts.keep is not None)
        # As a person runs it (a table, diffs not printed) unless --json-output; what each switch became is
        # read from the push's audit trail, one file per run.
        common = [str(intent), "--known-hosts", str(sim.known_hosts), "--no-diff", "--wait", "0",
                  "--confirm-timeout", "600"] + (["--json"] if opts.json_output else [])  # fmt: skip
        common += ["--role", opts.role] if opts.role else []
        common += ["--max-capacity-loss", opts.max_capacity_loss] if opts.max_capacity_loss else []
        # The simulator routes nothing and carries no traffic: a wait on its routes would never end.
        common += ["--drain", opts.drain, "--drain-timeout", "0"] if opts.drain else []
        if sim.ca_file.exists():  # the EOS switches' eAPI certificates chain to the run's CA
            common += ["--ca-file", str(sim.ca_file)]
        vcommon = [str(intent), "--known-hosts", str(sim.known_hosts), "--format", "json"]
        vcommon += ["--ca-file", str(sim.ca_file)] if sim.ca_file.exists() else []
        vcommon += ["--role", opts.role] if opts.role else []
        tag = f"{fraction.numerator}-{fraction.denominator}"
        trail = {name: folder / f"audit.{name}.jsonl" for name in ("dry", "push", "again")}
        phases = [("dry", _nornir("push", "--dry-run", "--audit-log", str(trail["dry"]), *common))]
        if opts.push:
            phases += [(name, _nornir("push", "--audit-log", str(trail[name]), *common)) for name in ("push", "again")]
        if opts.validate:
            phases += [("validate", _nornir("validate", *vcommon))]
        runs: dict[str, dict[str, Any]] = {}
        env = experiment_env(folder, opts.experiments)
        try:
            if any(s["platform"] == "cumulus" for s in switches):
                runs["floor"] = floor(sim, folder, [s["address"] for s in switches if s["platform"] == "cumulus"])
            for name, command in phases:
                before = sim.snapshot()
                runs[name] = timed(
                    _wrap(command, opts, f"{name}.{tag}") if name != "again" else command, opts.budget, env
                )
                runs[name]["sim"] = _delta(before, sim.snapshot())
                if name in trail:
                    runs[name]["json"], runs[name]["result"] = runs[name]["result"], _from_trail(trail[name])
        finally:
            events, _ = sim.stop()
        if opts.keep is not None:
            shutil.copy(folder / "events.jsonl", opts.keep.with_suffix(f".{tag}.events.jsonl"))
            if sim.trace is not None and sim.trace.exists():  # every command, for bench/profiling/waves.py
                shutil.copy(sim.trace, opts.keep.with_suffix(f".{tag}.trace.jsonl"))
        proof = prove(plan, events, trail["push"], opts) if opts.push else None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    row = _row(fraction, opts, len(switches), runs=runs, events=events, domain_of=domain_of)
    if proof is not None:
        row.update(proof)
    return row


def prove(plan: Any, events: list[dict[str, Any]], trail: Path, opts: Options) -> dict[str, Any]:
    """The capacity budget, proved from the logs alone by gpufabric.push.proof (not by the planner): every
    largest set of switches out of service at once in the simulator's log (drained, or committed and not
    yet confirmed), and every batch the push's audit trail records."""
    budget = parse_budget(opts.max_capacity_loss) if opts.max_capacity_loss else 0.0
    judge = Judge(plan, budget)
    moments = [judge.judge(o) for o in from_events(events)]
    records = [r for _, r in audit_read(trail) if r] if trail.exists() else []
    recorded = [judge.judge(o) for o in from_trail(records)]
    problems = [f"{v.outage.label}: {p}" for v in moments + recorded for p in v.problems]
    problems += [f"{v.outage.label}: {p}" for v in recorded for p in claims_problems(v)]
    return {
        "budget": budget if opts.max_capacity_loss else None,
        "proof_moments": len(moments),
        "proof_batches": len(recorded),
        "proof_worst_ecmp_share": round(min((v.worst_share for v in moments), default=1.0), 4),
        "proof_worst_untolerated_share": round(
            min((v.worst_share for v in moments if not v.tolerated), default=1.0), 4
        ),
        "proof_max_rails_lost": max((v.rails_lost for v in moments), default=0),
        "proof_min_reach": round(min((v.reach_share for v in moments), default=1.0), 4),
        "proof_min_untolerated_reach": round(min((v.reach_share for v in moments if not v.tolerated), default=1.0), 4),
        "proof_tolerated": sum(bool(v.tolerated) for v in moments),
        "proof_problems": problems[:20],
        "budget_held": not problems if opts.max_capacity_loss and (moments or recorded) else None,
        "drained": len({e["switch"] for e in events if e["event"] == "drain"}),
    }


def floor(sim: Simulator | ShardedSimulator, folder: Path, addresses: list[str]) -> dict[str, Any]:
    """What the machine allows: one SSH login and one command (`hostname`, the exec channel's latency
    alone) to every switch, through the drivers' own transport, from as many threads as a read of the
    fleet uses (bench/ssh_floor.py, a fresh process), in this namespace against this simulator."""
    listed = folder / "addresses"
    listed.write_text("\n".join(addresses) + "\n")
    argv = [sys.executable, str(BENCH / "ssh_floor.py"), "--addresses", str(listed), "--known-hosts",
            str(sim.known_hosts), "--workers", str(READ_WORKERS)]  # fmt: skip
    before = sim.snapshot()
    run = timed(argv)
    run["sim"] = _delta(before, sim.snapshot())
    if run["rc"] != 0:
        raise SystemExit(f"the SSH floor run failed: {run['stderr']}")
    return run


def _from_trail(path: Path) -> dict[str, Any]:
    """What a push did, from its audit trail: each switch's status, and the batches that went out."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    # A batch's own record (its cost) aside, and the steps around a change (drains, waits, the schedulers),
    # which name no batch: each switch's record says how its change ended.
    records = [r for r in records if r.get("status") != "batch" and "batch" in r]
    went_out = sorted({r["batch"] for r in records if r["batch"] and r["status"] != "skipped"})
    platforms: dict[int, set[str]] = {}
    for r in records:
        if r["batch"] in went_out:
            platforms.setdefault(r["batch"], set()).add(r["platform"])
    switches: dict[int, list[str]] = {}
    for r in records:
        if r["batch"] in went_out and r["switch"]:
            switches.setdefault(r["batch"], []).append(r["switch"])
    return {
        "batches": went_out,
        "wave_switches": [switches.get(b, []) for b in went_out],
        "platforms": [sorted(platforms[b]) for b in went_out],  # each wave's platforms
        "devices": [{"device": r["switch"], "status": r["status"], "reason": r.get("reason", "")} for r in records],
    }


def _delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The simulator's work during one phase: CPU seconds, logins, commands (and by kind)."""
    kinds = {k: n - before["kinds"].get(k, 0) for k, n in after["kinds"].items() if n > before["kinds"].get(k, 0)}
    return {
        "cpu_s": (after["user_s"] + after["sys_s"]) - (before["user_s"] + before["sys_s"]),
        "logins": after["logins"] - before["logins"],
        "commands": after["commands"] - before["commands"],
        "kinds": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
    }


def spread(events: list[dict[str, Any]], wave_bounds: list[float]) -> dict[str, Any]:
    """How the waves spread, from the simulator's log: each wave from the last one's last switch back in
    service (the first: from its first switch out, a drain or a commit) to its own last back, beside that
    wave's bound; and the time between waves (the next wave's steps before its first switch goes out: the
    drain command itself, the candidate's upload and diff)."""
    spans: list[tuple[float, float]] = []
    why: dict[str, set[str]] = {}
    down: set[str] = set()
    start = 0.0
    for ev in sorted(events, key=lambda e: e["time"]):
        switch, kind = ev["switch"], ev["event"]
        if kind in ("drain", "commit"):
            if not down:
                start = ev["time"]
            why.setdefault(switch, set()).add(kind)
            down.add(switch)
        elif kind in ("undrained", "confirm", "revert", "abort") and switch in down:
            why[switch].discard("drain" if kind == "undrained" else "commit")
            if not why[switch]:
                down.discard(switch)
                if not down:
                    spans.append((start, ev["time"]))
    if len(spans) != len(wave_bounds) or not spans:
        return {"wave_spans": len(spans)}
    ends = [spans[0][0]] + [end for _, end in spans]  # a wave lasts from the last one's end to its own
    beyond = sorted(b - a - bound for (a, b), bound in zip(itertools.pairwise(ends), wave_bounds, strict=True))
    gaps = sorted(b[0] - a[1] for a, b in itertools.pairwise(spans))

    def pick(values: list[float], q: float) -> float:
        return round(values[min(len(values) - 1, int(q * len(values)))], 2) if values else 0.0

    return {
        "wave_spans": len(spans),
        "wave_beyond_bound_s": [pick(beyond, 0), pick(beyond, 0.5), pick(beyond, 1.0)],  # min, median, max
        "between_waves_s": [pick(gaps, 0), pick(gaps, 0.5), pick(gaps, 1.0)],
    }


def _row(
    fraction: Fraction,
    opts: Options,
    n: int,
    *,
    runs: dict[str, dict[str, Any]],
    events: list[dict[str, Any]],
    domain_of: dict[str, tuple[str, str]],
) -> dict[str, Any]:
    for name, run in runs.items():
        if run["rc"] not in (0, None) and name != "validate":  # validate finds what no simulated switch has
            print(f"{name} exited {run['rc']}: {run['stderr']}", file=sys.stderr)
            devices = (run.get("result") or {}).get("devices", [])
            failed = [d for d in devices if d["status"] in ("failed", "rolled back")]
            for d in failed[:5]:  # the first switches that failed, in the words of the audit trail
                print(f"  {d['device']}: {d['status']}: {d.get('reason', '')}", file=sys.stderr)
    dry, push, again = runs["dry"], runs.get("push"), runs.get("again")
    result = (push or {}).get("result") or {}
    waves = len(result.get("batches", []))
    again_changed = [
        d["device"] for d in ((again or {}).get("result") or {}).get("devices", []) if d["status"] != "unchanged"
    ]
    scale = opts.scale
    # Each wave takes at least its slowest switch's commit-check-confirm, by that switch's platform.
    per_wave = max(latency.commit_check_confirm(SETTLE, scale, p) for p in {"cumulus", opts.platform})
    # A wave any of whose switches was drained takes the drain and the undrain too (bench/fleet_sim/drain.py).
    drained = {e["switch"] for e in events if e["event"] == "drain"}
    wave_bounds = [
        max(latency.commit_check_confirm(SETTLE, scale, p) for p in ps)
        + (sim_drain.drain_and_undrain(scale) if set(names) & drained else 0.0)
        for ps, names in zip(result.get("platforms", []), result.get("wave_switches", []), strict=True)
    ]
    bound = sum(wave_bounds)
    row: dict[str, Any] = {
        "fraction": str(fraction),
        "switches": n,
        "latency_scale": scale,
        "dry_run_s": round(dry["wall_s"], 2),
        "dry_run_rc": dry["rc"],
        "dry_run_cpu_s": round(_cpu(dry["usage"]), 2),
        "dry_run_peak_rss_mib": round(dry["usage"].ru_maxrss / 1024, 1),
        "dry_run_simulator_cpu_s": round(dry["sim"]["cpu_s"], 2),
        "dry_run_commands_per_switch": round(dry["sim"]["commands"] / n, 1),
        "wall_s": None, "push_rc": None, "changed": None, "waves": None, "lower_bound_s": None, "ratio": None,
        "overhead_per_wave_s": None, "second_push_s": None, "second_push_not_unchanged": None, "peak_rss_mib": None,
        "controller_cpu_s": None, "simulator_cpu_s": None, "push_commands_per_switch": None,
        "max_domains_down_per_plane": None, "commits": None, "reverts": None, "validate_s": None, "validate_rc": None,
        "per_wave_bound_s": round(per_wave, 3),
        "drain_bound_s": round(sim_drain.drain_and_undrain(scale), 3),
        "drained_waves": sum(bool(set(names) & drained) for names in result.get("wave_switches", [])),
    }  # fmt: skip
    if push is not None and again is not None:
        row.update({
            "wall_s": round(push["wall_s"], 2),
            "push_rc": push["rc"],
            "changed": sum(d["status"] == "changed" for d in result.get("devices", [])),
            "waves": waves,
            "lower_bound_s": round(bound, 2),
            "ratio": round(push["wall_s"] / bound, 2) if bound else None,
            # What each wave costs beyond the bound, the preview of every switch (as long as the dry run) aside.
            "overhead_per_wave_s": round((push["wall_s"] - dry["wall_s"] - bound) / waves, 2) if waves else None,
            "second_push_s": round(again["wall_s"], 2),
            "second_push_not_unchanged": len(again_changed),
            "peak_rss_mib": round(push["usage"].ru_maxrss / 1024, 1),
            "controller_cpu_s": round(_cpu(push["usage"]), 2),
            "simulator_cpu_s": round(push["sim"]["cpu_s"], 2),
            "push_commands_per_switch": round(push["sim"]["commands"] / n, 1),
            "push_command_kinds": push["sim"]["kinds"],
            "max_domains_down_per_plane": max_domains_down(events, domain_of),
            **spread(events, wave_bounds),
            "commits": sum(e["event"] == "commit" for e in events),
            "reverts": sum(e["event"] == "revert" for e in events),
        })  # fmt: skip
    printed = (push or {}).get("json") or {}
    staged = sorted(d["seconds"] for d in printed.get("devices", []) if d.get("status") == "changed")
    if staged:  # --json-output: how long each switch's own stage took (diff, commit, checks), the median
        row["stage_median_s"] = round(staged[len(staged) // 2], 2)
    if "validate" in runs:
        val = runs["validate"]
        row["validate_s"], row["validate_rc"] = round(val["wall_s"], 2), val["rc"]
        row["validate_cpu_s"] = round(_cpu(val["usage"]), 2)
        row["validate_peak_rss_mib"] = round(val["usage"].ru_maxrss / 1024, 1)
        row["validate_simulator_cpu_s"] = round(val["sim"]["cpu_s"], 2)
        row["validate_commands_per_switch"] = round(val["sim"]["commands"] / n, 1)
    if "floor" in runs:  # one login and one command to every switch: the least any read of the fleet costs
        fl = runs["floor"]
        row["floor_s"] = round(fl["wall_s"], 2)
        row["floor_cpu_s"] = round(_cpu(fl["usage"]), 2)
        row["floor_simulator_cpu_s"] = round(fl["sim"]["cpu_s"], 2)
    # CPU per switch, the controller's and the simulator's (ms): what the two cores must find per switch.
    row["dry_run_cpu_ms_per_switch"] = round(1000 * row["dry_run_cpu_s"] / n, 1)
    row["dry_run_simulator_cpu_ms_per_switch"] = round(1000 * row["dry_run_simulator_cpu_s"] / n, 1)
    if "validate_cpu_s" in row:
        row["validate_cpu_ms_per_switch"] = round(1000 * row["validate_cpu_s"] / n, 1)
        row["validate_simulator_cpu_ms_per_switch"] = round(1000 * row["validate_simulator_cpu_s"] / n, 1)
    return row


COLUMNS = [
    ("fraction", "scale", "{}"),
    ("switches", "switches", "{}"),
    ("dry_run_s", "dry-run s", "{:.1f}"),
    ("wall_s", "push s", "{:.1f}"),
    ("waves", "waves", "{}"),
    ("lower_bound_s", "bound s", "{:.1f}"),
    ("ratio", "ratio", "{}"),
    ("overhead_per_wave_s", "over/wave", "{:.2f}"),
    ("second_push_s", "again s", "{:.1f}"),
    ("peak_rss_mib", "ctl MiB", "{:.0f}"),
    ("controller_cpu_s", "ctl cpu s", "{:.1f}"),
    ("simulator_cpu_s", "sim cpu s", "{:.1f}"),
    ("max_domains_down_per_plane", "max down", "{}"),
    ("dry_run_cpu_s", "dry cpu s", "{:.1f}"),
    ("validate_s", "validate s", "{:.1f}"),
]


# The reads of every switch (`--dry-run-only`, `--validate`): wall time beside the floor, and the CPU each
# side spends per switch (ms), which with the machine's cores bounds the wall time at any size.
READ_COLUMNS = [
    ("fraction", "scale", "{}"),
    ("switches", "switches", "{}"),
    ("floor_s", "floor s", "{:.1f}"),
    ("dry_run_s", "dry-run s", "{:.1f}"),
    ("dry_run_cpu_ms_per_switch", "ctl ms/sw", "{:.1f}"),
    ("dry_run_simulator_cpu_ms_per_switch", "sim ms/sw", "{:.1f}"),
    ("dry_run_peak_rss_mib", "ctl MiB", "{:.0f}"),
    ("validate_s", "validate s", "{:.1f}"),
    ("validate_cpu_ms_per_switch", "ctl ms/sw", "{:.1f}"),
    ("validate_simulator_cpu_ms_per_switch", "sim ms/sw", "{:.1f}"),
    ("validate_peak_rss_mib", "ctl MiB", "{:.0f}"),
]


def _print_columns(rows: list[dict[str, Any]], columns: list[tuple[str, str, str]]) -> None:
    widths = [max(len(title), 9) for _, title, _ in columns]
    print(" ".join(title.rjust(w) for (_, title, _), w in zip(columns, widths, strict=True)))
    for row in rows:
        cells = [fmt.format(row[key]) if row.get(key) is not None else "-" for key, _, fmt in columns]
        print(" ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)))


def print_table(rows: list[dict[str, Any]]) -> None:
    if all(row["wall_s"] is None for row in rows):  # no push: the reads alone
        _print_columns(rows, READ_COLUMNS)
        print("(seconds; floor = one SSH login and one command to every switch, "
              f"{READ_WORKERS} at a time; ms/sw = CPU milliseconds per switch, the controller's (ctl, its "
              "whole run: start, plan and render included) and the simulator's (sim); MiB = the controller's "
              "peak RSS)")  # fmt: skip
        for row in rows:
            said = [f"dry run: {verdict(row['dry_run_s'], row['dry_run_cpu_s'], row['dry_run_simulator_cpu_s'])}"]
            if row.get("validate_s"):
                said.append(
                    f"validate: {verdict(row['validate_s'], row['validate_cpu_s'], row['validate_simulator_cpu_s'])}"
                )
            print(f"{row['fraction']}: " + "; ".join(said))
        return
    _print_columns(rows, COLUMNS)
    print("(seconds; ctl = the `nornir push` process, its CPU for the push alone; max down = most failure domains "
          "of one plane unconfirmed at once)")  # fmt: skip
    for row in rows:
        if row.get("lower_bound_s") is not None:
            print(f"{row['fraction']}: bound = {row['waves']} waves x {row['per_wave_bound_s']:.2f} s (one switch's "
                  "commit-check-confirm: replace, diff, apply, confirm, four exec channels and the checks' "
                  f"{SETTLE:g} s settle) + {row['drained_waves']} drained waves x {row['drain_bound_s']:.2f} s (the "
                  "drain and the undrain: each NVUE's confirm status, detach, `nv set` and apply, four exec "
                  f"channels) = {row['lower_bound_s']:.1f} s at latency scale {row['latency_scale']:g}, by the "
                  "simulator's latencies; the reading of every diff before the first wave is not in it")  # fmt: skip
    for row in rows:
        if row.get("proof_moments") is not None:
            verdict_text = {True: "held", False: "NOT held", None: "not judged (no budget, or nothing went out)"}[
                row.get("budget_held")
            ]
            budget = f"{row['budget']:.1%}" if row.get("budget") is not None else "none"
            print(f"{row['fraction']}: capacity budget {budget}: {verdict_text}, proved from the logs (gpufabric.push."
                  f"proof): {row['proof_moments']} largest sets out of service at once in the simulator's log, "
                  f"{row['proof_batches']} batches in the audit trail; worst ECMP group kept "
                  f"{row['proof_worst_untolerated_share']:.1%} ({row['proof_worst_ecmp_share']:.1%} where one "
                  f"failure domain alone, which the design tolerates, costs more: {row['proof_tolerated']} sets), "
                  f"at most {row['proof_max_rails_lost']} rail(s) of a server at once, ports in service >= "
                  f"{row['proof_min_untolerated_reach']:.1%} ({row['proof_min_reach']:.1%} where one domain alone "
                  f"costs more); {row['drained']} switches drained")  # fmt: skip
            if row.get("wave_beyond_bound_s"):
                low, mid, high = row["wave_beyond_bound_s"]
                glow, gmid, ghigh = row["between_waves_s"]
                print(f"{row['fraction']}: spread: each wave (from the last one's end to its own) beyond its bound "
                      f"min {low:.1f} s, median {mid:.1f} s, max {high:.1f} s; between waves min {glow:.1f} s, "
                      f"median {gmid:.1f} s, max {ghigh:.1f} s")  # fmt: skip
            for problem in row["proof_problems"]:
                print(f"  {problem}")
        phases = [("dry run", row["dry_run_s"], row["dry_run_cpu_s"], row["dry_run_simulator_cpu_s"]),
                  ("push", row["wall_s"], row["controller_cpu_s"], row["simulator_cpu_s"])]  # fmt: skip
        said = [f"{name}: {verdict(wall, ctl, sim)}" for name, wall, ctl, sim in phases if wall]
        print(f"{row['fraction']}: " + "; ".join(said))


def verdict(wall: float, controller_cpu: float, simulator_cpu: float) -> str:
    """What bounded a run, from the CPU each side used over its wall time (one core is 1.0)."""
    ctl, sim = controller_cpu / wall, simulator_cpu / wall
    shares = f"controller {ctl:.2f} cores, simulator {sim:.2f}"
    if ctl + sim >= 0.8 * (os.cpu_count() or 1):
        return f"the machine's CPU, both sides together ({shares} of {os.cpu_count()})"
    if sim >= 0.8:
        return f"the simulator's CPU ({shares}): the figure says little of the controller"
    if ctl >= 0.8:
        return f"the controller's CPU ({shares})"
    return f"waiting on the switches and the settle ({shares})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", default="1", help="fractions of the 32k fabric, comma-separated (1/8,1/4,1/2,1)")
    parser.add_argument("--latency-scale", type=float, default=1.0, help="multiply the simulator's latencies")
    parser.add_argument("--push-budget", type=float, default=None, help="stop any one push after this many seconds")
    parser.add_argument("--json", type=Path, help="write the rows here as JSON")
    parser.add_argument("--keep-events", type=Path, help="keep each run's event log and command trace beside this path")
    parser.add_argument("--role", choices=["leaf", "spine", "superspine", "mgmt"], help="only this role's switches")
    parser.add_argument("--profile", type=Path, help="record each push with py-spy into this folder")
    parser.add_argument("--dry-run-only", action="store_true", help="time the dry run alone (every switch's diff)")
    parser.add_argument("--validate", action="store_true", help="time `nornir validate` too")
    parser.add_argument("--json-output", action="store_true", help="run push with --json instead of its table")
    parser.add_argument("--platform", choices=["cumulus", "eos"], default="cumulus", help="the data planes' switches")
    parser.add_argument("--max-capacity-loss", metavar="PCT", help="push with this capacity budget (12.5%%)")
    parser.add_argument(
        "--drain",
        choices=["auto", "always", "never"],
        help="push --drain MODE (auto, always, never)",
    )
    parser.add_argument("--example", choices=sorted(FLEETS), default="three-tier-32k", help="the fabric pushed")
    parser.add_argument("--sim-shards", type=int, default=1, help="simulator processes, each a slice of the switches")
    parser.add_argument("--experiment", default="", help=f"A/B on the controller, comma-separated: {', '.join(HOOKS)}")
    args = parser.parse_args()
    opts = Options(
        scale=args.latency_scale,
        budget=args.push_budget,
        keep=args.keep_events,
        role=args.role,
        profile=args.profile,
        push=not args.dry_run_only,
        json_output=args.json_output,
        validate=args.validate,
        experiments=tuple(e for e in args.experiment.split(",") if e),
        platform=args.platform,
        max_capacity_loss=args.max_capacity_loss,
        drain=args.drain,
        example=args.example,
        sim_shards=args.sim_shards,
    )
    if args.sim_shards < 1 or (args.sim_shards > 1 and args.platform == "eos"):
        parser.error("--sim-shards takes 1 or more, and 1 with --platform eos (one CA for the eAPI certificates)")
    fractions = [Fraction(s.strip()) for s in args.scale.split(",")]
    unknown = [e for e in args.experiment.split(",") if e and e not in HOOKS]
    if unknown:
        parser.error(f"no experiment named {', '.join(unknown)} (known: {', '.join(HOOKS)})")
    _enter_namespace()
    _raise_file_limit()
    os.environ.setdefault(PASSWORD_ENV, PLACEHOLDER_SECRETS[PASSWORD_ENV])
    rows = []
    for fraction in fractions:
        print(f"measuring {fraction} of the fabric ...", file=sys.stderr)
        rows.append(measure(fraction, opts))
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps(rows if len(rows) > 1 else rows[0], indent=2) + "\n")


if __name__ == "__main__":
    main()
