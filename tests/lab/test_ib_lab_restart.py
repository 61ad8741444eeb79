"""`ib lab up` starts the primary subnet manager again when it stops sweeping once the standby joins.

ibsim's MAD layer has no timeouts, so a request lost while the standby binds leaves the real OpenSM
waiting for its answer for good (seen under load in CI: the primary still answered SMInfo, but no cut
cable was ever rerouted). That loss cannot be made to happen on demand; this test stands in for it by
reporting the primary's post-standby sweep as missing, and checks for real what `up` does then: the
real OpenSM stopped by PID and started again, its earlier log kept, and the fabric it then runs is
swept again when a cable is cut.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT
from ib_sim_helpers import LAB_MARKS

from gpufabric.ib import lab as ib_lab
from gpufabric.ib import sim
from gpufabric.ib.design_file import IbIntent
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

pytestmark = LAB_MARKS

EXAMPLE = ROOT / "inventory" / "examples" / "lab-infiniband.yml"


@pytest.fixture
def lab_dir(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "ib"
    yield folder
    ib_lab.down(folder)


def test_a_primary_that_stops_sweeping_when_the_standby_joins_is_started_again(
    lab_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ib = build_plan(load_intent(str(EXAMPLE))).infiniband
    assert ib is not None
    real_swept = sim.OpenSm.swept
    asked: list[int] = []

    def lost_the_sweep(self: sim.OpenSm, after: int, timeout: float) -> bool:
        asked.append(after)
        return False if len(asked) == 1 else real_swept(self, after, timeout)  # the stand-in: once

    monkeypatch.setattr(sim.OpenSm, "swept", lost_the_sweep)
    first: list[int] = []
    real_stop = sim.OpenSm.stop

    def stop(self: sim.OpenSm) -> None:
        if self.proc is not None:
            first.append(self.proc.pid)
        real_stop(self)

    monkeypatch.setattr(sim.OpenSm, "stop", stop)
    done = ib_lab.up(IbIntent(ib.fabric, ib.settings), lab_dir)
    monkeypatch.undo()

    assert done.primary_restarts == 1 and "started again" in done.restarted
    assert asked and asked[0] >= 1  # asked for a sweep past the primary's first
    assert first and first[0] != done.processes["primary"]
    assert not Path(f"/proc/{first[0]}").exists()
    recorded = json.loads((lab_dir / ib_lab.STATE).read_text())["processes"]
    assert recorded["primary"]["pid"] == done.processes["primary"]
    assert all(ib_lab.status(lab_dir).values())
    log = lab_dir / "primary" / "opensm.log"
    assert "SUBNET UP" in (lab_dir / "primary" / "opensm.log.1").read_text()
    sweeps = log.read_text().count("SUBNET UP")
    assert sweeps >= 1
    # The restarted primary acts on the fabric: a cut leaf-spine cable is swept within its interval.
    state = json.loads((lab_dir / ib_lab.STATE).read_text())
    simulator = sim.Simulator(lab_dir, lab_dir / "fabric.topo", sockname=state["sockname"])
    simulator.console('unlink "S-su1-leaf1"[3]')
    deadline = time.monotonic() + 120  # a sweep interval; a loaded machine's is longer
    while log.read_text().count("SUBNET UP") == sweeps and time.monotonic() < deadline:
        time.sleep(0.2)
    assert log.read_text().count("SUBNET UP") > sweeps, "the restarted primary did not sweep the cut"
