"""The remediation loop end to end in the lab, every part real: the lab's switches (FRR namespaces, the
compute plane pushed), `gpufabric telemetry serve` reading them over SSH, Debian's Prometheus scraping it
and evaluating `gpufabric telemetry rules`, Debian's Alertmanager configured by `gpufabric telemetry
alertmanager`, `gpufabric remediate serve`, and a real slurmctld with one slurmd per GPU host.

The fabric is made for the test: one scalable unit of four GPU servers whose rail leaves have 800G cages
split 2x400G, so one breakout cable serves two servers (gpu01 and gpu02 behind cmp-su1-leaf1 cage swp1).
The servers are the lab's stubs (`lab up --no-hosts`): the far end of each server port is a veth in the
leaf's namespace, which is what the chaos takes down (the leaf's port loses its carrier, as when a cable
is pulled). The slurmd daemons run in the Slurm harness's namespaces (tests/slurm_cluster.py), named
after the lab's GPU hosts, not inside the lab's host containers (those have no Slurm installed).

Settings made for the test, short but not seconds: scrape every 10 s, rules evaluated every 5 s with
`for: 30s`, Alertmanager's group_wait 5 s, the loop's hold-down 60 s. Figures measured: cut -> drain
(bound: `for:` + 30 s) and restore -> resume (the hold-down plus Alertmanager's group_interval, 30 s,
and the loop's look every 6 s). Then the blast radius on the same loop: every link of a spine cut drains
nobody; a cut of more of the unit's links than the unit cap allows drains up to the cap, and the rest is
capped for a person (the receiver's trail and Alertmanager, which gets a GpufabricRemediationCapped
alert from the receiver). Root, under the lab lock; GPUFABRIC_LOOP_FIGURES=<file> writes the figures.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import BIN, run
from lab_slot import moved, ns, up_args
from slurm_cluster import SlurmCluster, free_port, missing, slurm_cluster

from tests.alertmanager_run import alertmanager_command

pytestmark = [
    pytest.mark.slow,
    pytest.mark.own_lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root (network namespaces)"),
    pytest.mark.skipif(bool(missing()), reason=f"Slurm's daemons are missing: {missing()}"),
]

FOR = 30  # the rules' `for:`, seconds
HOLD_DOWN = 60  # the loop's hold-down, seconds
MARGIN = 30  # Done means: drained within `for:` plus this

INTENT = """\
fabric:
  name: loop
  description: "the remediation loop's lab: one unit whose servers share breakout cables"
server_groups:
  - name: gpu
    kind: gpu
    count: 4
    naming: "gpu{index:02d}"
    gpus: 8
    gpu_model: H100-SXM5
    nics:
      compute: {speed: 400G, interfaces: [eth1, eth2]}
      oob: {speed: 1G, interfaces: [eth0]}
planes:
  compute:
    topology: rail-optimized
    tiers: 2
    prefix: cmp
    unit_nodes: 4
    oversubscription: "1:1"
    mtu: 9216
    host_mtu: 9000
    switches:
      leaf: {platform: frr, model: lab-800g-32, ports: 32, port_speed: 800G, downlink_speed: 400G}
      spine: {platform: frr, model: lab-800g-32, ports: 32, port_speed: 800G, count: 2}
    routing: {addressing: unnumbered, asn_pool: 4200000000-4200000999, ecmp: 64}
    addressing: {loopbacks: 10.0.0.0/24, hosts: 10.10.0.0/16}
  oob:
    prefix: oob
    subnet: 172.20.0.0/24
    mtu: 1500
    switches:
      mgmt: {platform: frr, model: lab-1g-48, ports: 48, port_speed: 1G}
credentials:
  switches:
    username: admin
    password: {env: GPUFABRIC_SWITCH_PASSWORD}
  hosts:
    username: root
    ssh_key: {env: GPUFABRIC_HOST_SSH_KEY}
  salt_key: {env: GPUFABRIC_SALT_KEY}
management:
  ntp_servers: [172.20.0.1]
  domain: lab.gpufabric.test
  timezone: Etc/UTC
"""
NODES = ["gpu01", "gpu02", "gpu03", "gpu04"]
LEAF = "cmp-su1-leaf1"
# The breakout cable in LEAF's cage swp1: its two legs, the servers behind them and the cabling plan's labels.
BREAKOUT = {"swp1s0": ("gpu01", "cmp-000005"), "swp1s1": ("gpu02", "cmp-000007")}
PERSON = "alice: DIMM errors, ticket 4711"


class Loop:
    """The processes of the loop, started and stopped by this test (each by its PID)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (self.folder / f"{name}.log").open("wb")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()

    def logs(self) -> str:
        return "".join(f"\n--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in self.folder.glob("*.log"))


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return bytes(answer.read())
    except OSError:
        return None


def _ns(switch: str, *args: str) -> None:
    subprocess.run(["ip", "-n", ns(switch), "link", "set", *args], check=True, capture_output=True)


def _stub_far_end(state: Path, leaf: str, port: str) -> str:
    """The veth at the server's end of a leaf's server port, as `lab up --no-hosts` made it."""
    from gpufabric.fleet.lab.topology import topology
    from gpufabric.intent import load_intent

    topo = topology(load_intent(str(state.parent / "loop.yml")))
    return next(s.far_end for s in topo.stubs if s.node == leaf and s.port == port)


def _trail(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _await(what: str, ready: Callable[[], bool], loop: Loop, timeout: float = 300.0) -> float:
    """Seconds until `ready` holds (polled each second); fails with the loop's logs at the deadline."""
    started = time.monotonic()
    while not ready():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"{what}: not within {timeout:.0f} s{loop.logs()}")
        time.sleep(1)
    return time.monotonic() - started


def _reason(cluster: SlurmCluster, node: str) -> str:
    return str(cluster.node(node).get("reason", ""))


def _out(cluster: SlurmCluster) -> dict[str, str]:
    return {n: _reason(cluster, n) for n in NODES if cluster.drained(n)}


def test_the_loop_end_to_end_in_the_lab(tmp_path: Path) -> None:
    found = [Path(p) / "prometheus" for p in os.environ.get("PATH", "").split(os.pathsep)]
    found.append(Path(__file__).resolve().parents[2] / ".cache/prometheus/usr/bin/prometheus")
    prometheus = next((p for p in found if p.exists()), None)
    if prometheus is None:
        pytest.skip("prometheus is missing: scripts/test.sh unpacks Debian's package into .cache/prometheus")
    intent = tmp_path / "loop.yml"
    intent.write_text(yaml.safe_dump(moved(yaml.safe_load(INTENT)), sort_keys=False))
    state = tmp_path / "state"
    figures: dict[str, object] = {}
    loop = Loop(tmp_path)
    up = run("gpufabric", "lab", "up", str(intent), "--no-hosts", *up_args(), "--state-dir", str(state))
    try:
        assert up.returncode == 0, up.stderr
        pushed = run("nornir", "push", str(intent), "--plane", "compute", "--state-dir", str(state), "--json")
        assert pushed.returncode == 0, pushed.stdout[-2000:] + pushed.stderr[-2000:]
        with slurm_cluster(NODES) as cluster:
            _scenario(tmp_path, intent, state, cluster, loop, figures, prometheus)
    finally:
        loop.stop()
        down = run("gpufabric", "lab", "down", "--state-dir", str(state))
        target = os.environ.get("GPUFABRIC_LOOP_FIGURES")
        if target:
            Path(target).write_text(json.dumps(figures, indent=1) + "\n")
    assert down.returncode == 0, down.stderr


def _scenario(
    tmp: Path, intent: Path, state: Path, cluster: SlurmCluster, loop: Loop, figures: dict, prometheus: Path
) -> None:
    exporter, prom, manager, receiver = (free_port("127.0.0.1") for _ in range(4))
    gf = str(BIN / "gpufabric")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    rules = tmp / "rules.yml"
    run("gpufabric", "telemetry", "rules", "--for", f"{FOR}s", "-o", str(rules), check=True)
    am_config = tmp / "alertmanager.yml"
    run("gpufabric", "telemetry", "alertmanager", str(intent), "--webhook", f"http://127.0.0.1:{receiver}/webhook",
        "--group-wait", "5s", "-o", str(am_config), check=True)  # fmt: skip
    (tmp / "prometheus.yml").write_text(
        "global: {scrape_interval: 10s, scrape_timeout: 10s, evaluation_interval: 5s}\n"
        f"rule_files: [{rules}]\n"
        f"alerting: {{alertmanagers: [{{static_configs: [{{targets: ['127.0.0.1:{manager}']}}]}}]}}\n"
        f"scrape_configs: [{{job_name: gpufabric, static_configs: [{{targets: ['127.0.0.1:{exporter}']}}]}}]\n"
    )
    audit = tmp / "remediate.jsonl"
    loop.start("exporter", [gf, "telemetry", "serve", str(intent), "--state-dir", str(state), "--plane", "compute",
               "--listen", f"127.0.0.1:{exporter}", "--scrape-budget", "8", "--switch-deadline", "8"], env)  # fmt: skip
    loop.start("prometheus", [str(prometheus), f"--config.file={tmp / 'prometheus.yml'}",
               f"--storage.tsdb.path={tmp / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom}"])  # fmt: skip
    loop.start("alertmanager", alertmanager_command([f"--config.file={am_config}", f"--storage.path={tmp / 'am'}",
               f"--web.listen-address=127.0.0.1:{manager}", "--cluster.listen-address="]))  # fmt: skip
    # The unit's four servers: 3 may be out at once (the cut's two and the person's one), the cluster's too.
    loop.start("remediate", [gf, "remediate", "serve", str(intent), "--listen", f"127.0.0.1:{receiver}",
               "--slurm", "--slurm-conf", str(cluster.conf), "--max-share", "0.75", "--max-unit-share", "0.75",
               "--hold-down", f"{HOLD_DOWN}s", "--state", str(tmp / "r.json"), "--audit-log", str(audit),
               "--alertmanager", f"http://127.0.0.1:{manager}"], env)  # fmt: skip

    def series(expr: str) -> list[dict]:
        body = _get(f"http://127.0.0.1:{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        return list(json.loads(body)["data"]["result"]) if body else []

    planned_up = f'gpufabric_link_up{{device="{LEAF}",port="swp1s0"}}'
    _await("Prometheus reads the leaf's server ports up", lambda: [r["value"][1] for r in series(planned_up)] == ["1"],
           loop, 240)  # fmt: skip
    _await("Alertmanager ready", lambda: _get(f"http://127.0.0.1:{manager}/-/ready") is not None, loop)
    _await("the receiver ready", lambda: _get(f"http://127.0.0.1:{receiver}/healthz") is not None, loop)
    labels = {r["metric"]["port"]: r["metric"].get("cable") for r in series(f'gpufabric_link_up{{device="{LEAF}"}}')}
    assert {p: labels.get(p) for p in BREAKOUT} == {p: c for p, (_, c) in BREAKOUT.items()}

    # A person drains gpu04 before anything is cut.
    cluster.command("scontrol", "update", "NodeName=gpu04", "State=DRAIN", f"Reason={PERSON}")
    assert _out(cluster) == {"gpu04": PERSON}

    # -- 1. Cut the breakout cable: both legs lose their carrier at the leaf. --------------------------------
    ends = [_stub_far_end(state, LEAF, port) for port in BREAKOUT]
    cut = time.monotonic()
    for end in ends:
        _ns(LEAF, end, "down")
    seen_out = _watch(cluster, cut, lambda out: {"gpu01", "gpu02"} <= set(out), loop)
    figures["cut_to_drain_s"] = {n: round(seen_out[n], 1) for n in ("gpu01", "gpu02")}
    out = _out(cluster)
    for port, (node, cable) in BREAKOUT.items():
        assert out[node] == f"gpufabric remediate: GpufabricLinkDown@{cable},{LEAF}:{port}", out
    assert out["gpu04"] == PERSON and "gpu03" not in seen_out, seen_out
    assert max(figures["cut_to_drain_s"].values()) <= FOR + MARGIN, figures

    # -- Restore: after the hold-down exactly gpu01 and gpu02 go back; gpu04 stays the person's. ------------
    restored = time.monotonic()
    for end in ends:
        _ns(LEAF, end, "up")
    back = _watch(cluster, restored, lambda out: not {"gpu01", "gpu02"} & set(out), loop, HOLD_DOWN + 240, back=True)
    figures["restore_to_resume_s"] = {n: round(back[n], 1) for n in ("gpu01", "gpu02")}
    assert set(back) == {"gpu01", "gpu02"}, back  # gpu04 never went back, gpu03 never out
    assert min(figures["restore_to_resume_s"].values()) >= HOLD_DOWN, figures
    assert _out(cluster) == {"gpu04": PERSON}
    actions = [(r["action"], tuple(r["nodes"])) for r in _trail(audit) if r["action"] in ("drain", "resume", "kept")]
    assert sorted(actions) == sorted(
        [("drain", ("gpu01",)), ("drain", ("gpu02",)), ("resume", ("gpu01",)), ("resume", ("gpu02",))]
    ), actions

    # -- 2a. Every link of a spine cut: the leaves keep their other uplink, nobody is drained. --------------
    spine_ports = ["swp1", "swp2"]
    seen = len(_trail(audit))
    for port in spine_ports:
        _ns("cmp-spine1", port, "down")

    def spine_alerts_in() -> bool:
        parts = {r["part"] for r in _trail(audit)[seen:] if r["action"] == "ignored"}
        return {f"cmp-spine1:{p}" for p in spine_ports} <= parts

    figures["spine_cut_seen_s"] = round(_await("the spine's link alerts reach the loop", spine_alerts_in, loop), 1)
    assert _out(cluster) == {"gpu04": PERSON}
    assert not [r for r in _trail(audit)[seen:] if r["action"] == "drain"]
    for port in spine_ports:
        _ns("cmp-spine1", port, "up")

    # -- 2b. Every server of the unit cut from rail 1 (both breakouts): drained up to the unit cap (3 of 4 with
    # the person's gpu04), the third server capped, and Alertmanager told for a person. ----------------------
    second = [_stub_far_end(state, LEAF, p) for p in ("swp2s0", "swp2s1")]
    seen = len(_trail(audit))
    for end in ends + second:
        _ns(LEAF, end, "down")

    def capped() -> list[dict]:
        return [r for r in _trail(audit)[seen:] if r["action"] == "capped"]

    _await("a server capped", lambda: bool(capped()) and len(_out(cluster)) == 3, loop)
    out = _out(cluster)
    assert len(out) == 3 and out["gpu04"] == PERSON, out
    loop_out = {n for n in out if n != "gpu04"}
    capped_nodes = {n for r in capped() for n in r["nodes"]}
    assert capped_nodes == {"gpu01", "gpu02", "gpu03"} - loop_out and len(capped_nodes) == 1, (out, capped())
    figures["cap"] = {"drained": sorted(loop_out), "capped": sorted(capped_nodes), "person": "gpu04"}

    def paged() -> bool:
        body = _get(f"http://127.0.0.1:{manager}/api/v2/alerts?filter=alertname%3D%22GpufabricRemediationCapped%22")
        return bool(body) and any(a["labels"].get("node") in capped_nodes for a in json.loads(body))

    _await("Alertmanager holds the capped alert for a person", paged, loop, 120)
    for end in ends + second:
        _ns(LEAF, end, "up")
    print(json.dumps(figures), file=sys.stderr)


def _states(cluster: SlurmCluster) -> dict[str, tuple[bool, str]]:
    """node -> (drained, reason), from one `sinfo --json`."""
    every = json.loads(cluster.command("sinfo", "--json").stdout)["nodes"]
    return {n["name"]: ("DRAIN" in n["state_flags"], str(n.get("reason", ""))) for n in every if n["name"] in NODES}


def _watch(
    cluster: SlurmCluster,
    start: float,
    done: Callable[[dict[str, str]], bool],
    loop: Loop,
    timeout: float = 300.0,
    *,
    back: bool = False,
) -> dict[str, float]:
    """Poll Slurm each half second until `done(out)` holds (out: drained node -> reason); return, per node
    whose drained state changed, the seconds from `start` to the first poll that saw it change."""
    first = {n: d for n, (d, _) in _states(cluster).items()}
    changed: dict[str, float] = {}
    while True:
        states = _states(cluster)
        now = time.monotonic() - start
        for node, (drained, _) in states.items():
            if drained != first[node] and node not in changed:
                changed[node] = now
        if done({n: r for n, (d, r) in states.items() if d}):
            return changed
        if now > timeout:
            raise AssertionError(f"Slurm's nodes not as awaited within {timeout:.0f} s: {states}{loop.logs()}")
        time.sleep(0.5)
