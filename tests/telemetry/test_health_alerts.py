"""GPU, host NIC and lossless-buffer alert rules under promtool (Prometheus's own rule evaluator): each alert
fires on the series that should fire it, naming the part with the plan's labels, and not on the ones that
should not (an application's Xid, an old counter, a one-minute blip, a short burst); the tests can fail (a rule
turned onto the wrong series misses); the rules watch dcgm-exporter's names as its default counters CSV
writes them and the exporter's own families."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufabric.telemetry.health_rules import DCGM_METRICS, HealthThresholds, health_groups
from gpufabric.telemetry.metrics import METRICS
from gpufabric.telemetry.rules import rules_yaml
from tests.telemetry.test_ib_alerts import _promtool

GPU0 = {"gpu": "0", "UUID": "GPU-5fd4", "device": "nvidia0", "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "gpu01"}
GPU1 = {**GPU0, "gpu": "1", "UUID": "GPU-77a1", "device": "nvidia1"}
NIC = {"plane": "compute", "interface": "eth1", "rail": "1", "leaf": "leaf-r1-1"}
QUEUE = {
    "plane": "compute", "device": "leaf-r1-1", "role": "leaf", "peer_port": "eth1", "rail": "1", "unit": "1",
    "queue": "3", "buffer": "egress-queue",
}  # fmt: skip


def _text(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def _series(metric: str, labels: dict[str, str], values: str) -> dict[str, str]:
    return {"series": f"{metric}{{{_text(labels)}}}", "values": values}


def _alert(name: str, at: str, fired: list[tuple[dict[str, str], str]]) -> dict[str, Any]:
    return {
        "eval_time": at,
        "alertname": name,
        "exp_alerts": [{"exp_labels": labels, "exp_annotations": {"summary": summary}} for labels, summary in fired],
    }


def _run(tmp_path: Path, series: list[dict[str, str]], checks: list[dict[str, Any]], rules: str | None = None) -> str:
    """promtool's verdict on `checks` over `series` at 1m steps ("" when every check passed)."""
    tests = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": checks}],
    }
    (tmp_path / "rules.yml").write_text(rules if rules is not None else rules_yaml())
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests, sort_keys=False, width=400))
    done = subprocess.run(
        [_promtool(), "test", "rules", "tests.yml"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    return "" if done.returncode == 0 else done.stdout + done.stderr


# -- GPUs -------------------------------------------------------------------------------------------------


def _gpu(labels: dict[str, str], severity: str) -> dict[str, str]:
    return {**labels, "node": labels["Hostname"], "severity": severity}


def _gpu_name(labels: dict[str, str]) -> str:
    return f"{labels['Hostname']} GPU {labels['gpu']} ({labels['UUID']})"


def _gpu_case() -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    series = [
        # GPU 0 falls off the bus (Xid 79); GPU 1 reports Xid 13, an application's fault: no drain.
        _series("DCGM_FI_DEV_XID_ERRORS", GPU0, "0 0 79 79 79 79"),
        _series("DCGM_FI_DEV_XID_ERRORS", GPU1, "0 0 13 13 13 13"),
        # Two uncorrectable ECC errors on GPU 0; none on GPU 1.
        _series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", GPU0, "0 0 2 2 2 2"),
        _series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", GPU1, "0 0 0 0 0 0"),
        # An NVLink recovery on GPU 0 at 3m; GPU 1's counter holds an old value.
        _series("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", GPU0, "0 0 0 1 1 1"),
        _series("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", GPU1, "5 5 5 5 5 5"),
        # CRC errors: 2/s on GPU 0 (fires), 0.5/s on GPU 1 (under the 1/s threshold).
        _series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", GPU0, "0+120x15"),
        _series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", GPU1, "0+30x15"),
        # Row remapping fails on GPU 1 only.
        _series("DCGM_FI_DEV_ROW_REMAP_FAILURE", GPU0, "0 0 0 0 0 0"),
        _series("DCGM_FI_DEV_ROW_REMAP_FAILURE", GPU1, "0 0 1 1 1 1"),
    ]
    g0, g1 = _gpu_name(GPU0), _gpu_name(GPU1)
    checks = [
        _alert("GpufabricGpuXidError", "1m", []),
        _alert(
            "GpufabricGpuXidError",
            "3m",
            [(_gpu(GPU0, "critical"), f"{g0}: Xid 79, a fault the GPU needs a reset (or service) to clear")],
        ),
        _alert("GpufabricGpuEccUncorrectable", "1m", []),
        _alert(
            "GpufabricGpuEccUncorrectable",
            "3m",
            [(_gpu(GPU0, "critical"), f"{g0}: 2 uncorrectable ECC errors since the driver loaded")],
        ),
        _alert("GpufabricGpuNvlinkRecovery", "2m", []),
        _alert(
            "GpufabricGpuNvlinkRecovery",
            "4m",
            [(_gpu(GPU0, "critical"), f"{g0}: an NVLink recovered from errors (the link retrained)")],
        ),
        _alert(
            "GpufabricGpuNvlinkErrors",
            "12m",
            [(_gpu(GPU0, "warning"), f"{g0}: NVLink CRC or replay errors at 2/s")],
        ),
        _alert("GpufabricGpuRowRemapFailure", "1m", []),
        _alert(
            "GpufabricGpuRowRemapFailure",
            "3m",
            [
                (
                    _gpu(GPU1, "critical"),
                    f"{g1}: row remapping failed: the GPU's memory cannot retire a bad row any more",
                )
            ],
        ),
    ]
    return series, checks


def test_gpu_alerts_fire_on_what_should_fire_them_and_not_on_the_rest(tmp_path):
    series, checks = _gpu_case()
    assert _run(tmp_path, series, checks) == ""


# -- host NICs --------------------------------------------------------------------------------------------


def _nic(host: str, **extra: str) -> dict[str, str]:
    return {**NIC, "host": host, **extra}


def _nic_name(host: str) -> str:
    return f"{host} eth1 (rail 1, to leaf-r1-1)"


def _nic_case() -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    a, b, c = _nic("gpu01"), _nic("gpu02"), _nic("gpu03")
    series = [
        # gpu01's link goes down at 2m and stays down; gpu02's is down for one scrape only (under the 1m hold).
        _series("gpufabric_nic_link_up", a, "1 1 0 0 0 0 0"),
        _series("gpufabric_nic_link_up", b, "1 1 0 1 1 1 1"),
        # gpu01's carrier changes at 3m; gpu02's count is old.
        _series("gpufabric_nic_carrier_changes_total", a, "2 2 2 3 3 3 3"),
        _series("gpufabric_nic_carrier_changes_total", b, "5 5 5 5 5 5 5"),
        # Errored frames received on gpu01 at 3m; gpu02's count is old.
        _series("gpufabric_nic_errors_total", _nic("gpu01", direction="rx"), "0 0 0 10 10 10 10"),
        _series("gpufabric_nic_errors_total", _nic("gpu02", direction="rx"), "7 7 7 7 7 7 7"),
        # A fatal AER error on gpu01; one correctable on gpu02 (neither uncorrectable nor a high rate);
        # gpu03 corrects 30 a minute: a marginal link.
        _series("gpufabric_nic_pcie_aer_errors_total", _nic("gpu01", severity="fatal"), "0 0 0 1 1 1 1"),
        _series("gpufabric_nic_pcie_aer_errors_total", _nic("gpu02", severity="correctable"), "0 0 0 1 1 1 1"),
        _series("gpufabric_nic_pcie_aer_errors_total", _nic("gpu03", severity="correctable"), "0+30x10"),
    ]
    del c
    checks = [
        _alert("GpufabricNicLinkDown", "2m", []),
        _alert(
            "GpufabricNicLinkDown", "4m", [({**a, "severity": "critical"}, f"{_nic_name('gpu01')}: the link is down")]
        ),
        _alert(
            "GpufabricNicLinkFlapped",
            "4m",
            [({**a, "severity": "warning"}, f"{_nic_name('gpu01')}: the link went down or up")],
        ),
        _alert("GpufabricNicErrors", "2m", []),
        _alert(
            "GpufabricNicErrors",
            "4m",
            [
                (
                    {**_nic("gpu01", direction="rx"), "severity": "warning"},
                    f"{_nic_name('gpu01')}: 10 errored frames (rx)",
                )
            ],
        ),
        _alert(
            "GpufabricNicPcieAerUncorrectable",
            "4m",
            [
                (
                    {**_nic("gpu01", severity="fatal"), "severity": "critical"},
                    f"{_nic_name('gpu01')}: PCIe fatal AER errors: the NIC's PCIe link lost data",
                )
            ],
        ),
        _alert(
            "GpufabricNicPcieAerCorrectable",
            "6m",
            [
                (
                    {**_nic("gpu03", severity="correctable"), "severity": "warning"},
                    f"{_nic_name('gpu03')}: 30 correctable PCIe AER errors a minute: a marginal PCIe link",
                )
            ],
        ),
    ]
    return series, checks


def test_nic_alerts_fire_on_what_should_fire_them_and_not_on_the_rest(tmp_path):
    series, checks = _nic_case()
    assert _run(tmp_path, series, checks) == ""


# -- lossless buffers -------------------------------------------------------------------------------------


def _queue(port: str, peer: str) -> dict[str, str]:
    return {**QUEUE, "port": port, "peer": peer}


def _buffer_case() -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    deep, burst, calm, now = (
        _queue("swp1", "gpu01"),
        _queue("swp2", "gpu02"),
        _queue("swp3", "gpu03"),
        _queue("swp4", "gpu04"),
    )
    series = [_series("gpufabric_queue_ecn_max_bytes", q, "1500000x12") for q in (deep, burst, calm, now)]
    series += [
        # swp1's queue peaks above the ECN maximum scrape after scrape: fires after the 5m hold.
        _series("gpufabric_queue_buffer_watermark_bytes", deep, "2000000x12"),
        # swp2: one burst past it, then calm: never fires. swp3: always under it.
        _series("gpufabric_queue_buffer_watermark_bytes", burst, "2000000 2000000 100000x10"),
        _series("gpufabric_queue_buffer_watermark_bytes", calm, "1000000x12"),
        # swp4: an OS that reports occupancy only, held above the threshold: fires too.
        _series("gpufabric_queue_buffer_bytes", now, "1600000x12"),
    ]
    name = "leaf-r1-1 {} (to {}) egress-queue 3"
    tail = "above the ECN maximum threshold: DCQCN is not holding the queue, PFC pauses come next"
    checks = [
        _alert("GpufabricLosslessQueueDeep", "3m", []),
        _alert(
            "GpufabricLosslessQueueDeep",
            "7m",
            [
                ({**deep, "severity": "warning"}, f"{name.format('swp1', 'gpu01')}: 1.907MiB, {tail}"),
                ({**now, "severity": "warning"}, f"{name.format('swp4', 'gpu04')}: 1.526MiB, {tail}"),
            ],
        ),
    ]
    return series, checks


def test_the_watermark_alert_fires_on_a_queue_held_deep_not_on_a_burst(tmp_path):
    series, checks = _buffer_case()
    assert _run(tmp_path, series, checks) == ""


# -- the tests can fail -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "alert", "wrong", "right"),
    [
        (_gpu_case, "GpufabricGpuEccUncorrectable", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
        (_nic_case, "GpufabricNicLinkDown", "gpufabric_link_up", "gpufabric_nic_link_up"),
        (
            _buffer_case,
            "GpufabricLosslessQueueDeep",
            "gpufabric_queue_ecn_max_bytes * 2",
            "gpufabric_queue_ecn_max_bytes",
        ),
    ],
)
def test_a_rule_on_the_wrong_series_fails_its_test(tmp_path, case, alert, wrong, right):
    rules = yaml.safe_load(rules_yaml())
    for group in rules["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == alert:
                assert right in rule["expr"]
                rule["expr"] = rule["expr"].replace(right, wrong)
    series, checks = case()
    found = _run(tmp_path, series, checks, yaml.safe_dump(rules))
    assert alert in found


# -- what the rules watch ---------------------------------------------------------------------------------

# dcgm-exporter's etc/default-counters.csv (NVIDIA/dcgm-exporter, 3.x-4.8): the fields the rules read, and
# whether the file collects them by default (uncommented) or ships them commented out.
DEFAULT_CSV = {
    "DCGM_FI_DEV_XID_ERRORS": True,
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": True,
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": False,
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL": False,
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": False,
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL": False,
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": False,
}


def _words(group: dict[str, object]) -> set[str]:
    rules: Any = group["rules"]
    text = " ".join(str(r["expr"]) for r in rules)
    for ch in "(){}[],=~*":
        text = text.replace(ch, " ")
    return set(text.split())


def test_the_gpu_rules_read_only_dcgm_exporter_names_and_the_others_only_served_metrics():
    gpu, nic, buffers, bmc = health_groups()
    assert {w for w in _words(gpu) if w.startswith("DCGM_")} == set(DCGM_METRICS) == set(DEFAULT_CSV)
    for group in (nic, buffers, bmc):
        assert {w for w in _words(group) if w.startswith("gpufabric_")} <= set(METRICS)


def test_the_docs_show_the_counters_file_lines_the_gpu_rules_need():
    docs = (Path(__file__).parents[2] / "docs" / "telemetry.md").read_text()
    for name, by_default in DEFAULT_CSV.items():
        assert name in docs
        if not by_default:
            assert f"{name}, counter," in docs  # the line to add to dcgm-exporter's counters file


def test_the_thresholds_refuse_what_prometheus_would_not_take():
    with pytest.raises(ValueError):
        HealthThresholds(buffer_hold="5 minutes")
    with pytest.raises(ValueError):
        HealthThresholds(xids=())
    assert "DCGM_FI_DEV_XID_ERRORS == 31" in str(health_groups(HealthThresholds(xids=(31,)))[0])
