# ruff: noqa: E501 (promtool test series are one line each)
"""The InfiniBand alert rules under promtool (Prometheus's own rule checker and evaluator): each alert fires
on the series that should fire it, with the port and its cable's far end named, and not on the ones that
should not; and every rule watches a family and counter `gpufabric ib metrics` serves."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpufabric.ib import alerts
from gpufabric.ib.counters import EXPORTED
from gpufabric.telemetry.rules import rules_yaml


def _promtool() -> str:
    cached = Path(__file__).resolve().parents[2] / ".cache" / "prometheus" / "usr" / "bin" / "promtool"
    found = shutil.which("promtool") or (str(cached) if cached.exists() else None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing: scripts/test.sh installs it (Debian's prometheus package)")
        pytest.skip("promtool is not installed (scripts/test.sh installs Debian's prometheus package)")
    return found


LABELS = 'fabric="pod",node="su1-leaf1",role="leaf",port="{port}",peer="{peer}",peer_port="{peer_port}",tier="{tier}",rail="1",su="1"'
NODE = LABELS.format(port=1, peer="dgx001 mlx5_0", peer_port=1, tier="node-leaf")
UPLINK = LABELS.format(port=33, peer="spine01", peer_port=1, tier="leaf-spine")


def _series(counter: str, labels: str, values: str) -> str:
    return (
        f"      - series: 'gpufabric_ib_port_counter{{{labels},counter=\"{counter}\"}}'\n        values: '{values}'\n"
    )


def _labels(labels: str) -> str:
    pairs = dict(re.findall(r'(\w+)="([^"]*)"', labels))
    return "{" + ", ".join(f'{k}: "{v}"' for k, v in pairs.items()) + "}"


# Each error counter: on the node port it steps up once (fires); on the uplink it holds a constant
# non-zero value (an old error, long cleared from the window: must not fire) and drops to 0 (a clear).
ERRORS = {
    "SymbolErrorCounter": (
        "GpufabricIbSymbolErrors",
        "warning",
        "symbol errors: a cable, transceiver or port going bad",
    ),
    "LinkDownedCounter": ("GpufabricIbLinkDowned", "critical", "the link went down (and came back): a flap"),
    "LinkErrorRecoveryCounter": (
        "GpufabricIbLinkErrorRecovery",
        "warning",
        "the link retrained to recover from errors",
    ),
    "PortRcvErrors": ("GpufabricIbReceiveErrors", "warning", "packets received with errors"),
    "PortXmitDiscards": (
        "GpufabricIbTransmitDiscards",
        "critical",
        "packets discarded for transmit (a port down or stuck on the path)",
    ),
}


def _tests() -> str:
    series = ""
    checks = ""
    for counter, (alert, severity, summary) in ERRORS.items():
        series += _series(counter, NODE, "0 0 0 0 1 1 1 1")
        series += _series(counter, UPLINK, "7 7 7 7 7 0 0 0")
        checks += f"""      - eval_time: 45s
        alertname: {alert}
        exp_alerts: []
      - eval_time: 90s
        alertname: {alert}
        exp_alerts:
          - exp_labels: {_labels(NODE + f',counter="{counter}",severity="{severity}"')}
            exp_annotations: {{summary: "su1-leaf1 port 1 (to dgx001 mlx5_0 port 1): {summary}"}}
"""
    # Congestion: the uplink waits 200,000 ticks/s for 7 minutes (fires after the 5-minute hold); the node
    # port has a 1-minute burst at that rate (must not fire).
    series += _series("PortXmitWait", UPLINK, "0+3000000x30")
    series += _series("PortXmitWait", NODE, "0+3000000x4 12000000x26")
    checks += f"""      - eval_time: 4m
        alertname: GpufabricIbCongestion
        exp_alerts: []
      - eval_time: 7m
        alertname: GpufabricIbCongestion
        exp_alerts:
          - exp_labels: {_labels(UPLINK + ',counter="PortXmitWait",severity="warning"')}
            exp_annotations: {{summary: "su1-leaf1 port 33 (to spine01 port 1): waits for credits 200k ticks/s: congestion downstream"}}
"""
    return f"rule_files: [rules.yml]\nevaluation_interval: 15s\ntests:\n  - interval: 15s\n    input_series:\n{series}    alert_rule_test:\n{checks}"


def _run(tmp_path: Path, rules: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "rules.yml").write_text(rules)
    (tmp_path / "tests.yml").write_text(_tests())
    return subprocess.run(
        [_promtool(), "test", "rules", "tests.yml"], capture_output=True, text=True, cwd=tmp_path, check=False
    )


def test_the_infiniband_rules_pass_promtool_check(tmp_path: Path) -> None:
    path = tmp_path / "rules.yml"
    path.write_text(rules_yaml())
    done = subprocess.run([_promtool(), "check", "rules", str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    groups = {g["name"]: g for g in yaml.safe_load(path.read_text())["groups"]}
    assert len(groups["gpufabric-infiniband"]["rules"]) == 6


def test_each_alert_fires_on_its_counter_and_not_on_old_errors_clears_or_bursts(tmp_path: Path) -> None:
    done = _run(tmp_path, rules_yaml())
    assert done.returncode == 0, done.stdout + done.stderr
    # The same tests fail against rules that watch the wrong counter: they can fail.
    swapped = rules_yaml().replace('counter="SymbolErrorCounter"', 'counter="PortRcvErrors"', 1)
    done = _run(tmp_path, swapped)
    assert done.returncode != 0 and "GpufabricIbSymbolErrors" in done.stdout + done.stderr


def test_every_rule_watches_a_served_counter() -> None:
    for rule in alerts.alert_group()["rules"]:  # type: ignore[union-attr]
        families = set(re.findall(r"(gpufabric_\w+)\{", rule["expr"]))
        counters = set(re.findall(r'counter="(\w+)"', rule["expr"]))
        assert families == {"gpufabric_ib_port_counter"} and counters and counters <= set(EXPORTED), rule
