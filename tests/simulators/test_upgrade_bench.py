"""`nornir upgrade` end to end, as a user runs it, against the fleet simulator (bench/upgrade_scale.py at
1/64 of the 32k fabric, in a network namespace of its own): a switch of batch 2 hangs on the new release,
comes back on its previous image by its watchdog, and the rollout stops there with exit 4 (findings)."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
from conftest import ROOT, run

pytest.importorskip("asyncssh")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("unshare") is None, reason="the benchmark runs in a network namespace"),
]


def test_the_upgrade_stops_at_the_switch_that_fell_back(tmp_path) -> None:
    out = tmp_path / "row.json"
    done = run(sys.executable, "-m", "bench.upgrade_scale", "--scale", "1/64", "--plant", "2", "--budget", "600",
               "--json", str(out), cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    row = json.loads(out.read_text())
    assert row["rc"] == 4 and row["stopped_at"] == 2 and row["waves"] == 2
    assert row["states"] == {"done": 1, "fell back": 1, "skipped": row["switches"] - 2}
    ((device, state, reason),) = row["stops"]
    assert state == "fell back" and device == row["fell_back"][0]
    assert "came back on its previous image (Cumulus Linux 5.13.1)" in reason or "not release 5.14" in reason
