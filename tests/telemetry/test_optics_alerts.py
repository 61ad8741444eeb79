"""The optics and link-quality rules under promtool (Prometheus's own rule checker and evaluator): each
alert fires on the series that should fire it and not on those that should not, the pre-FEC bit error
rate is the quotient it should be, and every rule watches a metric the exporter serves."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from gpufabric.telemetry.metrics import METRICS
from gpufabric.telemetry.optics_rules import BER, OpticsThresholds, optics_group
from gpufabric.telemetry.rules import rules_yaml
from tests.telemetry.test_ib_alerts import _promtool


def _end(device: str, port: str, peer: str = "spine1", role: str = "leaf") -> str:
    return f'plane="compute",device="{device}",role="{role}",port="{port}",peer="{peer}",rail="1"'


def _labels(labels: str) -> str:
    return "{" + ", ".join(f'{k}: "{v}"' for k, v in re.findall(r'(\w+)="([^"]*)"', labels)) + "}"


A, B, C, D = (
    _end("leaf1", "swp1"),
    _end("leaf1", "swp2"),
    _end("leaf2", "swp1"),
    _end("gpu001", "eth2", "leaf1", "server"),
)


def _series(metric: str, labels: str, values: str) -> str:
    return f"      - series: '{metric}{{{labels}}}'\n        values: '{values}'\n"


def _firing(alert: str, at: str, ends: list[str]) -> str:
    summary = SUMMARIES.get(alert, "")
    exp = "".join(
        f"          - exp_labels: {_labels(e)}\n            exp_annotations: {{summary: {_summary(e, summary)!r}}}\n"
        for e in ends
    )
    return (
        f"      - eval_time: {at}\n        alertname: {alert}\n        exp_alerts:\n{exp}"
        if ends
        else (f"      - eval_time: {at}\n        alertname: {alert}\n        exp_alerts: []\n")
    )


SUMMARIES = {
    r["alert"]: r["annotations"]["summary"]  # type: ignore[index]
    for r in optics_group()["rules"]  # type: ignore[attr-defined]
    if "alert" in r
}


def _summary(labels: str, template: str) -> str:
    """The summary Prometheus would write for these labels (only `{{ $labels.x }}` is used)."""
    found = dict(re.findall(r'(\w+)="([^"]*)"', labels))
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: found.get(m.group(1), ""), template)


def _with(labels: str, **more: str) -> str:
    return labels + "".join(f',{k}="{v}"' for k, v in more.items())


def _alerting(ends: list[tuple[str, dict[str, str]]], severity: str) -> list[str]:
    return [_with(e, **extra, severity=severity) for e, extra in ends]


def _tests() -> str:
    rx, low = "gpufabric_optics_rx_power_dbm", "gpufabric_optics_rx_power_low_warning_dbm"
    temp, high = "gpufabric_optics_temperature_celsius", "gpufabric_optics_temperature_high_warning_celsius"
    series = ""
    # Receive power: A's module warns at -10.3 dBm: lane 1 falls to -12 (fires), lane 2 stays at -9.5 (quiet:
    # above the module's own limit, though under the floor). B publishes no threshold: lane 1 at -11 is under
    # the -10 floor (fires), lane 2 at -9 is not. C lane 1 loses its light: -Inf (fires).
    series += _series(rx, _with(A, lane="1"), "-3x3 -12x10")
    series += _series(rx, _with(A, lane="2"), "-9.5x14")
    series += _series(low, A, "-10.3x14")
    series += _series(rx, _with(B, lane="1"), "-5x3 -11x10")
    series += _series(rx, _with(B, lane="2"), "-9x14")
    series += _series(rx, _with(C, lane="1"), "-2 -2 -2 -2" + " -Inf" * 10)
    # Temperature: A warns at 75 and runs at 72 (quiet), B has no threshold and runs at 72 (over 70: fires),
    # C warns at 75 and runs at 77 (fires).
    series += _series(temp, A, "72x14") + _series(high, A, "75x14")
    series += _series(temp, B, "72x14")
    series += _series(temp, C, "77x14") + _series(high, C, "75x14")
    # The bit error rate at 1m steps: A counts received bits (1e11/s) and corrects 1e6 bits/s: 1e-5 (quiet).
    # B counts them too and corrects 1e7/s: 1e-4 (fires). D (a server NIC) has no bit counter: its 400G
    # rate stands for it, and 4e7 corrected bits/s are 1e-4 (fires).
    series += _series("gpufabric_phy_received_bits_total", A, "0+6e12x14")
    series += _series("gpufabric_fec_corrected_bits_total", A, "0+6e7x14")
    series += _series("gpufabric_phy_received_bits_total", B, "0+6e12x14")
    series += _series("gpufabric_fec_corrected_bits_total", B, "0+6e8x14")
    series += _series("gpufabric_fec_corrected_bits_total", D, "0+2.4e9x14")
    series += _series("gpufabric_link_speed_bits_per_second", D, "4e11x14")
    # Uncorrectable codewords and symbol errors: one step on C (fires), an old constant on A (quiet).
    for counter in ("gpufabric_fec_uncorrected_codewords_total", "gpufabric_symbol_errors_total"):
        series += _series(counter, C, "0 0 0 0 0 0 3 3 3 3 3 3 3 3 3")
        series += _series(counter, A, "12x14")
    checks = ""
    checks += _firing("GpufabricOpticsRxPowerLow", "3m", [])
    checks += _firing(
        "GpufabricOpticsRxPowerLow",
        "8m",
        _alerting([(A, {"lane": "1"}), (B, {"lane": "1"}), (C, {"lane": "1"})], "warning"),
    )
    checks += _firing("GpufabricOpticsTemperatureHigh", "8m", _alerting([(B, {}), (C, {})], "warning"))
    checks += _firing("GpufabricPreFecBerHigh", "10m", _alerting([(B, {}), (D, {})], "warning"))
    checks += _firing("GpufabricFecUncorrectable", "5m", [])
    checks += _firing("GpufabricFecUncorrectable", "7m", _alerting([(C, {})], "critical"))
    checks += _firing("GpufabricSymbolErrors", "7m", _alerting([(C, {})], "critical"))
    ber = f"""      - expr: {BER}
        eval_time: 10m
        exp_samples:
          - labels: '{BER}{{{A}}}'
            value: 1e-5
          - labels: '{BER}{{{B}}}'
            value: 1e-4
          - labels: '{BER}{{{D}}}'
            value: 1e-4
"""
    return _file(series, checks) + f"    promql_expr_test:\n{ber}"


def _file(series: str, checks: str) -> str:
    """A promtool test file over rules.yml: one test group at 1m steps."""
    head = "rule_files: [rules.yml]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n"
    return f"{head}{series}    alert_rule_test:\n{checks}"


def _rising() -> str:
    """Two hours at 1m: E's rate is 1e-9 for an hour then 1e-7 (a hundredfold rise: fires); F's holds at 1e-7
    (high for a healthy link, but not rising: quiet); G rises tenfold but stays under the floor (quiet)."""
    e, f, g = _end("leaf3", "swp1"), _end("leaf3", "swp2"), _end("leaf3", "swp3")
    series = ""
    for labels, first, then in ((e, "6e2", "6e4"), (f, "6e4", "6e4"), (g, "6", "60")):
        series += _series("gpufabric_phy_received_bits_total", labels, "0+6e11x130")
        series += _series("gpufabric_fec_corrected_bits_total", labels, f"0+{first}x65 {float(first) * 66:g}+{then}x64")
    rising = "GpufabricPreFecBerRising"
    return _file(series, _firing(rising, "55m", []) + _firing(rising, "75m", _alerting([(e, {})], "warning")))


@pytest.mark.parametrize("case", ["thresholds", "rising"])
def test_optics_alerts_fire_on_what_should_fire_them(tmp_path, case):
    (tmp_path / "rules.yml").write_text(rules_yaml())
    (tmp_path / "tests.yml").write_text(_tests() if case == "thresholds" else _rising())
    done = subprocess.run(
        [_promtool(), "test", "rules", "tests.yml"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_rule_on_the_wrong_metric_fails_its_test(tmp_path):
    """The tests can fail: the receive-power rule turned onto the transmit power misses every low lane."""
    rules = yaml.safe_load(rules_yaml())
    for group in rules["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == "GpufabricOpticsRxPowerLow":
                rule["expr"] = rule["expr"].replace("gpufabric_optics_rx_power_dbm", "gpufabric_optics_tx_power_dbm")
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules))
    (tmp_path / "tests.yml").write_text(_tests())
    done = subprocess.run(
        [_promtool(), "test", "rules", "tests.yml"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode != 0 and "GpufabricOpticsRxPowerLow" in done.stdout + done.stderr


def test_every_optics_rule_watches_a_served_metric():
    group = optics_group(OpticsThresholds())
    words = {w for r in group["rules"] for w in str(r["expr"]).replace("(", " ").replace(")", " ").split()}  # type: ignore[index]
    used = {w.split("{")[0].split("[")[0] for w in words if w.startswith("gpufabric_")}
    assert used and used <= set(METRICS), used - set(METRICS)
