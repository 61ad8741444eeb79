"""`telemetry rules --for` takes a Prometheus duration only: anything else exits 2 and never reaches the rules file.

Prometheus reads `for:` with its model.ParseDuration: digits and units, largest unit first, each at most
once (`1h30m`, not `30m1h`), held in Go's int64 nanoseconds. The accepted values also pass promtool where it
is installed (scripts/test.sh installs Debian's prometheus package under .cache).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, run_in_process

HOSTILE = [
    "1m\nfoo: bar",  # a second YAML key
    "1m\n",  # a trailing newline
    "1m # x",
    "'1m'",
    "",
    "0",  # Prometheus accepts a bare 0; the brief's pattern (and gpufabric) wants a unit
    "1.5m",
    "-1m",
    "1 m",
    "30s1m",  # units out of order: Prometheus refuses it
    "1m1m",
    "1M",
    "{{ 1m }}",
    "\uff19\uff10s",  # full-width digits: not [0-9]
    "1" * 40 + "s",
    "106752d",  # beyond Go's int64 nanoseconds: promtool says "duration out of range"
    "106751d23h47m16s855ms",  # one millisecond beyond
]
GOOD = ["1m", "0s", "90s", "500ms", "1h30m", "2w", "1y2w3d4h5m6s7ms", "106751d23h47m16s854ms"]


@pytest.mark.parametrize("value", HOSTILE, ids=repr)
def test_a_value_that_is_not_a_duration_is_refused(value: str) -> None:
    from gpufabric.telemetry.rules import Thresholds, rules_yaml

    with pytest.raises(ValueError, match=r"Prometheus duration|longer than Prometheus can hold"):
        rules_yaml(Thresholds(hold=value))  # no way round the check: the rules are built from Thresholds


@pytest.mark.parametrize("value", GOOD)
def test_a_duration_reaches_every_rate_and_state_alert(value: str) -> None:
    from gpufabric.telemetry.rules import Thresholds, alert_rules, check_duration

    assert check_duration(value) == value
    fabric = next(g for g in alert_rules(Thresholds(hold=value))["groups"] if g["name"] == "gpufabric")
    assert sum(r["for"] == value for r in fabric["rules"]) >= 8


def test_the_command_exits_2_and_writes_no_rules_file(tmp_path: Path) -> None:
    out = tmp_path / "rules.yml"
    done = run_in_process("gpufabric", "telemetry", "rules", "--for", "1m\nlabels: {severity: none}", "-o", str(out))
    assert done.returncode == 2, done.stderr
    assert "--for" in done.stderr and "not a Prometheus duration" in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()


def _promtool() -> str | None:
    cached = ROOT / ".cache" / "prometheus" / "usr" / "bin" / "promtool"
    return shutil.which("promtool") or (str(cached) if cached.exists() else None)


def test_an_accepted_duration_makes_a_rules_file_promtool_accepts(tmp_path: Path) -> None:
    out = tmp_path / "rules.yml"
    done = run_in_process("gpufabric", "telemetry", "rules", "--for", "1h30m", "-o", str(out))
    assert done.returncode == 0, done.stderr
    fabric = next(g for g in yaml.safe_load(out.read_text())["groups"] if g["name"] == "gpufabric")
    assert {r["for"] for r in fabric["rules"]} == {"1h30m", "0s"}  # 0s: the flap and watchdog alerts
    promtool = _promtool()
    if promtool is None:
        pytest.skip("promtool is not installed (scripts/test.sh installs Debian's prometheus package)")
    checked = subprocess.run([promtool, "check", "rules", str(out)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
