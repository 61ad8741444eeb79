"""A server's BMC reports a failed power supply, and the remediation loop drains that server in a real Slurm:
the exporter's BMC reader (the collector `telemetry serve` runs, here with the BMCs alone: no switch is up)
reads a Redfish service on loopback, Debian's Prometheus scrapes it and evaluates `gpufabric telemetry
rules`, Debian's Alertmanager (configured by `gpufabric telemetry alertmanager`) notifies `gpufabric
remediate serve`, which drains the node in the Slurm harness's slurmctld (tests/slurm_cluster.py).

The BMC is the DMTF-layout fake of tests/telemetry/redfish_doubles.py (sushy-tools' emulator cannot report a
failed part), answering on 127.0.0.1 in place of gpu02's planned OOB address, which its series still carry
as the `bmc` label. Root, beside the lab tier (the Slurm harness's namespaces); not run by the fast tier.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import BIN, run
from slurm_cluster import free_port, missing, slurm_cluster

from gpufabric.hidden import Hidden
from gpufabric.intent import load_intent_text
from gpufabric.plan import build_plan
from gpufabric.telemetry.bmc import bmc_targets
from gpufabric.telemetry.exporter import FabricCollector
from gpufabric.telemetry.redfish import Endpoint
from tests.alertmanager_run import alertmanager_command
from tests.telemetry.redfish_doubles import PASSWORD, USER, Service, older_model

pytestmark = [
    pytest.mark.slow,
    pytest.mark.own_lab,  # no lab: the Slurm harness takes its worker's names and subnet (tests/lab_slot.py)
    pytest.mark.skipif(os.geteuid() != 0, reason="the Slurm harness needs root (network namespaces)"),
    pytest.mark.skipif(bool(missing()), reason=f"Slurm's daemons are missing: {missing()}"),
]

NODES = ["gpu01", "gpu02", "gpu03", "gpu04"]
FAILED = "gpu02"
BOUND = 60 + 60  # the rule's `for: 1m`, then scrape, evaluation and Alertmanager's group wait
INTENT = """\
fabric: {name: bmcloop}
server_groups:
  - name: gpu
    count: 4
    naming: "gpu{index:02d}"
    gpus: 8
    nics:
      compute: {speed: 400G, interfaces: [eth1, eth2]}
      oob: {speed: 1G, interfaces: [eth0]}
    bmc: {scheme: http, port: 8443}
planes:
  compute:
    topology: rail-optimized
    tiers: 2
    prefix: cmp
    unit_nodes: 4
    switches:
      leaf: {platform: frr, model: lab-800g-32, ports: 32, port_speed: 800G, downlink_speed: 400G}
      spine: {platform: frr, model: lab-800g-32, ports: 32, port_speed: 800G, count: 2}
    routing: {addressing: unnumbered, asn_pool: 4200000000-4200000999}
    addressing: {loopbacks: 10.0.0.0/24, hosts: 10.10.0.0/16}
  oob:
    subnet: 172.20.0.0/24
    switches:
      mgmt: {platform: frr, model: lab-1g-48, ports: 48, port_speed: 1G}
credentials:
  switches: {username: admin, password: {env: GPUFABRIC_SWITCH_PASSWORD}}
  hosts: {username: root, ssh_key: {env: GPUFABRIC_HOST_SSH_KEY}}
  bmc: {username: gpufabric, password: {env: GPUFABRIC_BMC_PASSWORD}}
"""


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return bytes(answer.read())
    except OSError:
        return None


def test_a_failed_psu_drains_its_server_in_slurm(tmp_path: Path) -> None:
    from prometheus_client import CollectorRegistry, start_http_server

    found = [Path(p) / "prometheus" for p in os.environ.get("PATH", "").split(os.pathsep)]
    found.append(Path(__file__).resolve().parents[2] / ".cache/prometheus/usr/bin/prometheus")
    prometheus = next((p for p in found if p.exists()), None)
    if prometheus is None:
        pytest.skip("prometheus is missing: scripts/test.sh unpacks Debian's package into .cache/prometheus")
    intent = tmp_path / "bmcloop.yml"
    intent.write_text(INTENT)
    plan = build_plan(load_intent_text(INTENT, str(intent)))
    target = next(t for t in bmc_targets(plan) if t.node == FAILED)
    exporter, prom, manager, receiver = (free_port("127.0.0.1") for _ in range(4))
    rules, am_config = tmp_path / "rules.yml", tmp_path / "alertmanager.yml"
    run("gpufabric", "telemetry", "rules", "-o", str(rules), check=True)
    run("gpufabric", "telemetry", "alertmanager", str(intent), "--webhook", f"http://127.0.0.1:{receiver}/webhook",
        "--group-wait", "5s", "-o", str(am_config), check=True)  # fmt: skip
    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 10s, scrape_timeout: 10s, evaluation_interval: 5s}\n"
        f"rule_files: [{rules}]\n"
        f"alerting: {{alertmanagers: [{{static_configs: [{{targets: ['127.0.0.1:{manager}']}}]}}]}}\n"
        f"scrape_configs: [{{job_name: gpufabric, static_configs: [{{targets: ['127.0.0.1:{exporter}']}}]}}]\n"
    )
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    procs: list[subprocess.Popen[bytes]] = []

    def start(name: str, argv: list[str]) -> None:
        log = (tmp_path / f"{name}.log").open("wb")
        procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True))

    def logs() -> str:
        return "".join(f"\n--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in tmp_path.glob("*.log"))

    # The PSU alone: the rollup stays OK, so the one alert that fires is GpufabricBmcPsuFailed.
    with Service(older_model(rollup="OK")) as bmc, slurm_cluster(NODES) as cluster:
        endpoint = Endpoint(FAILED, "127.0.0.1", bmc.port, "http", USER, Hidden(PASSWORD), plain_http=True)
        collector = FabricCollector([], lambda t: None, bmcs=[(target, endpoint)], budget=8, deadline=8)
        registry = CollectorRegistry()
        registry.register(collector)
        server, thread = start_http_server(exporter, addr="127.0.0.1", registry=registry)
        try:
            start("prometheus", [str(prometheus), f"--config.file={tmp_path / 'prometheus.yml'}",
                  f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom}"])  # fmt: skip
            start("alertmanager", alertmanager_command([f"--config.file={am_config}",
                  f"--storage.path={tmp_path / 'am'}", f"--web.listen-address=127.0.0.1:{manager}",
                  "--cluster.listen-address="]))  # fmt: skip
            start("remediate", [str(BIN / "gpufabric"), "remediate", "serve", str(intent), "--listen",
                  f"127.0.0.1:{receiver}", "--slurm", "--slurm-conf", str(cluster.conf), "--max-share", "0.5",
                  "--max-unit-share", "0.5", "--hold-down", "60s", "--state", str(tmp_path / "r.json"),
                  "--audit-log", str(tmp_path / "remediate.jsonl")])  # fmt: skip
            started = time.monotonic()
            while not cluster.drained(FAILED):
                if time.monotonic() - started > BOUND + 240:  # the daemons' start-up on a loaded machine
                    raise AssertionError(f"{FAILED} not drained{logs()}")
                time.sleep(1)
            reason = str(cluster.node(FAILED).get("reason", ""))
            assert reason == f"gpufabric remediate: GpufabricBmcPsuFailed@{FAILED}:psu1", reason
            assert [n for n in NODES if cluster.drained(n)] == [FAILED]
            trail = [json.loads(line) for line in (tmp_path / "remediate.jsonl").read_text().splitlines()]
            drained = [r for r in trail if r["action"] == "drain"]
            assert drained and drained[0]["alert"]["labels"]["bmc"] == target.address
        finally:
            for proc in reversed(procs):
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    try:
                        proc.wait(60)
                    except subprocess.TimeoutExpired:
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
            server.shutdown()
            thread.join(5)
