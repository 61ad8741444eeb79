"""`gpufabric ib lab up|status|console|down` and `gpufabric ib validate --lab` as a user runs them:
ibsim and the real OpenSM outlive `up`, validate reads them with the real diagnostics, a cable cut
on the console is named, and `down` stops exactly the recorded processes and leaves nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ib_sim_helpers import LAB_MARKS

from tests.conftest import INVENTORY, run

pytestmark = LAB_MARKS

FABRIC = str(INVENTORY / "examples" / "infiniband" / "superpod-h100-1su.yml")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def test_lab_up_validate_cut_and_down(tmp_path: Path) -> None:
    state = tmp_path / "ib-lab"
    up = run("gpufabric", "ib", "lab", "up", FABRIC, "--state-dir", str(state))
    try:
        assert up.returncode == 0, up.stderr
        assert "superpod-h100-1su: ibsim ready in" in up.stderr
        pids = [p["pid"] for p in json.loads((state / "ib-lab.json").read_text())["processes"].values()]
        assert len(pids) == 3 and all(_alive(p) for p in pids)
        status = run("gpufabric", "ib", "lab", "status", "--state-dir", str(state))
        assert status.returncode == 0 and status.stdout.split() == [
            "ibsim",
            "running",
            "primary",
            "running",
            "standby",
            "running",
        ]
        quick = ("--no-rates", "--check", "cabling", "--check", "ports", "--check", "sm")
        green = run("gpufabric", "ib", "validate", FABRIC, "--lab", str(state), *quick)
        assert green.returncode == 0, green.stdout + green.stderr
        assert green.stdout.endswith("6 results, 0 failed\n")
        run("gpufabric", "ib", "lab", "console", "--state-dir", str(state), 'unlink "S-su1-leaf2"[40]', check=True)
        cut = run("gpufabric", "ib", "validate", FABRIC, "--lab", str(state), *quick, "--format", "json")
        assert cut.returncode == 4
        failed = [(r["check"], r["item"], r["observed"]) for r in json.loads(cut.stdout) if not r["ok"]]
        assert ("cabling", '"su1-leaf2"[40] - "spine04"[10]', "missing") in failed
        # Symbol errors on dgx001's rail-1 cable, set on ibsim's console: validate names the port,
        # and the metric carries the value with the plan's labels.
        console = 'PerformanceSet "S-su1-leaf1"[1] PortCounters.SymbolErrorCounter=5'
        run("gpufabric", "ib", "lab", "console", "--state-dir", str(state), console, check=True)
        errors = run(
            "gpufabric", "ib", "validate", FABRIC, "--lab", str(state), "--check", "counters", "--format", "json"
        )
        assert errors.returncode == 4
        bad = [(r["item"], r["expected"], r["observed"]) for r in json.loads(errors.stdout) if not r["ok"]]
        assert bad == [('"su1-leaf1"[1] (to "dgx001 mlx5_0"[1])', "SymbolErrorCounter <= 0", "5")]
        metrics = run("gpufabric", "ib", "metrics", FABRIC, "--lab", str(state), check=True).stdout
        assert (
            'gpufabric_ib_port_counter{fabric="superpod-h100-1su",node="su1-leaf1",role="leaf",port="1",'
            'peer="dgx001 mlx5_0",peer_port="1",tier="node-leaf",rail="1",su="1",counter="SymbolErrorCounter"} 5'
        ) in metrics.splitlines()
    finally:
        down = run("gpufabric", "ib", "lab", "down", "--state-dir", str(state))
    assert down.returncode == 0 and "stopped standby, primary, ibsim" in down.stderr
    assert not any(_alive(p) for p in pids)
    assert not state.exists()
