"""The planned InfiniBand fabric, simulated by ibsim, brought up by the real OpenSM with the
rendered files, and read back by the real infiniband-diags (ibnetdiscover, iblinkinfo,
smpquery, saquery, sminfo, ibtracert). Nothing is faked: only the fabric is simulated.

The fabric is NVIDIA's DGX SuperPOD H100 1-SU compute fabric (12 switches, 252 adapters,
508 cables). Every process is started by the test, remembered by PID and stopped by PID.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
from ib_sim_helpers import LAB_MARKS, simulated

from gpufabric.ib import discovery, opensm, sim, topology
from gpufabric.ib.design import superpod
from gpufabric.ib.model import IbFabric
from gpufabric.ib.planner import plan_fabric

pytestmark = LAB_MARKS

TENANT = opensm.Partition("tenant-a", 0x0101, ("dgx001", "dgx002", "dgx003", "dgx004"), sl=2)


@dataclass
class Lab:
    fabric: IbFabric
    simulator: sim.Simulator
    found: discovery.Discovery
    before: str  # ibnetdiscover before any SM ran (directed routes only)
    sm_host: str
    primary: sim.OpenSm
    standby: sim.OpenSm
    up_seconds: float

    def run(self, *args: str) -> str:
        return self.simulator.run(*args, host=self.sm_host)

    def live(self) -> topology.Topology:
        return topology.parse(self.run("ibnetdiscover"), "ibnetdiscover")


def _sm(
    s: sim.Simulator,
    fabric: IbFabric,
    found: discovery.Discovery,
    workdir: Path,
    *,
    engine: opensm.Engine = "updn",
    role: Literal["primary", "standby"] = "primary",
    qos: bool = True,
) -> tuple[sim.OpenSm, str]:
    """OpenSM's files rendered into `workdir`, and the OpenSM (not started) on the planned SM port."""
    settings = opensm.SmSettings(routing_engine=engine, partitions=(TENANT,), qos=qos)
    opensm.write(opensm.render(fabric, found, settings, workdir, role=role), workdir)
    name = fabric.sm.primary if role == "primary" else fabric.sm.standby
    assert name is not None
    host = topology.node_id(fabric.by_name[name])
    return sim.OpenSm(s, workdir, workdir / "opensm.conf", host), host


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    workdir = tmp_path_factory.mktemp("ib-lab")
    fabric = plan_fabric(superpod("dgx-h100", 1))
    with simulated(workdir, fabric) as (s, before, found):
        primary, host = _sm(s, fabric, found, workdir / "sm-primary")
        standby, _ = _sm(s, fabric, found, workdir / "sm-standby", role="standby")
        try:
            up = sim.start_managers(primary, standby).subnet_up_seconds
            yield Lab(fabric, s, found, before, host, primary, standby, up)
        finally:
            standby.stop()
            primary.stop()


def test_ibnetdiscover_finds_exactly_the_planned_switches_adapters_and_cables(lab: Lab) -> None:
    for text in (lab.before, lab.run("ibnetdiscover")):
        seen = topology.parse(text, "ibnetdiscover")
        kinds = sorted(n.kind for n in seen.nodes.values())
        assert kinds.count("switch") == 12 and kinds.count("ca") == 252
        assert {n.name for n in seen.nodes.values()} == set(lab.fabric.by_name)
        diff = discovery.compare(lab.fabric, seen, rates=False)
        assert diff.clean, diff.lines()[:10]
        assert len(seen.links) == 508
        # Widths as planned (ibsim 0.10 has no NDR: the speed is its default, see docs/infiniband.md).
        assert {link.rate[:2] for link in seen.links} == {"4x"}


def test_every_port_active_with_a_lid_after_subnet_up(lab: Lab) -> None:
    seen = lab.live()
    lids = [n.lid for n in seen.nodes.values()]
    assert all(lids) and len(set(lids)) == 12 + 252  # one LID per switch and per adapter port
    links = lab.run("iblinkinfo")
    assert links.count("Active/  LinkUp") == 2 * 508
    # The only ports down: the four leaf ports of the UFM slot no appliance uses (rails 5-8).
    down = re.findall(r"^\s+(\d+)\s+(\d+)\[\s*\] ==\(\s+Down/ ?Polling\)", links, re.MULTILINE)
    assert len(down) == 4 and {port for _, port in down} == {"32"}


def test_subnet_manager_master_and_standby_as_planned(lab: Lab) -> None:
    master = lab.run("sminfo")
    assert f"sm guid 0x{lab.found.nodes['ufm1 mlx5_0'].port:x}," in master
    assert "priority 15" in master and "SMINFO_MASTER" in master
    standby_lid = lab.live().by_name()["ufm2 mlx5_0"].lid
    standby = lab.run("sminfo", str(standby_lid))
    assert "priority 14" in standby and "SMINFO_STANDBY" in standby


def _pkeys(lab: Lab, name: str) -> set[str]:
    lid = lab.live().by_name()[name].lid
    return set(re.findall(r"0x[0-9a-f]{4}", lab.run("smpquery", "pkeys", str(lid)))) - {"0x0000"}


def test_partitions_enforced_tenants_full_default_limited(lab: Lab) -> None:
    assert _pkeys(lab, "dgx001 mlx5_0") == {"0x7fff", "0x8101"}  # default limited, tenant-a full
    assert _pkeys(lab, "dgx004 mlx5_7") == {"0x7fff", "0x8101"}
    assert _pkeys(lab, "dgx005 mlx5_0") == {"0x7fff"}  # outside tenant-a: does not see it
    assert _pkeys(lab, "ufm1 mlx5_0") == {"0xffff"}  # the SM: a full member of the default partition
    # The SA gives a path between two tenant ports (on tenant-a's PKey), and none between an
    # outsider and a tenant port or between two outsiders (limited members of the default only).
    assert _path_pkeys(lab, "dgx001 mlx5_0", "dgx002 mlx5_0") == ["0x8101"]
    assert _path_pkeys(lab, "dgx001 mlx5_0", "dgx005 mlx5_0") == []
    assert _path_pkeys(lab, "dgx005 mlx5_0", "dgx006 mlx5_0") == []
    # The SM (full member) reaches every adapter: the path carries its full default PKey.
    assert _path_pkeys(lab, "ufm1 mlx5_0", "dgx005 mlx5_0") == ["0xFFFF"]


def _path_pkeys(lab: Lab, src: str, dst: str) -> list[str]:
    by = lab.live().by_name()
    out = lab.run("saquery", "-p", "--src-to-dst", f"{by[src].lid}:{by[dst].lid}")
    return re.findall(r"pkey\.+(0x[0-9A-Fa-f]+)", out)


def test_routes_stay_on_the_planned_tiers(lab: Lab) -> None:
    assert "updn tables configured on all switches" in lab.primary.log.read_text()
    # Same rail: one leaf. Across rails: leaf, a spine, the other rail's leaf.
    assert _hops(lab, "dgx001 mlx5_0", "dgx031 mlx5_0") == ["su1-leaf1"]
    across = _hops(lab, "dgx001 mlx5_0", "dgx002 mlx5_1")
    assert across[0] == "su1-leaf1" and across[1].startswith("spine") and across[2] == "su1-leaf2"
    assert len(across) == 3


def _hops(lab: Lab, src: str, dst: str) -> list[str]:
    by = lab.live().by_name()
    route = lab.run("ibtracert", str(by[src].lid), str(by[dst].lid))
    return re.findall(r'-> switch port \{[^}]*\}\[\d+\] lid \d+-\d+ "([^"]+)"', route)


def _settled_uplink_load(lab_sim: sim.Simulator, host: str, fabric: IbFabric, uplinks: int) -> list[int]:
    """`_uplink_load` once the reading is whole: on a loaded machine ibnetdiscover's or ibroute's MADs to
    ibsim can time out and a reading miss adapters or LFT blocks, which reads as uplinks carrying nothing.
    Read again (within a generous deadline) until `uplinks` ports carry the 220 remote adapters."""
    deadline = time.monotonic() + 120
    load = _uplink_load(lab_sim, host, fabric)
    while (len(load) != uplinks or sum(load) != 220) and time.monotonic() < deadline:
        time.sleep(2)
        load = _uplink_load(lab_sim, host, fabric)
    return load


def _uplink_load(lab_sim: sim.Simulator, host: str, fabric: IbFabric) -> list[int]:
    """Adapter LIDs su1-leaf1 forwards through each uplink, sorted (its linear forwarding table)."""
    seen = topology.parse(lab_sim.run("ibnetdiscover", host=host))
    by = seen.by_name()
    routes = lab_sim.run("ibroute", str(by["su1-leaf1"].lid), host=host)
    ca_lids = {n.lid for n in seen.nodes.values() if n.kind == "ca"}
    load: dict[int, int] = {}
    for lid, port in re.findall(r"^0x([0-9a-f]+) (\d+) ", routes, re.MULTILINE):
        if int(lid, 16) in ca_lids and int(port) > fabric.design.nodes_per_su:
            load[int(port)] = load.get(int(port), 0) + 1
    return sorted(load.values())


@pytest.mark.parametrize("engine", ["ftree", "updn"])
def test_routing_engines_on_the_rail_optimized_layout_and_after_a_cut(tmp_path: Path, engine: opensm.Engine) -> None:
    """Both fat-tree routing and up/down with the spines as roots route this layout, spread the
    destinations evenly over a leaf's 32 uplinks, and reroute when a leaf loses a spine; only
    up/down spreads the rerouted destinations evenly again (docs/infiniband.md, routing)."""
    fabric = plan_fabric(superpod("dgx-h100", 1))
    with simulated(tmp_path, fabric) as (s, _, found):
        sm, host = _sm(s, fabric, found, tmp_path / "sm", engine=engine)
        try:
            sm.start()
            log = sm.log.read_text()
            assert f"{engine} tables configured on all switches" in log
            if engine == "ftree":  # OpenSM's fat-tree engine takes the layout for a fat tree
                assert "FatTree rank (roots to leaf switches): 2" in log
                assert "Fabric has 4 switches at rank 0 (roots)" in log
                assert "Fabric has 8 switches at rank 1 (8 of them leafs)" in log
                assert "248 of them CNs" in log  # the compute adapters, not the UFM ports
            load = _settled_uplink_load(s, host, fabric, 32)
            assert len(load) == 32 and load[-1] - load[0] <= 1  # 220 remote adapters over 32 uplinks
            # Cut every cable between su1-leaf1 and spine01 (8 of its 32 uplinks) on ibsim's console.
            sweeps = sm.log.read_text().count("SUBNET UP")
            for port in range(33, 65, 4):
                s.console(f'unlink "S-su1-leaf1"[{port}]')
            deadline = time.monotonic() + 180
            while sm.log.read_text().count("SUBNET UP") == sweeps and time.monotonic() < deadline:
                time.sleep(0.1)
            assert sm.log.read_text().count(f"{engine} tables configured on all switches") >= 2
            diff = discovery.compare(fabric, topology.parse(s.run("ibnetdiscover", host=host)), rates=False)
            assert diff.missing == [
                c
                for c in sorted((c.down, c.up) for c in fabric.cables)
                if c[0].node == "su1-leaf1" and c[1].node == "spine01"
            ]
            assert not diff.unplanned
            load = _settled_uplink_load(s, host, fabric, 24)
            assert len(load) == 24 and sum(load) == 220, load  # the 24 uplinks left carry all 220 remote adapters
            if engine == "updn":  # up/down rebalances over the 24 uplinks left: 8-10 each
                assert load[-1] - load[0] <= 2, load
            else:  # fat-tree keeps its spine per destination group: the lost spine's share lands on
                # one other spine's 8 uplinks (13-14 each, measured) while the rest keep 7
                assert load.count(load[0]) == 16 and min(load[16:]) >= 2 * load[0] - 1, load
        finally:
            sm.stop()


@pytest.mark.parametrize("engine", ["ftree", "updn"])
def test_four_su_two_cables_per_leaf_spine_pair_balance(tmp_path: Path, engine: opensm.Engine) -> None:
    """The 48-switch SuperPOD: each leaf has two cables to each of 16 spines. Up/down spreads the
    988 remote adapters over a leaf's 32 uplinks evenly (30-31 each); fat-tree routing does not
    (23-33, measured). QoS is off here: it only adds SL-to-VL programming time."""
    fabric = plan_fabric(superpod("dgx-h100", 4))
    with simulated(tmp_path, fabric) as (s, _, found):
        sm, host = _sm(s, fabric, found, tmp_path / "sm", engine=engine, qos=False)
        try:
            sm.start()
            seen = topology.parse(s.run("ibnetdiscover", host=host))
            assert len(seen.nodes) == 48 + 1020 and discovery.compare(fabric, seen, rates=False).clean
            load = _uplink_load(s, host, fabric)
            assert len(load) == 32 and sum(load) == 1020 - 32
            if engine == "updn":
                assert load[-1] - load[0] <= 1, load
            else:
                assert load[-1] - load[0] >= 4, load
        finally:
            sm.stop()


def test_stopping_leaves_no_process_and_no_file_of_the_simulator(tmp_path: Path) -> None:
    fabric = plan_fabric(superpod("dgx-h100", 1))
    with simulated(tmp_path, fabric) as (s, _, found):
        sm, _ = _sm(s, fabric, found, tmp_path / "sm", qos=False)
        sm.start()
        assert s.proc is not None and sm.proc is not None
        pids = [s.proc.pid, sm.proc.pid]
        sm.stop()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not list(tmp_path.rglob("sys-*")) and not (tmp_path / "ibsim.console").exists()
