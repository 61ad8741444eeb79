"""InfiniBand in `gpufabric acceptance`: the suite of an InfiniBand compute plane holds perftest pairs per rail
(under a leaf and across the scalable units, inside one partition) and nccl-tests per unit and partition with
NCCL's InfiniBand settings; its Slurm scripts run them, and its report judges outputs in perftest's and
nccl-tests' printed form (an InfiniBand run's header: link type IB, LIDs, no GID) end to end."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

from conftest import INVENTORY, example_plan, run_in_process
from dcgm_outputs import write_passing

from gpufabric.acceptance.report import judge
from gpufabric.acceptance.slurm import scripts
from gpufabric.acceptance.suite import build_suite, stand_in

OUTPUTS = Path(__file__).parents[1] / "acceptance_outputs"
SUPERPOD = INVENTORY / "examples" / "superpod-ib.yml"


def _suite():
    return build_suite(example_plan(SUPERPOD))


def test_every_rail_has_a_pair_under_a_leaf_and_one_across_units_inside_a_partition() -> None:
    plan = example_plan(SUPERPOD)
    suite = _suite()
    ib = plan.infiniband
    assert ib is not None
    bw = [j for j in suite.perf if j.tool == "ib_write_bw"]
    assert {(j.rail, j.path) for j in bw} == {(r, p) for r in range(1, 9) for p in ("leaf", "spine")}
    tenant = {h: p.name for p in ib.settings.partitions for h in p.hosts}
    for j in bw:
        assert tenant[j.client.server] == tenant[j.server.server]
        assert j.client.hca == j.server.hca == ib.fabric.design.hca_name(j.rail)
        assert j.gid_index is None and 390 < j.expected < 400  # 4x NDR less IB's per-packet headers
        if j.path == "leaf":
            assert j.client.leaf == j.server.leaf and len(j.crosses) == 1
        else:
            assert j.client.leaf != j.server.leaf and any("spine" in s for s in j.crosses)


def test_perftest_is_told_the_port_and_no_gid_or_traffic_class() -> None:
    job = next(j for j in _suite().perf if j.tool == "ib_write_bw")
    client = job.command("client")
    assert client[:5] == ["ib_write_bw", "-d", job.client.hca, "-i", "1"]
    assert "-x" not in client and not any(c.startswith("--tclass") for c in client)
    assert client[-1] == job.server.server  # the out-of-band exchange reaches the peer by name


def test_nccl_runs_per_partition_with_every_rail_adapter_and_no_gid_index() -> None:
    plan = example_plan(SUPERPOD)
    nccl = _suite().nccl
    assert {j.id.split(".")[2] for j in nccl} == {"tenant-a", "tenant-b"}
    assert plan.infiniband is not None
    for j in nccl:
        assert j.env["NCCL_IB_HCA"].startswith("=mlx5_0:1,") and j.env["NCCL_IB_HCA"].count(":1") == 8
        assert "NCCL_IB_GID_INDEX" not in j.env and "NCCL_IB_TC" not in j.env
        members = set(j.servers)
        owners = {p.name for p in plan.infiniband.settings.partitions if members <= set(p.hosts)}
        assert owners == {j.id.split(".")[2]}  # every rank inside the partition the job is named after


def test_the_lab_stand_in_leaves_infiniband_out() -> None:
    assert stand_in(_suite()).perf == []


def _bw(gbits: float) -> str:
    return (OUTPUTS / "ib_write_bw_infiniband.txt").read_text().replace("{BW}", f"{gbits:.2f}")


def _lat(us: float) -> str:
    text = (OUTPUTS / "ib_write_lat_infiniband.txt").read_text()
    return text.replace("{LAT}", f"{us:.2f}").replace("{MIN}", f"{us - 0.05:.2f}").replace("{AVG}", f"{us + 0.02:.2f}")


def _nccl(busbw: float) -> str:
    text = (OUTPUTS / "nccl.txt").read_text().replace("{BUSBW}", f"{busbw:.2f}").replace("{WRONG}", "0")
    return text.replace("{OOB}", "0 OK")


def test_the_report_judges_infiniband_outputs_and_names_the_slow_adapter_s_cable(tmp_path: Path) -> None:
    suite = _suite()
    folder = tmp_path / "results"
    folder.mkdir()
    slow = {j.id for j in suite.perf if j.tool == "ib_write_bw" and j.rail == 3}  # rail 3's adapter on dgx001
    for j in suite.perf:
        text = _bw(j.threshold * (0.5 if j.id in slow else 1.05)) if j.tool == "ib_write_bw" else _lat(j.expected)
        (folder / f"{j.id}.txt").write_text(text)
    for n in suite.nccl:
        (folder / f"{n.id}.txt").write_text(_nccl(n.expected))
    write_passing(suite, folder)  # the GPUs pass DCGM's diagnostic (stand-in outputs)
    report = judge(suite, folder)
    assert {v.job.id for v in report.failed} == slow
    shared = set.intersection(*(set(j.cables) for j in suite.perf if j.id in slow))
    top = {part for part, _, passing in report.suspects() if passing == 0}
    assert shared and shared <= top  # the cable both failing pairs cross, cleared by no passing pair
    done = run_in_process("gpufabric", "acceptance", "report", str(SUPERPOD), "--results", str(folder), "--json")
    assert done.returncode != 0 and done.returncode != 2, done.stderr  # findings, not a crash or bad input
    doc = json.loads(done.stdout)
    assert doc["failed"] == len(slow) and doc["passed"] == len(suite.jobs()) - len(slow)


def test_the_scripts_run_the_commands_and_parse(tmp_path: Path) -> None:
    files = scripts(_suite())
    job = next(j for j in _suite().perf if j.tool == "ib_write_bw")
    text = files[f"{job.id}.sbatch"]
    assert " ".join(shlex.quote(c) for c in job.command("client")) in text
    for name, body in files.items():
        (tmp_path / name).write_text(body)
        subprocess.run(["bash", "-n", str(tmp_path / name)], check=True)
    nccl = next(t for n, t in files.items() if n.startswith("all_reduce_perf.compute.tenant-a.cluster"))
    assert "export NCCL_IB_HCA==mlx5_0:1," in nccl and "NCCL_IB_GID_INDEX" not in nccl
