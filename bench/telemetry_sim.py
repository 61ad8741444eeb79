"""A simulated fleet in a network namespace of its own, for the telemetry exporter: the fleet
simulator (bench/fleet_sim, a test double answering the Cumulus driver's reads over SSH) on every
switch's management address, and commands run inside the same namespace (exporter shards, a real
Prometheus). Root only (`ip netns`); everything started here is stopped by PID and the namespace
deleted on exit.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import IO, Any

from bench.fabrics import PLACEHOLDER_SECRETS
from bench.rollout_scale import PASSWORD_ENV, SUBNET, intent_text
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from gpufabric.plan.model import Plan

BENCH = Path(__file__).resolve().parent


@dataclass
class SimFleet:
    netns: str
    folder: Path
    intent: Path
    plan: Plan
    known_hosts: Path
    procs: list[subprocess.Popen[Any]] = field(default_factory=list)
    logs: list[IO[str]] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        bin_dir = str(Path(sys.executable).parent)
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        for name, value in PLACEHOLDER_SECRETS.items():  # the simulated fleet's, unless the caller set its own
            env.setdefault(name, value)
        return env

    def start(self, argv: list[str], log: str) -> subprocess.Popen[Any]:
        """A command inside the namespace, its output to folder/log."""
        out = open(self.folder / log, "w")  # noqa: SIM115 (closed in stop)
        self.logs.append(out)
        proc = subprocess.Popen(["ip", "netns", "exec", self.netns, *argv], stdout=out, stderr=out, env=self.env())
        self.procs.append(proc)
        return proc

    def run(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["ip", "netns", "exec", self.netns, *argv], check=False, capture_output=True,
                              text=True, env=self.env(), **kwargs)  # fmt: skip

    def serve(self, shard: str, listen: str, workers: int = 16) -> subprocess.Popen[Any]:
        argv = ["gpufabric", "telemetry", "serve", str(self.intent), "--known-hosts", str(self.known_hosts),
                "--shard", shard, "--listen", listen, "--workers", str(workers)]  # fmt: skip
        return self.start(argv, f"exporter-{shard.replace('/', '-')}.log")

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in reversed(self.procs):
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        for log in self.logs:
            log.close()


def switches_of(plan: Plan) -> list[dict[str, str]]:
    return [{"name": d.name, "address": str(ipaddress.IPv4Address(d.mgmt_ip)), "platform": d.platform}
            for d in plan.devices()]  # fmt: skip


@contextmanager
def sim_fleet(fraction: Fraction, latency_scale: float = 1.0, folder: Path | None = None) -> Iterator[SimFleet]:
    """The 32k example at `fraction` of its GPU nodes (plus rollout_scale's OOB plane, which gives every
    switch an address), simulated in a fresh namespace whose loopback holds the OOB subnet."""
    where = folder or Path(tempfile.mkdtemp(prefix="telemetry-sim-"))
    netns = f"gf-telemetry-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", netns], check=True)
    fleet: SimFleet | None = None
    try:
        subprocess.run(["ip", "-n", netns, "link", "set", "lo", "up"], check=True)
        subprocess.run(["ip", "-n", netns, "addr", "add", f"{SUBNET.network_address + 1}/{SUBNET.prefixlen}",
                        "dev", "lo"], check=True)  # fmt: skip
        intent = where / "fabric.yml"
        intent.write_text(intent_text(fraction))
        fleet = SimFleet(netns, where, intent, build_plan(load_intent(str(intent))), where / "known_hosts")
        spec = where / "switches.json"
        spec.write_text(json.dumps(switches_of(fleet.plan)))
        sim_env = {**fleet.env(), "PYTHONPATH": str(BENCH.parent)}
        sim = subprocess.Popen(
            ["ip", "netns", "exec", netns, sys.executable, "-m", "bench.fleet_sim", "--switches", str(spec),
             "--username", "cumulus", "--password-env", PASSWORD_ENV, "--known-hosts", str(fleet.known_hosts),
             "--events", str(where / "events.jsonl"), "--stats", str(where / "sim-stats.json"),
             "--latency-scale", str(latency_scale), "--tls-dir", str(where)],
            stdout=subprocess.PIPE, text=True, env=sim_env,
        )  # fmt: skip
        fleet.procs.append(sim)
        assert sim.stdout is not None
        line = sim.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError(f"the simulator did not start: {line!r}")
        yield fleet
    finally:
        if fleet is not None:
            fleet.stop()
        subprocess.run(["ip", "netns", "delete", netns], check=False)
        if folder is None:  # ours: the intent, keys and logs go with the run
            shutil.rmtree(where, ignore_errors=True)
