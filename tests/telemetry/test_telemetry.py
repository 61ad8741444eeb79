# ruff: noqa: E501 (promtool test series are one line each)
"""Telemetry: the counters' readers, the exporter's families, alert rules under promtool, the dashboard."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import INVENTORY, run_in_process, sized

from gpufabric.drivers.frr_getters import interfaces_counters
from gpufabric.drivers.transport import Output
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from gpufabric.telemetry.dashboard import dashboard, queries
from gpufabric.telemetry.job_join import JOB_METRICS
from gpufabric.telemetry.metrics import METRICS
from gpufabric.telemetry.read import Sample, read_host
from gpufabric.telemetry.rules import Thresholds, alert_rules, rules_yaml
from gpufabric.telemetry.targets import NicTarget, switch_targets
from gpufabric.verify.running.ethtool import parse_ethtool, parse_hw_counters

OUTPUTS = Path(__file__).parents[1] / "telemetry_outputs"


def _promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing: scripts/test.sh installs it (Debian's prometheus package)")
        pytest.skip("promtool is not installed (apt install prometheus)")
    return found


def _plan(name: str = "fabric.yml"):
    return build_plan(load_intent(str(INVENTORY / name)))


# -- readers --------------------------------------------------------------------------------------


def test_connectx_ethtool_counters_are_read():
    found = parse_ethtool((OUTPUTS / "mlx5_ethtool.txt").read_text())
    assert found.pause == {(0, "rx"): 0, (0, "tx"): 0, (3, "rx"): 48213, (3, "tx"): 1207}
    assert found.storm == {"warning": 2, "error": 0}
    assert found.ecn_marked is None


def test_spectrum_per_priority_names_are_read_too():
    found = parse_ethtool("NIC statistics:\n     rx_pause_prio_3: 17\n     tx_pause_prio_3: 4\n     ecn_marked: 99\n")
    assert found.pause == {(3, "rx"): 17, (3, "tx"): 4} and found.ecn_marked == 99


def test_cumulus_switchd_counters_are_read_too():
    text = "NIC statistics:\n     HwIfInOctets: 10\n     HwIfInPfc3Pkt: 120\n     HwIfOutPfc3Pkt: 7\n     HwIfOutQ3WredDrops: 5\n"
    found = parse_ethtool(text)
    assert found.pause == {(3, "rx"): 120, (3, "tx"): 7} and found.queue_drops == {"3": 5}
    assert found.received_pauses() == 120


def test_rdma_port_counters_are_read():
    found = parse_hw_counters((OUTPUTS / "hw_counters.txt").read_text() + "garbage line\n/sys/x:1\n")
    assert found["mlx5_0"] == {
        "np_cnp_sent": 7731,
        "rp_cnp_handled": 6102,
        "np_ecn_marked_roce_packets": 8112,
        "out_of_sequence": 0,
    }
    assert found["mlx5_1"]["out_of_sequence"] == 4


def test_a_host_scrape_is_labelled_from_the_plan():
    nics = [
        NicTarget("compute", "gpu01", "eth1", "1", "cmp-su1-leaf1"),
        NicTarget("compute", "gpu01", "eth2", "2", "x"),
    ]
    links = [{"ifname": "eth1", "stats64": {"rx": {"bytes": 10}, "tx": {"bytes": 20}}}]
    output = "\n".join(
        [
            "@@port eth1",
            (OUTPUTS / "mlx5_ethtool.txt").read_text(),
            "@@port eth2",
            "@@rdma",
            (OUTPUTS / "hw_counters.txt").read_text(),
            "@@netdev",
            "mlx5_0 eth1",
            "mlx5_1 eth2",
            "@@links",
            json.dumps(links),
        ]
    )
    samples = read_host(output, nics)
    labels = {"plane": "compute", "host": "gpu01", "interface": "eth1", "rail": "1", "leaf": "cmp-su1-leaf1"}
    assert Sample("gpufabric_nic_pause_frames_total", {**labels, "priority": "3", "direction": "rx"}, 48213) in samples
    assert Sample("gpufabric_nic_cnp_sent_total", labels, 7731) in samples
    assert Sample("gpufabric_nic_pause_storm_events_total", {**labels, "level": "warning"}, 2) in samples
    assert Sample("gpufabric_nic_octets_total", {**labels, "direction": "tx"}, 20) in samples
    eth2 = [s for s in samples if s.labels["interface"] == "eth2"]
    assert {s.metric for s in eth2} == {
        "gpufabric_nic_cnp_sent_total",
        "gpufabric_nic_cnp_handled_total",
        "gpufabric_nic_ecn_marked_roce_packets_total",
        "gpufabric_nic_out_of_sequence_total",
    }
    assert all(s.metric in METRICS and set(s.labels) == set(METRICS[s.metric].labels) for s in samples)


def test_linux_counters_and_carrier_changes_come_from_iproute2():
    """Real `ip -s -s -j link` output of this machine."""
    text = subprocess.run(["ip", "-s", "-s", "-j", "link", "show", "lo"], capture_output=True, text=True, check=True)
    counters, flaps = interfaces_counters(text.stdout)
    raw = json.loads(text.stdout)[0]["stats64"]
    assert counters["lo"]["rx_octets"] == raw["rx"]["bytes"] and counters["lo"]["tx_errors"] == raw["tx"]["errors"]
    assert flaps["lo"] == raw["tx"]["carrier_changes"]


class _ThisMachine:
    """A transport that runs each command here (real iproute2) and counts them."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def run(self, command: str, stdin: str | None = None) -> Output:
        self.sent.append(command)
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=False)
        return Output(done.returncode, done.stdout, done.stderr)

    def close(self) -> None:
        pass


def test_counters_and_carrier_changes_read_back_to_back_share_one_command(monkeypatch):
    from gpufabric.drivers import linux_switch

    here = _ThisMachine()
    switch = linux_switch.LinuxSwitchDriver("192.0.2.1", "u", "p", optional_args={"transport": here})
    switch.open()
    counters, flaps = switch.get_interfaces_counters(), switch.get_carrier_changes()
    assert here.sent == [linux_switch.LINK_STATS] and "lo" in counters and "lo" in flaps
    switch.get_interfaces_counters()  # the pair is over: a new reading, not the old one again
    switch.get_interfaces_counters()  # the same getter twice never shares
    assert len(here.sent) == 3
    switch.get_carrier_changes()  # answered by the last counters reading, which is recent
    assert len(here.sent) == 3
    monkeypatch.setattr(linux_switch, "LINK_STATS_SHARED_FOR", 0.0)  # an old reading serves no one
    switch.get_interfaces_counters()
    switch.get_carrier_changes()
    assert len(here.sent) == 5


def test_switch_targets_label_ports_with_their_far_end():
    targets = {t.device: t for t in switch_targets(_plan())}
    leaf = targets["cmp-su1-leaf1"]
    assert leaf.ports["swp1"] == {"port": "swp1", "peer": "gpu01", "peer_port": "eth1", "rail": "1", "unit": "1",
                                 "cable": "cmp-000009"}  # fmt: skip
    assert leaf.sessions == {"swp3": "cmp-spine1", "swp4": "cmp-spine2"}
    assert leaf.ecmp["10.0.0.5/32"] == (2, "cmp-su2-leaf1")  # another unit's leaf: through both spines
    spine = targets["cmp-spine1"]
    assert {p["rail"] for p in spine.ports.values()} == {"1", "2"}  # a spine port carries its leaf's rail


class _StandInSwitch:
    """What NAPALM's EOS or NX-OS driver answers, for the getters the exporter calls: no EOS or NX-OS
    device runs here, so the show commands' answers are the outputs in tests/telemetry_outputs."""

    def __init__(self, answers: dict[str, str], ports: list[str]) -> None:
        self.answers, self.ports = answers, ports
        self.asked: list[str] = []

    def cli(self, commands: list[str]) -> dict[str, str]:
        self.asked += commands
        return {c: self.answers.get(c, "") for c in commands}

    def get_interfaces(self) -> dict:
        return {p: {"is_up": True} for p in self.ports}

    def get_interfaces_counters(self) -> dict:
        zero = {f"{d}_{k}": 0 for d in ("rx", "tx") for k in ("octets", "errors", "discards")}
        return {p: zero for p in self.ports}

    def get_bgp_neighbors(self) -> dict:
        return {"global": {"peers": {}}}

    def get_route_to(self) -> dict:
        return {}


def test_eos_pfc_counters_and_watchdog_are_read():
    from gpufabric.nos.eos import telemetry as eos

    pfc = eos.parse_pfc("switch>show priority-flow-control counters\n" + (OUTPUTS / "eos_pfc_counters.txt").read_text())
    assert pfc == {"Ethernet1/1": (0, 0), "Ethernet1/3": (48213, 1207), "Ethernet1/5": (0, 12), "Ethernet1/7": (3, 0)}
    assert eos.parse_pfc("Et1/1  5  5\n") == {}  # rows count only under the table's header
    assert eos.parse_watchdog(json.loads((OUTPUTS / "eos_pfc_watchdog.json").read_text())) == {"Ethernet1/3": 2}
    assert eos.parse_watchdog({"interfaces": {}}) == {}


def test_nxos_pfc_and_queue_counters_are_read():
    from gpufabric.nos.nxos import telemetry as nxos

    doc = json.loads((OUTPUTS / "nxos_pfc.json").read_text())
    assert nxos.parse_pfc(doc) == {"Ethernet1/1": (0, 0), "Ethernet1/2": (5120, 77)}
    flat = {
        "TABLE_pfc_interface": {"ROW_pfc_interface": {"if_name_str": "Ethernet1/9", "rx-stats": "4", "tx-stats": "1"}}
    }
    assert nxos.parse_pfc(flat) == {"Ethernet1/9": (4, 1)}  # one row, and no module level
    drops, marked = nxos.parse_queuing(json.loads((OUTPUTS / "nxos_queuing.json").read_text()))
    assert drops == {"0": 42, "3": 0} and marked == 812  # packets, not bytes; ingress rows ignored
    assert nxos.parse_queuing({}) == ({}, None)


@pytest.mark.parametrize(("device", "answers"), [
    ("sto-leaf1a", {"show priority-flow-control counters": "eos_pfc_counters.txt",
                    "show priority-flow-control counters watchdog | json": "eos_pfc_watchdog.json"}),
    ("biz-leaf1", {"show interface priority-flow-control | json": "nxos_pfc.json",
                   "show queuing interface Ethernet1/2 | json": "nxos_queuing.json"}),
])  # fmt: skip
def test_a_stand_in_eos_or_nxos_switch_is_scraped_with_plan_labels(device, answers):
    from gpufabric.telemetry.read import read_switch

    target = next(t for t in switch_targets(_plan("examples/multi-vendor.yml")) if t.device == device)
    conn = _StandInSwitch({c: (OUTPUTS / f).read_text() for c, f in answers.items()}, sorted(target.ports))
    samples = read_switch(conn, target)
    port = "Ethernet1/3" if target.platform == "eos" else "Ethernet1/2"
    labels = {**target.labels, **target.ports[port]}
    pauses = {s.labels["direction"]: s.value for s in samples
              if s.metric == "gpufabric_pfc_pause_frames_total" and s.labels["port"] == port}  # fmt: skip
    assert pauses == ({"rx": 48213, "tx": 1207} if target.platform == "eos" else {"rx": 5120, "tx": 77})
    assert all(s.labels["priority"] == "all" for s in samples if s.metric == "gpufabric_pfc_pause_frames_total")
    if target.platform == "eos":
        assert Sample("gpufabric_pfc_watchdog_events_total", labels, 2) in samples
    else:
        assert Sample("gpufabric_ecn_marked_packets_total", labels, 812) in samples
        assert Sample("gpufabric_queue_dropped_packets_total", {**labels, "queue": "0"}, 42) in samples
        assert sum(c.startswith("show queuing interface") for c in conn.asked) == len(target.ports)
    assert all(s.metric in METRICS and set(s.labels) == set(METRICS[s.metric].labels) for s in samples)


class _LinuxStandIn(_StandInSwitch):
    """A switch whose driver has the lighter getters a Linux switch's has: the full ones must not be asked."""

    def __init__(self, ports: list[str], down: str, peers: dict[str, bool]) -> None:
        super().__init__({}, ports)
        self.down, self.peers = down, peers

    def get_interfaces(self) -> dict:
        raise AssertionError("the full interface getter (a vtysh more) was asked for is_up alone")

    def get_bgp_neighbors(self) -> dict:
        raise AssertionError("the full BGP getter (two vtysh) was asked for is_up alone")

    def get_port_states(self) -> dict:
        return {p: {"is_up": p != self.down, "is_enabled": True} for p in self.ports}

    def get_bgp_sessions(self) -> dict:
        return {"global": {"peers": {k: {"is_up": up, "remote_as": 1} for k, up in self.peers.items()}}}


def test_a_scrape_reads_ports_and_sessions_up_by_the_drivers_lighter_getters():
    from gpufabric.telemetry.read import read_switch

    target = next(t for t in switch_targets(_plan("examples/multi-vendor.yml")) if t.sessions and t.ports)
    ports, keys = sorted(target.ports), sorted(target.sessions)
    conn = _LinuxStandIn(ports, ports[0], {k: k != keys[0] for k in keys})
    samples = read_switch(conn, target)
    up = {s.labels["port"]: s.value for s in samples if s.metric == "gpufabric_link_up"}
    assert up == {p: 0.0 if p == ports[0] else 1.0 for p in ports}
    sessions = {s.labels["peer"]: s.value for s in samples if s.metric == "gpufabric_bgp_session_up"}
    assert sessions == {k: 0.0 if k == keys[0] else 1.0 for k in keys}


# -- rules ----------------------------------------------------------------------------------------


def test_rules_pass_promtool_and_watch_only_served_metrics(tmp_path):
    path = tmp_path / "rules.yml"
    path.write_text(rules_yaml())
    done = subprocess.run([_promtool(), "check", "rules", str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "SUCCESS: 59 rules found" in done.stdout
    )  # 11 Ethernet, 7 optics (test_optics_alerts.py), 6 InfiniBand, 12 GPU, NIC, buffers (test_health_alerts.py),
    # 5 BMC (test_bmc_alerts.py), 12 jobs (test_job_join.py), 6 probes (test_probe_mesh.py)
    used = {
        w
        for r in alert_rules()["groups"][0]["rules"]
        for w in r["expr"].replace("(", " ").split()
        if w.startswith("gpufabric_")
    }
    assert {u.split("{")[0].split("[")[0] for u in used} <= set(METRICS)


PROMTOOL_TESTS = """
rule_files: [rules.yml]
evaluation_interval: 15s
tests:
  - interval: 15s
    input_series:
      - series: 'gpufabric_link_carrier_changes_total{plane="compute",device="leaf1",role="leaf",port="swp3",peer="spine1",peer_port="swp1",rail="1",unit="1"}'
        values: '2 2 2 3 3 3 3 3'
      - series: 'gpufabric_link_carrier_changes_total{plane="compute",device="leaf1",role="leaf",port="swp4",peer="spine2",peer_port="swp1",rail="1",unit="1"}'
        values: '2 2 2 2 2 2 2 2'
      - series: 'gpufabric_ecmp_paths{plane="compute",device="leaf1",role="leaf",destination="10.0.0.5/32",destination_device="leaf3"}'
        values: '2 2 2 1 1 1 1 1 1 1'
      - series: 'gpufabric_ecmp_planned_paths{plane="compute",device="leaf1",role="leaf",destination="10.0.0.5/32",destination_device="leaf3"}'
        values: '2 2 2 2 2 2 2 2 2 2'
      - series: 'gpufabric_bgp_session_up{plane="compute",device="leaf1",role="leaf",peer="swp3",peer_device="spine1"}'
        values: '1 1 1 0 0 0 0 0 0 0'
      - series: 'gpufabric_nic_pause_frames_total{plane="compute",host="gpu01",interface="eth1",rail="1",leaf="leaf1",priority="3",direction="rx"}'
        values: '0+100x4 500+1000000x8'
    alert_rule_test:
      - eval_time: 30s
        alertname: GpufabricLinkFlapped
        exp_alerts: []
      - eval_time: 60s
        alertname: GpufabricLinkFlapped
        exp_alerts:
          - exp_labels: {severity: warning, plane: compute, device: leaf1, role: leaf, port: swp3, peer: spine1, peer_port: swp1, rail: "1", unit: "1"}
            exp_annotations: {summary: "leaf1 swp3 to spine1 went down or up in the last 10 minutes"}
      - eval_time: 60s
        alertname: GpufabricEcmpNarrowerThanPlanned
        exp_alerts: []
      - eval_time: 120s
        alertname: GpufabricEcmpNarrowerThanPlanned
        exp_alerts:
          - exp_labels: {severity: warning, plane: compute, device: leaf1, role: leaf, destination: 10.0.0.5/32, destination_device: leaf3}
            exp_annotations: {summary: "leaf1 reaches leaf3 over 1 paths, fewer than planned"}
      - eval_time: 90s
        alertname: GpufabricBgpSessionDown
        exp_alerts: []
      - eval_time: 120s
        alertname: GpufabricBgpSessionDown
        exp_alerts:
          - exp_labels: {severity: critical, plane: compute, device: leaf1, role: leaf, peer: swp3, peer_device: spine1}
            exp_annotations: {summary: "leaf1 session swp3 to spine1 is not established"}
      - eval_time: 60s
        alertname: GpufabricPfcPauseStorm
        exp_alerts: []
      - eval_time: 180s
        alertname: GpufabricPfcPauseStorm
        exp_alerts:
          - exp_labels: {severity: critical, plane: compute, host: gpu01, interface: eth1, rail: "1", leaf: leaf1, priority: "3", direction: rx}
            exp_annotations: {summary: "pause storm on gpu01 eth1"}
  # A cable to a server cut for good, one cut and repaired (not flapping), one flapping: each named by its cable.
  - interval: 15s
    input_series:
      - series: 'gpufabric_link_carrier_changes_total{plane="compute",device="leaf1",role="leaf",port="swp1",peer="gpu01",peer_port="eth1",rail="1",unit="1",cable="cmp-000009"}'
        values: '4 5 6 7 8 9 10 11'
      - series: 'gpufabric_link_up{plane="compute",device="leaf2",role="leaf",port="swp1",peer="gpu03",peer_port="eth1",rail="1",unit="1",cable="cmp-000013"}'
        values: '1 0 0 0 1 1 1 1'
      - series: 'gpufabric_link_carrier_changes_total{plane="compute",device="leaf2",role="leaf",port="swp1",peer="gpu03",peer_port="eth1",rail="1",unit="1",cable="cmp-000013"}'
        values: '7 8 8 8 9 9 9 9'
      - series: 'gpufabric_link_up{plane="compute",device="leaf3",role="leaf",port="swp2",peer="gpu06",peer_port="eth1",rail="1",unit="3",cable="cmp-000020"}'
        values: '1 0 0 0 0 0 0 0'
    alert_rule_test:
      - eval_time: 15s
        alertname: GpufabricLinkFlapping
        exp_alerts: []
      - eval_time: 90s
        alertname: GpufabricLinkFlapping
        exp_alerts:
          - exp_labels: {severity: critical, plane: compute, device: leaf1, role: leaf, port: swp1, peer: gpu01, peer_port: eth1, rail: "1", unit: "1", cable: cmp-000009}
            exp_annotations: {summary: "leaf1 swp1 to gpu01 (cable cmp-000009) is flapping: down and up again more than once in 10 minutes"}
      - eval_time: 105s
        alertname: GpufabricLinkDown
        exp_alerts:
          - exp_labels: {severity: critical, plane: compute, device: leaf3, role: leaf, port: swp2, peer: gpu06, peer_port: eth1, rail: "1", unit: "3", cable: cmp-000020}
            exp_annotations: {summary: "leaf3 swp2 to gpu06 (cable cmp-000020) is down"}
      - eval_time: 30s
        alertname: GpufabricLinkDown
        exp_alerts: []
"""


def test_alerts_fire_when_they_should_and_not_before(tmp_path):
    """promtool's own rule evaluator on synthetic series: a flap, an ECMP path lost, a session down, a pause storm."""
    (tmp_path / "rules.yml").write_text(rules_yaml(Thresholds(hold="1m")))
    (tmp_path / "tests.yml").write_text(PROMTOOL_TESTS)
    done = subprocess.run(
        [_promtool(), "test", "rules", "tests.yml"], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # The same tests fail against rules that watch something else: they can fail.
    broken = rules_yaml(Thresholds(hold="1m")).replace("gpufabric_ecmp_paths <", "gpufabric_ecmp_paths >")
    (tmp_path / "rules.yml").write_text(broken)
    done = subprocess.run(
        [_promtool(), "test", "rules", "tests.yml"], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert done.returncode != 0 and "GpufabricEcmpNarrowerThanPlanned" in done.stdout + done.stderr


# -- dashboard ------------------------------------------------------------------------------------


def test_dashboard_has_a_row_per_plane_and_a_panel_per_rail():
    plan = _plan()
    board = dashboard(plan)
    rows = [p["title"] for p in board["panels"] if p["type"] == "row"]
    assert rows[-1] == "jobs ($job_id)"  # the job row last, over the job_id variable (test_job_join.py)
    rows = rows[:-1]
    assert rows == [n for n in plan.planes if n != "oob"] + (["oob"] if "oob" in rows else [])
    compute = [p["title"] for p in board["panels"] if p["title"].startswith("compute: rail")]
    assert compute == ["compute: rail 1", "compute: rail 2"]
    assert any(t.startswith("compute: PFC") for t, _ in queries(board))
    assert not any(t.startswith("business: PFC") for t, _ in queries(board))  # no RoCE there
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])


@pytest.mark.parametrize("name", sized(["fabric.yml", "examples/multi-vendor.yml", "examples/superpod-4su.yml"]))
def test_every_dashboard_query_is_valid_promql_on_served_metrics(tmp_path, name):
    """promtool parses each query (as a recording rule): a typo in PromQL fails here, not in Grafana."""
    exprs = [e for _, e in queries(dashboard(_plan(name)))]
    rules = {"groups": [{"name": "q", "rules": [{"record": f"q_{i}", "expr": e} for i, e in enumerate(exprs)]}]}
    (tmp_path / "q.yml").write_text(yaml.safe_dump(rules))
    done = subprocess.run(
        [_promtool(), "check", "rules", str(tmp_path / "q.yml")], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    named = {
        w.split("{")[0].split("[")[0] for e in exprs for w in e.replace("(", " ").split() if w.startswith("gpufabric_")
    }
    served = set(METRICS) | set(JOB_METRICS)  # the exporter's, and the job join's beside them
    assert named <= served, named - served


def test_the_commands_write_rules_and_dashboard(tmp_path):
    done = run_in_process("gpufabric", "telemetry", "rules", "-o", str(tmp_path / "r.yml"), "--for", "30s")
    assert done.returncode == 0, done.stderr
    assert {r["for"] for r in yaml.safe_load((tmp_path / "r.yml").read_text())["groups"][0]["rules"]} == {"30s", "0s"}
    done = run_in_process("gpufabric", "telemetry", "dashboard", "-o", str(tmp_path / "d.json"))
    assert done.returncode == 0 and json.loads((tmp_path / "d.json").read_text())["title"] == "gpufabric: lab"


def test_the_docs_list_every_metric():
    from gpufabric.telemetry.metrics import markdown

    assert markdown() in (Path(__file__).parents[2] / "docs" / "telemetry.md").read_text()


@pytest.mark.parametrize(
    "command",
    [
        ("gpufabric", "telemetry", "scrape"),
        ("gpufabric", "telemetry", "serve"),
        ("gpufabric", "acceptance", "run", "--results", "RESULTS"),
    ],
)
def test_commands_that_log_in_say_when_no_lab_is_up(tmp_path, command):
    """Their options parse and reach the login step, which refuses clearly (nothing is contacted)."""
    args = [a.replace("RESULTS", str(tmp_path / "r")) for a in command]
    done = run_in_process(*args, "--lab", "--state-dir", str(tmp_path / "no-lab"))
    assert done.returncode == 2, done.stderr
    assert "no lab of fabric 'lab' is up" in done.stderr and "Traceback" not in done.stderr
