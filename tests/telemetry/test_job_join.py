"""Running jobs joined to the ports of their footprints: Slurm's own squeue answer read into jobs, each job's
rows from the plan (host ports, uplinks on its paths, both ends), the collector's series (absent, with
`gpufabric_job_scheduler_up 0`, when the scheduler fails or its answer is old; gone when a job ends), and the
job rules under promtool (Prometheus's own evaluator): per-job rates, the alert naming the job and the part,
and nothing for a job once its info series went stale."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from gpufabric.intent import load_intent
from gpufabric.jobs.ports import JobPorts
from gpufabric.jobs.running import RunningJob, read_running
from gpufabric.plan import build_plan
from gpufabric.scheduler.model import SchedulerError, SchedulerOutputError
from gpufabric.telemetry.job_join import JOB_METRICS, JobCollector, markdown
from gpufabric.telemetry.job_rules import RECORDS, JobThresholds, job_group
from tests.telemetry.test_ib_alerts import _promtool

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "recorded" / "slurm" / "squeue-22.05.json"


@pytest.fixture(scope="module")
def plan():
    return build_plan(load_intent(str(ROOT / "inventory" / "fabric.yml")))


def _squeue(*jobs: tuple[int, str, str, Any]) -> str:
    return json.dumps(
        {"errors": [], "jobs": [{"job_id": j, "user_name": u, "nodes": n, "job_state": s} for j, u, n, s in jobs]}
    )


# -- squeue --json ------------------------------------------------------------------------------------------


def test_slurm_s_recorded_answer_reads_as_its_running_job_with_its_user():
    """Slurm 22.05's own `squeue --json` (tests/recorded/slurm): the RUNNING job on gpu01, not the COMPLETED one."""
    jobs = read_running(RECORDED.read_text())
    record = next(r for r in json.loads(RECORDED.read_text())["jobs"] if r["job_state"] == "RUNNING")
    assert jobs == [RunningJob(str(record["job_id"]), record["user_name"], ("gpu01",))]


def test_running_jobs_are_read_strictly():
    text = _squeue((7, "alice", "gpu[01-02]", "RUNNING"), (8, "bob", "gpu03", "PENDING"), (9, "", "gpu04", ["RUNNING"]))
    assert read_running(text) == [
        RunningJob("7", "alice", ("gpu01", "gpu02")),
        RunningJob("9", "", ("gpu04",)),  # 23.02+ writes the state as a list; no user name: no user label
    ]
    for bad, said in (
        (_squeue((7, 'x"}\n', "gpu01", "RUNNING")), "user_name"),  # a label value from outside: a pattern, or refused
        (_squeue((7, "alice", "gpu[01", "RUNNING")), "hostlist"),
        (_squeue((True, "alice", "gpu01", "RUNNING")), "job_id"),
        (_squeue((7, "alice", "gpu01", 3)), "job_state"),
        ("[]", "not an object"),
        ("{", "did not print JSON"),
    ):
        with pytest.raises(SchedulerOutputError, match=said):
            read_running(bad)
    with pytest.raises(SchedulerError, match="reported"):
        read_running(json.dumps({"errors": [{"error": "no controller"}], "jobs": []}))


# -- the rows of a job --------------------------------------------------------------------------------------


def test_a_job_across_two_units_has_its_host_ports_and_both_ends_of_its_uplinks(plan):
    (rows,) = JobPorts(plan).join([RunningJob("81234", "alice", ("gpu01", "gpu03"))])
    by_port = {(p.device, p.port): p for p in rows.ports}
    host = by_port[("cmp-su1-leaf1", "swp1")]
    assert (host.role, host.peer, host.cable, host.rail, host.plane) == ("host", "gpu01", "cmp-000009", "1", "compute")
    assert by_port[("cmp-su2-leaf1", "swp1")].peer == "gpu03"
    compute_up = sorted((p.device, p.port, p.peer) for p in rows.ports if p.role == "uplink" and p.plane == "compute")
    # Each of the four leaves' two uplinks (one per spine): every rail's traffic crosses both spines.
    assert len(compute_up) == 8 and {peer for _, _, peer in compute_up} == {"cmp-spine1", "cmp-spine2"}
    assert {d for d, _, _ in compute_up} == {"cmp-su1-leaf1", "cmp-su1-leaf2", "cmp-su2-leaf1", "cmp-su2-leaf2"}
    down = by_port[("cmp-spine1", "swp1")]  # the spine's end of cmp-su1-leaf1's first uplink
    assert (down.role, down.peer, down.cable) == ("downlink", "cmp-su1-leaf1", by_port[("cmp-su1-leaf1", "swp3")].cable)
    assert {(n.host, n.interface, n.leaf) for n in rows.nics if n.plane == "compute"} == {
        ("gpu01", "eth1", "cmp-su1-leaf1"), ("gpu01", "eth2", "cmp-su1-leaf2"),
        ("gpu03", "eth1", "cmp-su2-leaf1"), ("gpu03", "eth2", "cmp-su2-leaf2"),
    }  # fmt: skip
    assert len(by_port) == len(rows.ports)  # one row per port


def test_a_job_under_one_leaf_per_rail_crosses_no_compute_uplink_and_unknown_nodes_are_counted(plan):
    (rows,) = JobPorts(plan).join([RunningJob("5", "bob", ("gpu01", "gpu02", "cpu99"))])
    assert not [p for p in rows.ports if p.plane == "compute" and p.role != "host"]
    assert rows.unplanned == ("cpu99",)


def test_a_job_s_rows_are_kept_while_it_runs_and_dropped_when_it_ends(plan):
    ports = JobPorts(plan)
    job = RunningJob("5", "bob", ("gpu01",))
    (first,) = ports.join([job])
    (again,) = ports.join([job])
    assert again is first  # not placed again
    ports.join([])
    (after,) = ports.join([job])
    assert after is not first  # an ended job's rows went with it


# -- the collector ------------------------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _scrape(collector: JobCollector) -> dict[str, list[Any]]:
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()  # what Prometheus reads, through the client's own parser
    out: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(text):
        if family.samples:  # a family with no series is its HELP and TYPE lines only
            out.setdefault(family.name, []).extend(family.samples)
    return out


def test_the_collector_serves_the_join_and_nothing_stale(plan):
    clock = _Clock()
    answers: list[Any] = [
        _squeue((81234, "alice", "gpu[01,03]", "RUNNING"), (81235, "bob", "gpu02", "RUNNING")),
        SchedulerError("squeue --json failed (exit 1): slurm_load_jobs error: Unable to contact slurm controller"),
        _squeue((81235, "bob", "gpu02", "RUNNING")),  # 81234 ended
    ]

    def read() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    collector = JobCollector(plan, read, interval=15, clock=clock)
    first = _scrape(collector)
    assert [s.value for s in first["gpufabric_job_scheduler_up"]] == [1.0]
    jobs = {s.labels["job_id"] for s in first["gpufabric_job_port_info"]}
    assert jobs == {"81234", "81235"}
    row = next(
        s.labels for s in first["gpufabric_job_port_info"]
        if s.labels["device"] == "cmp-su1-leaf1" and s.labels["port"] == "swp1"
    )  # fmt: skip
    assert row == {"job_id": "81234", "user": "alice", "device": "cmp-su1-leaf1", "port": "swp1", "role": "host"}
    assert {s.labels["job_id"] for s in first["gpufabric_job_nic_info"]} == {"81234", "81235"}
    assert [s.value for s in first["gpufabric_jobs_running"]] == [2.0]
    # Within the interval the last answer serves: the scheduler is not asked again.
    clock.now += 10
    assert len(_scrape(collector)["gpufabric_job_port_info"]) == len(first["gpufabric_job_port_info"])
    assert len(answers) == 2
    # The scheduler fails: no job series at all, and up 0 (never the jobs of the last answer).
    clock.now += 10
    failed = _scrape(collector)
    assert [s.value for s in failed["gpufabric_job_scheduler_up"]] == [0.0]
    assert "gpufabric_job_port_info" not in failed and "gpufabric_job_nic_info" not in failed
    # It answers again, without job 81234: 81234's series are gone.
    clock.now += 20
    after = _scrape(collector)
    assert {s.labels["job_id"] for s in after["gpufabric_job_port_info"]} == {"81235"}
    assert [s.value for s in after["gpufabric_job_scheduler_up"]] == [1.0]


def test_an_answer_older_than_its_age_limit_is_not_served(plan):
    """Served on a thread of its own, a reader that hangs leaves the last answer aging: past max_age it is
    dropped, not served as if the jobs were still running."""
    clock = _Clock()
    collector = JobCollector(plan, lambda: _squeue((1, "alice", "gpu01", "RUNNING")), interval=15, clock=clock)
    collector.refresh()
    collector._thread = object()  # type: ignore[assignment]  # as if served: scrapes never read inline
    assert _scrape(collector)["gpufabric_job_port_info"]
    clock.now += collector.max_age + 1
    late = _scrape(collector)
    assert "gpufabric_job_port_info" not in late and late["gpufabric_job_scheduler_up"][0].value == 0.0


def test_the_docs_list_every_job_metric():
    text = (ROOT / "docs" / "telemetry.md").read_text()
    assert markdown() in text
    assert set(JOB_METRICS) <= set(text.split("`"))


# -- the rules under promtool -------------------------------------------------------------------------------

HOST = {"plane": "compute", "device": "cmp-su1-leaf1", "port": "swp1", "rail": "1", "role": "host", "peer": "gpu01",
        "cable": "cmp-000009"}  # fmt: skip
UPLINK = {**HOST, "port": "swp3", "role": "uplink", "peer": "cmp-spine1", "cable": "cmp-000001"}
OTHER = {**HOST, "device": "cmp-su2-leaf1", "port": "swp3", "role": "uplink", "cable": "cmp-000005"}
ALICE = {"job_id": "81234", "user": "alice"}
BOB = {"job_id": "81235", "user": "bob"}
COUNTER = {"role": "leaf", "peer_port": "swp1", "unit": "1"}
PROBE = {"plane": "compute", "rail": "1", "src": "gpu01", "src_leaf": "cmp-su1-leaf1", "dst_leaf": "cmp-su2-leaf1"}
NIC = {"plane": "compute", "host": "gpu01", "interface": "eth1", "rail": "1", "leaf": "cmp-su1-leaf1"}


def _row(labels: dict[str, str]) -> dict[str, str]:
    """The join's keys of a port: what gpufabric_job_port_info carries besides the job."""
    return {k: labels[k] for k in ("device", "port", "role")}


def _text(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def _series(metric: str, labels: dict[str, str], values: str) -> dict[str, str]:
    return {"series": f"{metric}{{{_text(labels)}}}", "values": values}


def _port(labels: dict[str, str], **extra: str) -> dict[str, str]:
    """A counter's own labels for a port (the exporter's PORT labels), not the job row's."""
    return {"plane": labels["plane"], "device": labels["device"], "role": "leaf", "port": labels["port"],
            "peer": labels["peer"], "peer_port": "swp1", "rail": labels["rail"], "unit": "1",
            "cable": labels["cable"], **extra}  # fmt: skip


SERIES = [
    # Job 81234 runs until 10m (its info series goes stale there, as Prometheus marks a series a scrape lacks);
    # job 81235 runs on. Both are behind cmp-su1-leaf1 swp3: an uplink two jobs share.
    _series("gpufabric_job_port_info", {**ALICE, **_row(HOST)}, "1x9 stale"),
    _series("gpufabric_job_port_info", {**ALICE, **_row(UPLINK)}, "1x9 stale"),
    _series("gpufabric_job_port_info", {**BOB, **_row(UPLINK)}, "1x30"),
    _series("gpufabric_job_nic_info", {**ALICE, "host": "gpu01", "interface": "eth1"}, "1x9 stale"),
    # The shared uplink errs at 1 frame a second from 3m; the host port is clean; a port on no job's footprint
    # errs too and must be no job's.
    _series("gpufabric_interface_errors_total", _port(UPLINK, direction="rx"), "0 0 0+60x30"),
    _series("gpufabric_interface_errors_total", _port(UPLINK, direction="tx"), "0x32"),
    _series("gpufabric_interface_errors_total", _port(HOST, direction="rx"), "0x32"),
    _series("gpufabric_interface_errors_total", _port(OTHER, direction="rx"), "0+600x32"),
    _series("gpufabric_link_up", _port(HOST), "1x32"),
    # gpu01 eth1 sees RoCE packets out of sequence from 3m.
    _series("gpufabric_nic_out_of_sequence_total", NIC, "0 0 0+5x30"),
    _series("gpufabric_nic_link_up", NIC, "1x32"),
    # gpu01, one host of 81234 with two NICs, probes two peers once a second and loses 0.1 a second toward one;
    # gpu07, on no job, loses every probe and must be no job's.
    _series("gpufabric_job_nic_info", {**ALICE, "host": "gpu01", "interface": "eth2"}, "1x9 stale"),
    _series("gpufabric_probe_sent_total", {**PROBE, "dst": "gpu03"}, "0+60x32"),
    _series("gpufabric_probe_lost_total", {**PROBE, "dst": "gpu03"}, "0+6x32"),
    _series("gpufabric_probe_sent_total", {**PROBE, "dst": "gpu02"}, "0+60x32"),
    _series("gpufabric_probe_lost_total", {**PROBE, "dst": "gpu02"}, "0x32"),
    _series("gpufabric_probe_sent_total", {**PROBE, "src": "gpu07", "dst": "gpu08"}, "0+60x32"),
    _series("gpufabric_probe_lost_total", {**PROBE, "src": "gpu07", "dst": "gpu08"}, "0+60x32"),
    # The scheduler stops answering at 2m.
    _series("gpufabric_job_scheduler_up", {"scheduler": "slurm"}, "1 1 0x30"),
]


def _port_alert(who: dict[str, str], row: dict[str, str], reason: str) -> dict[str, Any]:
    return {
        "exp_labels": {**who, **row, "reason": reason, "severity": "warning"},
        "exp_annotations": {
            "summary": f"job {who['job_id']} ({who['user']}): {row['device']} {row['port']} ({row['role']} to "
            f"{row['peer']}, cable {row['cable']}): {reason}"
        },
    }


CHECKS = [
    {"eval_time": "2m", "alertname": "GpufabricJobFootprintDegraded", "exp_alerts": []},
    {
        "eval_time": "5m",
        "alertname": "GpufabricJobFootprintDegraded",
        "exp_alerts": [_port_alert(ALICE, UPLINK, "errored frames"), _port_alert(BOB, UPLINK, "errored frames")],
    },
    # 81234 ended at 10m: only 81235 is named.
    {
        "eval_time": "12m",
        "alertname": "GpufabricJobFootprintDegraded",
        "exp_alerts": [_port_alert(BOB, UPLINK, "errored frames")],
    },
    {
        "eval_time": "5m",
        "alertname": "GpufabricJobNicDegraded",
        "exp_alerts": [
            {
                "exp_labels": {**ALICE, **NIC, "reason": "RoCE packets out of sequence (loss)", "severity": "warning"},
                "exp_annotations": {
                    "summary": "job 81234 (alice): gpu01 eth1 (rail 1, to cmp-su1-leaf1): RoCE packets out of "
                    "sequence (loss)"
                },
            }
        ],
    },
    {"eval_time": "12m", "alertname": "GpufabricJobNicDegraded", "exp_alerts": []},
    {"eval_time": "5m", "alertname": "GpufabricJobSchedulerUnread", "exp_alerts": []},
    {
        "eval_time": "8m",
        "alertname": "GpufabricJobSchedulerUnread",
        "exp_alerts": [
            {
                "exp_labels": {"scheduler": "slurm", "severity": "warning"},
                "exp_annotations": {
                    "summary": "the exporter has no recent answer from slurm: the job series are absent (running "
                    "jobs are not joined to the fabric)"
                },
            }
        ],
    },
]
ERRORS = RECORDS["errors"]
RECORDED_AT = [
    # 1 errored frame a second on the shared uplink, counted for each job it carries; none from the other port.
    {"expr": ERRORS, "eval_time": "8m",
     "exp_samples": [{"labels": f"{ERRORS}{{{_text(ALICE)}}}", "value": 1},
                     {"labels": f"{ERRORS}{{{_text(BOB)}}}", "value": 1}]},
    # After 81234 ended: 81235 only, nothing left of 81234.
    {"expr": ERRORS, "eval_time": "15m", "exp_samples": [{"labels": f"{ERRORS}{{{_text(BOB)}}}", "value": 1}]},
    {"expr": f'{ERRORS}{{job_id="81234"}}', "eval_time": "15m", "exp_samples": []},
    {"expr": f'{RECORDS["flaps"]}{{job_id="81234"}}', "eval_time": "15m", "exp_samples": []},
    # The share of the probes from 81234's host that were lost: 0.1 of 2 a second (its two NICs' rows count once).
    {"expr": RECORDS["probe_loss"], "eval_time": "8m",
     "exp_samples": [{"labels": f'{RECORDS["probe_loss"]}{{{_text(ALICE)}}}', "value": 0.05}]},
    {"expr": RECORDS["probe_loss"], "eval_time": "15m", "exp_samples": []},
]  # fmt: skip


def _promtool_test(tmp_path: Path, rules: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    tests = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {"interval": "1m", "input_series": SERIES, "alert_rule_test": CHECKS, "promql_expr_test": RECORDED_AT}
        ],
    }
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules, sort_keys=False, width=1000))
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests, sort_keys=False, width=1000))
    return subprocess.run(
        [_promtool(), "test", "rules", "tests.yml"], cwd=tmp_path, capture_output=True, text=True, check=False
    )


def test_the_job_rules_name_the_job_and_the_part_and_leave_nothing_of_an_ended_job(tmp_path):
    rules = {"groups": [job_group(JobThresholds(hold="1m", scheduler_hold="5m"))]}
    done = _promtool_test(tmp_path, rules)
    assert done.returncode == 0, done.stdout + done.stderr
    check = subprocess.run(
        [_promtool(), "check", "rules", str(tmp_path / "rules.yml")], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0 and "SUCCESS: 12 rules found" in check.stdout, check.stdout + check.stderr


def test_the_join_the_counter_side_cannot_take_fails_on_a_shared_uplink(tmp_path):
    """The join written the other way round (counter * on(device, port) group_left(job_id) info) breaks on a port
    two jobs share: the tests above would catch it."""
    group = job_group(JobThresholds(hold="1m"))
    naive = (
        "sum by (job_id, user) (sum by (device, port) (rate(gpufabric_interface_errors_total[5m]))"
        " * on(device, port) group_left(job_id, user) gpufabric_job_port_info)"
    )
    rules = group["rules"]
    assert isinstance(rules, list)
    rules[0] = {"record": RECORDS["errors"], "expr": naive}
    done = _promtool_test(tmp_path, {"groups": [group]})
    assert done.returncode != 0
    assert "many-to-many" in done.stdout + done.stderr or "duplicate" in done.stdout + done.stderr


def test_slurm_s_squeue_is_read_through_its_own_command_and_a_failure_is_a_scheduler_error():
    import subprocess as sp

    from gpufabric.scheduler.slurm import Slurm

    asked: list[list[str]] = []

    def runner(args):
        asked.append(list(args))
        return sp.CompletedProcess(args, 0, RECORDED.read_text(), "")

    assert read_running(Slurm(runner=runner).squeue())[0].nodes == ("gpu01",)
    assert asked == [["squeue", "--json"]]  # read-only: nothing else is asked of Slurm

    def failing(args):
        return sp.CompletedProcess(args, 1, "", "slurm_load_jobs error: Unable to contact slurm controller")

    with pytest.raises(SchedulerError, match="Unable to contact"):
        Slurm(runner=failing).squeue()


def test_the_dashboard_has_a_job_row_over_a_job_id_variable(plan):
    from gpufabric.telemetry.dashboard import dashboard

    board = dashboard(plan)
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["job_id"]["query"]["query"] == "label_values(gpufabric_job_port_info, job_id)"
    row = next(i for i, p in enumerate(board["panels"]) if p["type"] == "row" and p["title"] == "jobs ($job_id)")
    panels = board["panels"][row + 1 :]
    assert {p["title"] for p in panels} >= {
        "job: errors and discards on its ports",
        "job: busiest uplink against its rate",
    }
    for panel in panels:  # every query of the row is the chosen jobs'
        for target in panel["targets"]:
            assert 'job_id=~"$job_id"' in target["expr"], target["expr"]
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))


def test_one_exporter_shard_serves_the_jobs_and_no_login_is_needed_for_them():
    from gpufabric.fleet.args import FleetArgs
    from gpufabric.telemetry.job_join import SHARD_KEY
    from gpufabric.telemetry.job_service import job_collector
    from gpufabric.telemetry.shards import parse_shard, shard_of

    args = FleetArgs(file=str(ROOT / "inventory" / "fabric.yml"))  # no switch password in the environment
    owner = shard_of(SHARD_KEY, 4)
    served = [job_collector(args, "slurm", shard=parse_shard(f"{i}/4")) for i in range(4)]
    assert [i for i, c in enumerate(served) if c is not None] == [owner]
    collector = served[owner]
    assert collector is not None and collector.read.__name__ == "squeue" and collector.scheduler == "slurm"
