"""`acceptance screen`: slow nodes found in recorded outputs against their median, the part behind them
named, and the signal record the remediation loop reads.

The outputs are written from samples in the tools' published formats (tests/acceptance_outputs/:
perftest's `ib_write_bw --report_gbits` report, nccl-tests' `all_reduce_perf` table for eight ranks on
one host), with the figures of each run filled in consistently (iterations and message rate from the
bandwidth; time and algorithm bandwidth from the bus bandwidth).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gpufabric.acceptance.model import NcclJob, PerfJob, Suite
from gpufabric.acceptance.screen import ScreenError, screen, signal_record
from gpufabric.acceptance.suite import screen_suite
from gpufabric.intent import load_intent
from gpufabric.plan import Plan, build_plan
from tests.conftest import BIN

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = Path(__file__).parents[1] / "acceptance_outputs"


def perftest_text(job: PerfJob, gbits: float) -> str:
    rate = gbits * 1e9 / 8 / 65536 / 1e6  # Mpps of 65536-byte messages
    text = (OUTPUTS / "ib_write_bw.txt").read_text()
    text = text.replace("mlx5_0", job.client.hca).replace("7481236", str(round(rate * 1e6 * 10)))
    return text.replace("{BW}", f"{gbits:.2f}").replace("0.747621", f"{rate:.6f}")


def nccl_node_text(host: str, busbw: float, ranks: int = 8) -> str:
    algbw = busbw * ranks / (2 * (ranks - 1))
    time_us = (8 << 30) / (algbw * 1e9) * 1e6
    return (OUTPUTS / "nccl_node.txt").read_text().format(
        HOST=host, TIME=f"{time_us:.0f}", ALGBW=f"{algbw:.2f}", BUSBW=f"{busbw:.2f}", AVG=f"{busbw * 0.41:.4f}"
    )


@pytest.fixture(scope="module")
def plan() -> Plan:
    return build_plan(load_intent(str(ROOT / "inventory" / "fabric.yml")))


@pytest.fixture(scope="module")
def suite(plan: Plan) -> Suite:
    return screen_suite(plan)


def record(folder: Path, suite: Suite, *, slow_nics: dict[str, float] | None = None,
           slow_nodes: dict[str, float] | None = None) -> Path:  # fmt: skip
    """Every screen job's output: ~390 Gb/s per pair and ~480 GB/s per node with a little spread, a
    pair through a NIC in `slow_nics` ("gpu03 eth1") at that rate, a node in `slow_nodes` at its figure."""
    folder.mkdir(parents=True, exist_ok=True)
    slow_nics, slow_nodes = slow_nics or {}, slow_nodes or {}
    for i, job in enumerate(suite.perf):
        rate = 388.0 + (i % 5)
        for end in (job.client, job.server):
            rate = min(rate, slow_nics.get(f"{end.server} {end.interface}", rate))
        (folder / f"{job.id}.txt").write_text(perftest_text(job, rate))
    for i, nccl in enumerate(suite.nccl):
        if len(nccl.servers) == 1:
            host = nccl.servers[0]
            (folder / f"{nccl.id}.txt").write_text(nccl_node_text(host, slow_nodes.get(host, 478.0 + i % 4)))
    return folder


def test_the_screen_rings_every_rail_so_each_nic_is_in_two_pairs(suite: Suite) -> None:
    assert len(suite.perf) == 8  # 4 servers on each of 2 rails
    for nic in ("gpu01 eth1", "gpu02 eth1", "gpu03 eth2", "gpu04 eth2"):
        server, iface = nic.split()
        ends = [(e.server, e.interface) for j in suite.perf for e in (j.client, j.server)]
        assert ends.count((server, iface)) == 2
    assert [j.servers for j in suite.nccl if j.scope.startswith("node")] == [("gpu01",), ("gpu02",), ("gpu03",), ("gpu04",)]
    assert {j.scope for j in suite.nccl if len(j.servers) > 1} == {"unit1", "unit2", "cluster"}


def test_uniform_results_raise_no_signal(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    found = screen(suite, plan, record(tmp_path, suite))
    assert found.slow == [] and found.signals == []
    assert len(found.compared) == 12  # 8 pairs and 4 single-node runs; the unit and cluster runs were not recorded
    assert {r.status for r, _ in found.unjudged} == {"missing"}


def test_a_slow_nic_is_found_and_its_link_named_not_its_partners(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    found = screen(suite, plan, record(tmp_path, suite, slow_nics={"gpu03 eth1": 180.0}))
    assert len(found.slow) == 2 and len(found.signals) == 1
    doc = signal_record(found, tmp_path)
    (sig,) = doc["signals"]
    assert (sig["part"], sig["part_kind"], sig["nodes"]) == ("gpu03 eth1", "nic", ["gpu03"])
    # The NIC, its cable and its leaf port share every result: one link, named together.
    cable = next(c for c in suite.perf[1].cables if c in suite.perf[2].cables)
    assert {(w["part"], w["part_kind"]) for w in sig["with"]} == {(cable, "host-cable"), ("cmp-su2-leaf1 swp1", "leaf-port")}
    assert sorted(e["job"] for e in sig["evidence"]) == [
        "screen.ib_write_bw.compute.rail1.leaf.gpu04-gpu03",
        "screen.ib_write_bw.compute.rail1.spine.gpu03-gpu02",
    ]
    assert all(e["observed"] == 180.0 and e["threshold"] < e["median"] for e in sig["evidence"])
    assert (sig["slow_results"], sig["normal_results"]) == (2, 0)


def test_a_slow_gpu_node_is_named_by_its_own_run(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    found = screen(suite, plan, record(tmp_path, suite, slow_nodes={"gpu02": 210.0}))
    doc = signal_record(found, tmp_path)
    assert [(s["part"], s["part_kind"], s["nodes"]) for s in doc["signals"]] == [("gpu02", "node", ["gpu02"])]
    (evidence,) = doc["signals"][0]["evidence"]
    assert evidence["job"] == "screen.all_reduce_perf.compute.node.gpu02" and evidence["observed"] == 210.0
    assert evidence["median"] == 479.0 and evidence["peers"] == 4  # of 478, 210, 480, 481


def test_two_faults_give_two_signals(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    found = screen(suite, plan, record(tmp_path, suite, slow_nics={"gpu01 eth2": 150.0}, slow_nodes={"gpu04": 90.0}))
    assert sorted((s.part.name, s.part.nodes) for s in found.signals) == [("gpu01 eth2", ("gpu01",)), ("gpu04", ("gpu04",))]


def test_the_factor_decides_what_is_slow(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    folder = record(tmp_path, suite, slow_nics={"gpu02 eth2": 300.0})  # 390 / 300 = 1.3x slower
    assert screen(suite, plan, folder).signals == []
    strict = screen(suite, plan, folder, factor=1.2)
    assert [s.part.name for s in strict.signals] == ["gpu02 eth2"]
    with pytest.raises(ScreenError, match="above 1"):
        screen(suite, plan, folder, factor=1.0)


def test_too_few_like_results_are_not_judged(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    few = Suite(suite.fabric, perf=suite.perf[:2], nccl=[j for j in suite.nccl if len(j.servers) == 1][:2])
    found = screen(few, plan, record(tmp_path, suite, slow_nodes={"gpu01": 10.0}))
    assert found.compared == [] and found.signals == []
    assert all("fewer than 3 to compare" in why for _, why in found.unjudged)


def test_wrong_data_is_slow_whatever_its_speed(tmp_path: Path, plan: Plan, suite: Suite) -> None:
    folder = record(tmp_path, suite)
    job = next(j for j in suite.nccl if j.servers == ("gpu03",))
    text = nccl_node_text("gpu03", 480.0).replace("31.04      0", "31.04      7", 1)  # 7 wrong elements at 1 MiB
    (folder / f"{job.id}.txt").write_text(text)
    found = screen(suite, plan, folder)
    assert [(s.part.name, s.evidence[0].result.status) for s in found.signals] == [("gpu03", "failed")]


def _cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BIN / "gpufabric", *map(str, args)], capture_output=True, text=True, check=False)


def test_the_cli_writes_the_signal_and_exits_by_finding(tmp_path: Path, suite: Suite) -> None:
    fabric = ROOT / "inventory" / "fabric.yml"
    record(tmp_path / "ok", suite)
    done = _cli("acceptance", "screen", "report", fabric, "--results", tmp_path / "ok", "--signal", tmp_path / "s.json")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "s.json").read_text())["signals"] == []
    record(tmp_path / "slow", suite, slow_nics={"gpu03 eth1": 180.0})
    done = _cli("acceptance", "screen", "report", fabric, "--results", tmp_path / "slow", "--json")
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["kind"] == "gpufabric.slow-results" and doc["signals"][0]["part"] == "gpu03 eth1"
    assert "slow: gpu03 eth1 (nic; nodes gpu03)" in " ".join(_cli(
        "acceptance", "screen", "report", fabric, "--results", tmp_path / "slow").stderr.split())  # fmt: skip
    bad = _cli("acceptance", "screen", "report", fabric, "--results", tmp_path / "slow", "--factor", "0.5")
    assert bad.returncode == 2 and "above 1" in bad.stderr


def test_nccl_node_sample_reads_as_eight_ranks_on_one_host() -> None:
    from gpufabric.acceptance.parse import nccl_busbw

    job = NcclJob(id="x", tool="all_reduce_perf", plane="compute", scope="node gpu01", servers=("gpu01",),
                  gpus_per_server=8, env={})  # fmt: skip
    seen = nccl_busbw(nccl_node_text("gpu01", 481.5), job.expect())
    assert (seen.value, seen.failed) == (481.5, False)
