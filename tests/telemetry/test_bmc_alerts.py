"""The BMC alert rules under promtool (Prometheus's own rule evaluator), on the series the exporter produces
from a BMC's answers: a failed power supply, a failed fan, a temperature past its critical threshold and a
health rollup Critical each fire, naming the server with the plan's labels; the healthy parts and the
sushy-tools emulator's healthy server fire nothing; and the remediation loop maps each firing alert to that
server and drains it (a FAKE scheduler here; tests/lab/test_remediate_bmc_lab.py drains the lab's Slurm)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufabric.hidden import Hidden
from gpufabric.remediate import Guards, Remediator, parse_payload, target_of
from gpufabric.telemetry.bmc import BmcTarget, read_bmc, samples
from gpufabric.telemetry.health_rules import bmc_group
from gpufabric.telemetry.metrics import METRICS
from gpufabric.telemetry.read import Sample
from gpufabric.telemetry.redfish import Endpoint
from gpufabric.telemetry.rules import rules_yaml
from tests.conftest import INVENTORY, example_plan
from tests.remediate.remediate_fakes import FakeScheduler, alert, payload
from tests.telemetry.redfish_doubles import PASSWORD, USER, Service, free_port, newer_model, older_model
from tests.telemetry.test_ib_alerts import _promtool

BASE = {"node": "gpu01", "rack": "r12", "position": "17", "bmc": "172.16.0.21"}


def _read(pages: dict[str, Any], node: str = "gpu01") -> list[Sample]:
    target = BmcTarget(node, "172.16.0.21", "r12", "17")
    with Service(pages) as bmc:
        endpoint = Endpoint(node, "127.0.0.1", bmc.port, "http", USER, Hidden(PASSWORD), plain_http=True)
        reading = read_bmc(target, endpoint)
    assert reading.error is None, reading.error
    return samples(reading)


def _input(series: list[Sample], steps: int = 5) -> list[dict[str, str]]:
    """Each sample as a promtool input series holding its value for `steps` minutes."""
    out = []
    for s in series:
        labels = ",".join(f'{k}="{v}"' for k, v in s.labels.items())
        out.append({"series": f"{s.metric}{{{labels}}}", "values": " ".join([f"{s.value:g}"] * (steps + 1))})
    return out


def _run(tmp_path: Path, series: list[dict[str, str]], checks: list[dict[str, Any]]) -> str:
    tests = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": checks}],
    }
    (tmp_path / "rules.yml").write_text(rules_yaml())
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests, sort_keys=False, width=400))
    done = subprocess.run(
        [_promtool(), "test", "rules", "tests.yml"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    return "" if done.returncode == 0 else done.stdout + done.stderr


def _fired(labels: dict[str, str], summary: str) -> dict[str, Any]:
    return {"exp_labels": {**labels, "severity": "critical"}, "exp_annotations": {"summary": summary}}


PSU = {**BASE, "chassis": "1U", "psu": "1", "name": "Power Supply Bay 2"}
SYSTEM = {**BASE, "system": "437XR1138R2"}
FAN = {**BASE, "chassis": "HGX", "fan": "Fan2", "name": "Fan 2"}
SENSOR = {**BASE, "chassis": "HGX", "sensor": "GPU0_Temp", "name": "GPU0 Temp"}
WHO = "gpu01 (BMC 172.16.0.21)"


def test_a_failed_psu_fires_from_the_series_the_exporter_produces(tmp_path: Path):
    series = _input(_read(older_model()))
    checks = [
        {"eval_time": "0m", "alertname": "GpufabricBmcPsuFailed", "exp_alerts": []},  # for: 1m
        {
            "eval_time": "2m",
            "alertname": "GpufabricBmcPsuFailed",
            "exp_alerts": [_fired(PSU, f"{WHO}: power supply 1U Power Supply Bay 2 (1) is Critical")],
        },
        {
            "eval_time": "2m",
            "alertname": "GpufabricBmcHealthCritical",
            "exp_alerts": [_fired(SYSTEM, f"{WHO}: system 437XR1138R2 reports its health rollup Critical")],
        },
        {"eval_time": "2m", "alertname": "GpufabricBmcFanFailed", "exp_alerts": []},
        {"eval_time": "2m", "alertname": "GpufabricBmcTemperatureCritical", "exp_alerts": []},
        {"eval_time": "2m", "alertname": "GpufabricBmcUnread", "exp_alerts": []},
    ]
    assert _run(tmp_path, series, checks) == ""


def test_the_healthy_psu_fires_nothing(tmp_path: Path):
    """The same server with every power supply OK: the test above can fail (its alert comes from the PSU)."""
    series = _input(_read(older_model(psu2="OK")))
    checks = [
        {"eval_time": "3m", "alertname": name, "exp_alerts": []}
        for name in ("GpufabricBmcPsuFailed", "GpufabricBmcHealthCritical")
    ]
    assert _run(tmp_path, series, checks) == ""


def test_a_failed_fan_and_a_hot_sensor_fire_from_the_newer_model(tmp_path: Path):
    series = _input(_read(newer_model()))
    checks = [
        {
            "eval_time": "2m",
            "alertname": "GpufabricBmcFanFailed",
            "exp_alerts": [_fired(FAN, f"{WHO}: fan HGX Fan 2 (Fan2) is Critical")],
        },
        {
            "eval_time": "2m",
            "alertname": "GpufabricBmcTemperatureCritical",
            "exp_alerts": [_fired(SENSOR, f"{WHO}: temperature HGX GPU0 Temp at or past its critical threshold (91)")],
        },
        {"eval_time": "2m", "alertname": "GpufabricBmcPsuFailed", "exp_alerts": []},
        {"eval_time": "2m", "alertname": "GpufabricBmcHealthCritical", "exp_alerts": []},  # the system says Warning
    ]
    assert _run(tmp_path, series, checks) == ""


def test_the_sushy_emulator_healthy_server_fires_nothing(tmp_path: Path):
    from tests.telemetry.redfish_doubles import sushy_emulator, sushy_emulator_path

    if sushy_emulator_path() is None:
        pytest.skip("sushy-tools is not installed (the test extra)")
    port = free_port()
    with sushy_emulator(tmp_path / "emu", "127.0.0.1", port):
        endpoint = Endpoint("gpu01", "127.0.0.1", port, "http", USER, Hidden(PASSWORD), plain_http=True)
        reading = read_bmc(BmcTarget("gpu01", "172.16.0.21"), endpoint)
    assert reading.error is None
    names = [r["alert"] for r in bmc_group()["rules"]]  # type: ignore[index]
    checks = [{"eval_time": "3m", "alertname": name, "exp_alerts": []} for name in names]
    assert _run(tmp_path, _input(samples(reading)), checks) == ""


def test_an_unread_bmc_warns_after_its_hold(tmp_path: Path):
    down = [Sample("gpufabric_bmc_up", BASE, 0.0)]
    checks = [
        {"eval_time": "5m", "alertname": "GpufabricBmcUnread", "exp_alerts": []},
        {
            "eval_time": "11m",
            "alertname": "GpufabricBmcUnread",
            "exp_alerts": [
                {
                    "exp_labels": {**BASE, "severity": "warning"},
                    "exp_annotations": {
                        "summary": f"{WHO}: the BMC has not been read over Redfish (`gpufabric telemetry bmc "
                        "--once` says why)"
                    },
                }
            ],
        },
    ]
    assert _run(tmp_path, _input(down, 12), checks) == ""


def test_the_bmc_rules_read_only_served_metrics():
    rules: Any = bmc_group()["rules"]
    words = set(" ".join(r["expr"] for r in rules).replace("(", " ").split())
    assert {w for w in words if w.startswith("gpufabric_")} <= set(METRICS)


# -- the remediation loop: the alert's labels name the server, which is drained ----------------------------


@pytest.fixture
def plan():
    return example_plan(INVENTORY / "fabric.yml")


@pytest.mark.parametrize(
    ("labels", "part"),
    [
        ({"alertname": "GpufabricBmcPsuFailed", **PSU, "node": "gpu03"}, "gpu03:psu1"),
        ({"alertname": "GpufabricBmcFanFailed", **FAN, "node": "gpu03"}, "gpu03:fanFan2"),
        ({"alertname": "GpufabricBmcTemperatureCritical", **SENSOR, "node": "gpu03"}, "gpu03:temperatureGPU0_Temp"),
        ({"alertname": "GpufabricBmcHealthCritical", **SYSTEM, "node": "gpu03"}, "gpu03:system"),
    ],
)
def test_a_bmc_alert_names_its_server(plan, labels: dict[str, str], part: str):
    target = target_of(plan, labels)
    assert target is not None and target.nodes == ("gpu03",) and target.part == part


def test_a_bmc_alert_of_a_stranger_names_nobody_and_an_unread_bmc_is_left_to_a_person(plan):
    stranger = target_of(plan, {"alertname": "GpufabricBmcPsuFailed", **PSU, "node": "elsewhere"})
    assert stranger is not None and stranger.nodes == ()
    assert target_of(plan, {"alertname": "GpufabricBmcUnread", **BASE}) is None


def test_the_loop_drains_the_server_whose_psu_failed(plan, tmp_path: Path):
    fake = FakeScheduler([s.name for s in plan.servers])
    loop = Remediator(
        plan, [fake], Guards(max_share=0.5, max_unit_share=0.5, hold_down=600.0),
        state_path=tmp_path / "state.json", audit_path=tmp_path / "audit.jsonl",
    )  # fmt: skip
    failed = alert("GpufabricBmcPsuFailed")
    failed["labels"] = {"alertname": "GpufabricBmcPsuFailed", **PSU, "node": "gpu02"}
    loop.handle(parse_payload(json.dumps(payload(failed)).encode()))
    assert fake.drained == ["gpu02"]
    assert fake.calls == [("take_out", "gpu02", "gpufabric remediate: GpufabricBmcPsuFailed@gpu02:psu1")]
