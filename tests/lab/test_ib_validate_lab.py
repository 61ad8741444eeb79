"""`gpufabric.ib.validate` on the simulated DGX SuperPOD H100 2-SU fabric (24 switches, 508
adapters) with the real OpenSM and infiniband-diags: green as planned; a cut cable and a swapped
pair named (ibsim's console unlinks and links them), and green again once restored.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from ib_sim_helpers import LAB_MARKS, simulated

from gpufabric.ib import opensm, sim, topology, validate
from gpufabric.ib.design import superpod
from gpufabric.ib.model import IbFabric
from gpufabric.ib.planner import plan_fabric

pytestmark = LAB_MARKS

SETTINGS = opensm.SmSettings(
    partitions=(
        opensm.Partition("tenant-a", 0x0101, ("dgx001", "dgx002", "dgx040")),
        opensm.Partition("tenant-b", 0x0102, ("dgx003", "dgx040")),
    ),
    qos=False,  # SL-to-VL programming only adds time here
)


@dataclass
class Fabric:
    plan: IbFabric
    simulator: sim.Simulator
    primary: sim.OpenSm

    def validate(self, checks: tuple[str, ...] = validate.CHECKS) -> list[validate.Result]:
        def run(args: Sequence[str]) -> str:
            return self.simulator.run(*args, host=self.primary.host)

        return validate.validate(self.plan, SETTINGS, run, rates=False, checks=checks)

    def change(self, *commands: str) -> None:
        """Console commands, then wait until OpenSM has swept them (no new SUBNET UP for 1 s)."""
        sweeps = self.primary.sweeps()
        for command in commands:
            self.simulator.console(command)
        if not self.primary.swept(sweeps, 180):
            pytest.fail(f"OpenSM (PID {self.primary.proc and self.primary.proc.pid}) did not sweep {commands} in 180 s")
        deadline = time.monotonic() + 120
        while True:
            sweeps = self.primary.sweeps()
            time.sleep(1)
            if self.primary.sweeps() == sweeps or time.monotonic() > deadline:
                return


@pytest.fixture(scope="module")
def fabric(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fabric]:
    workdir = tmp_path_factory.mktemp("ib-validate")
    plan = plan_fabric(superpod("dgx-h100", 2))
    with simulated(workdir, plan) as (s, _, found):
        sms = []
        for role in ("primary", "standby"):
            folder: Path = workdir / role
            opensm.write(opensm.render(plan, found, SETTINGS, folder, role=role), folder)  # type: ignore[arg-type]
            name = plan.sm.primary if role == "primary" else plan.sm.standby
            assert name is not None
            sms.append(sim.OpenSm(s, folder, folder / "opensm.conf", topology.node_id(plan.by_name[name])))
        try:
            sim.start_managers(sms[0], sms[1])
            yield Fabric(plan, s, sms[0])
        finally:
            for sm in reversed(sms):
                sm.stop()


CABLES = ("cabling", "ports", "sm")  # the partitions' 504 queries are for the green run


def _failed(results: list[validate.Result]) -> list[tuple[str, str, str]]:
    return sorted((r.check, r.item, r.observed) for r in results if not r.ok)


def test_green_as_planned(fabric: Fabric) -> None:
    results = fabric.validate()
    assert _failed(results) == []
    checks = {r.check for r in results}
    assert checks == {"cabling", "nodes", "lid", "port", "sm", "partition", "route", "counters"}
    routes = [r for r in results if r.check == "route"]
    assert len(routes) == 8 and all(r.observed.startswith(f"su1-leaf{i}") for i, r in enumerate(routes, 1))


def test_a_cut_cable_is_named_and_restored(fabric: Fabric) -> None:
    fabric.change('unlink "S-su1-leaf3"[35]')  # su1-leaf3's third uplink: spine03 port 9
    assert _failed(fabric.validate(CABLES)) == [
        ("cabling", '"su1-leaf3"[35] - "spine03"[9]', "missing"),
        ("port", '"spine03"[9]', "Down/ Polling"),
        ("port", '"su1-leaf3"[35]', "Down/ Polling"),
    ]
    fabric.change('relink "S-su1-leaf3"[35]')
    assert _failed(fabric.validate(CABLES)) == []


def test_a_swapped_pair_is_named_at_both_ends_and_restored(fabric: Fabric) -> None:
    # dgx001's and dgx002's rail-1 adapters swapped on su1-leaf1 (ports 1 and 2).
    fabric.change(
        'unlink "S-su1-leaf1"[1]',
        'unlink "S-su1-leaf1"[2]',
        'link "S-su1-leaf1"[1] "H-dgx002 mlx5_0"[1]',
        'link "S-su1-leaf1"[2] "H-dgx001 mlx5_0"[1]',
    )
    failed = _failed(fabric.validate(CABLES))
    assert [f for f in failed if f[0] == "cabling"] == [
        ("cabling", '"dgx001 mlx5_0"[1] - "su1-leaf1"[1]', "missing"),
        ("cabling", '"dgx001 mlx5_0"[1] - "su1-leaf1"[2]', "cabled (unplanned)"),
        ("cabling", '"dgx002 mlx5_0"[1] - "su1-leaf1"[1]', "cabled (unplanned)"),
        ("cabling", '"dgx002 mlx5_0"[1] - "su1-leaf1"[2]', "missing"),
    ]
    fabric.change(
        'unlink "S-su1-leaf1"[1]',
        'unlink "S-su1-leaf1"[2]',
        'link "S-su1-leaf1"[1] "H-dgx001 mlx5_0"[1]',
        'link "S-su1-leaf1"[2] "H-dgx002 mlx5_0"[1]',
    )
    assert _failed(fabric.validate(CABLES)) == []
