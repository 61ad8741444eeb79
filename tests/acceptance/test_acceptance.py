"""`gpufabric acceptance`: the suite the plan implies, the tools' outputs read back, the verdict."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from conftest import ALL_INTENTS, INVENTORY, example_plan, run_in_process, sized
from dcgm_outputs import write_passing
from incast_evidence import lossless_results

from gpufabric.acceptance.parse import OutputError, nccl_busbw, perftest_bw, perftest_lat
from gpufabric.acceptance.report import judge, junit
from gpufabric.acceptance.slurm import scripts
from gpufabric.acceptance.suite import build_suite

OUTPUTS = Path(__file__).parents[1] / "acceptance_outputs"
# The RoCE suite; an InfiniBand compute plane has its own (`gpufabric ib acceptance`,
# tests/acceptance/test_ib_acceptance.py).
EXAMPLES = [
    p
    for p in ALL_INTENTS  # conftest.HUGE_DESIGNS aside
    if "transport: infiniband" not in p.read_text()
]


def _plan(path: Path):
    return example_plan(path)  # one per test process, shared with the other files' per-example tests


def _bw(gbits: float) -> str:
    return (OUTPUTS / "ib_write_bw.txt").read_text().replace("{BW}", f"{gbits:.2f}")


def _lat(us: float) -> str:
    text = (OUTPUTS / "ib_write_lat.txt").read_text()
    return text.replace("{LAT}", f"{us:.2f}").replace("{MIN}", f"{us - 0.05:.2f}").replace("{AVG}", f"{us + 0.02:.2f}")


def _nccl(busbw: float, wrong: int = 0) -> str:
    text = (OUTPUTS / "nccl.txt").read_text().replace("{BUSBW}", f"{busbw:.2f}").replace("{WRONG}", str(wrong))
    return text.replace("{OOB}", "0 OK" if wrong == 0 else f"{wrong} FAILED")


# -- the suite ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "bw_jobs", "paths"),
    [
        # 2 rails x (a pair under each of 2 leaves + 1 pair across the spines)
        ("fabric.yml", 6, {"leaf", "spine"}),
        # 1 SU: 8 rails x 1 leaf pair; one leaf per rail, so 7 pairs across rails reach the spines
        ("examples/superpod-1su.yml", 15, {"leaf", "rail"}),
        # 4 SU: 8 rails x (4 leaf pairs + 3 across the spines)
        pytest.param("examples/superpod-4su.yml", 56, {"leaf", "spine"}, marks=pytest.mark.slow),
    ],
)
def test_job_counts_follow_from_the_design(path, bw_jobs, paths):
    suite = build_suite(_plan(INVENTORY / path))
    bw = [j for j in suite.perf if j.tool == "ib_write_bw"]
    assert len(bw) == bw_jobs and len(suite.perf) == 2 * bw_jobs
    assert {j.path for j in bw} == paths


@pytest.mark.parametrize("path", sized(EXAMPLES), ids=lambda p: p.stem)
def test_every_leaf_and_spine_of_a_roce_plane_is_crossed(path):
    plan = _plan(path)
    suite = build_suite(plan)
    crossed = {d for j in suite.perf for d in j.crosses}
    for plane in plan.planes.values():
        if not plane.carries_roce:
            continue
        # A leaf whose hosts join only a converged plane's carried planes (`native: false`) has no address of
        # the plane's own under it: the plane's own jobs cannot reach it (its carried planes are not tested yet).
        tagged_only = {n.leaf for s in plan.servers for n in s.nics if n.plane == plane.name and not n.native}
        tagged_only -= {n.leaf for s in plan.servers for n in s.nics if n.plane == plane.name and n.native}
        fabric = {d.name for d in plane.devices if d.role in ("leaf", "spine", "superspine")} - tagged_only
        assert fabric <= crossed, sorted(fabric - crossed)[:5]


@pytest.mark.parametrize("path", sized(EXAMPLES), ids=lambda p: p.stem)
def test_each_job_has_a_figure_and_a_threshold_that_fails_it(path):
    plan = _plan(path)
    suite = build_suite(plan)
    assert suite.perf and suite.nccl
    for j in suite.perf:
        plane = j.plane.split("-p")[0]  # a job on plane k of a multi-plane compute plane names it compute-pk
        if j.tool == "ib_write_bw":
            nic = next(link.speed for link in plan.planes[plane].links if link.a == j.client.server)
            assert 0 < j.threshold < j.expected < nic  # below line rate: headers
        else:
            assert 0 < j.expected < j.threshold
        assert j.client.server != j.server.server
        assert j.gid_index == 3
        qos = plan.intent.qos_profiles[plan.planes[plane].qos]
        assert j.traffic_class == qos.host_tos == 106
        assert f"--tclass={j.traffic_class}" in j.command("client") and j.server.address in j.command("client")
    for n in suite.nccl:
        assert 0 < n.threshold < n.expected and len(n.servers) >= 2
        assert n.env["NCCL_IB_GID_INDEX"] == "3" and n.env["NCCL_IB_TC"] == "106"


def test_the_hca_follows_the_roce_nic_order():
    suite = build_suite(_plan(INVENTORY / "fabric.yml"))
    by_rail = {(j.rail, j.client.hca) for j in suite.perf}
    assert by_rail == {(1, "mlx5_0"), (2, "mlx5_1")}
    assert {n.env["NCCL_IB_HCA"] for n in suite.nccl} == {"mlx5_0,mlx5_1"}


def test_a_spine_pair_names_the_cables_it_may_cross():
    plan = _plan(INVENTORY / "fabric.yml")
    job = next(j for j in build_suite(plan).perf if j.path == "spine" and j.rail == 1)
    cabling = run_in_process("gpufabric", "export", "cabling", check=True).stdout.splitlines()
    rows = {line.split(",")[0]: line.split(",") for line in cabling[1:]}
    ends = {(rows[c][3], rows[c][5]) for c in job.cables}
    # both host cables, and each of the two leaves' cables to every spine
    assert (job.client.server, job.client.leaf) in ends and (job.server.server, job.server.leaf) in ends
    assert {(job.client.leaf, s) for s in ("cmp-spine1", "cmp-spine2")} <= ends
    assert len(job.cables) == 6


# -- the tools' outputs -----------------------------------------------------------------------------


def test_perftest_and_nccl_outputs_are_read():
    assert perftest_bw(_bw(388.31)).value == 388.31
    assert perftest_lat(_lat(2.41)).value == 2.41
    assert nccl_busbw(_nccl(19.37)).value == 19.37
    mib = _bw(46000).replace("BW peak[Gb/sec]    BW average[Gb/sec]", "BW peak[MB/sec]    BW average[MB/sec]")
    assert perftest_bw(mib).value == pytest.approx(46000 * 8 * 1.048576 / 1000, abs=0.01)


def test_wrong_elements_fail_a_collective_whatever_its_speed():
    seen = nccl_busbw(_nccl(25.0, wrong=3))
    assert seen.value == 0.0 and "3 wrong" in seen.detail


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Couldn't connect to 10.10.0.1:18515\nUnable to init the socket connection\n",
        "\n".join(_bw(1).splitlines()[:-2]),  # cut before the result row
    ],
)
def test_output_without_a_result_is_an_error(text):
    with pytest.raises(OutputError):
        perftest_bw(text)
    with pytest.raises(OutputError):
        nccl_busbw(text)


# -- the report -------------------------------------------------------------------------------------


def _results(tmp_path: Path, suite, bad: set[str]) -> Path:
    folder = tmp_path / "results"
    folder.mkdir()
    for j in suite.perf:
        factor = 0.5 if j.id in bad else 1.05
        text = _bw(j.threshold * factor) if j.tool == "ib_write_bw" else _lat(j.expected)
        (folder / f"{j.id}.txt").write_text(text)
    for n in suite.nccl:
        (folder / f"{n.id}.txt").write_text(_nccl(n.expected))
    lossless_results(_plan(INVENTORY / "fabric.yml"), suite, folder)
    write_passing(suite, folder)  # every GPU node's DCGM diagnostic passes (stand-in outputs)
    return folder


def test_two_failing_pairs_point_at_the_cable_they_share(tmp_path):
    suite = build_suite(_plan(INVENTORY / "fabric.yml"))
    # gpu01's rail-1 NIC: the pair under its leaf and the pair across the spines both use its cable.
    bad = {"ib_write_bw.compute.rail1.leaf.gpu02-gpu01", "ib_write_bw.compute.rail1.spine.gpu03-gpu01"}
    report = judge(suite, _results(tmp_path, suite, bad))
    assert {v.job.id for v in report.failed} == bad
    suspects = report.suspects()
    shared_cable = next(c for c in suite.perf[0].cables if c in set.intersection(*(
        set(j.cables) for j in suite.perf if j.id in bad)))  # fmt: skip
    top = [part for part, failing, passing in suspects if passing == 0]
    assert shared_cable in top and "cmp-su1-leaf1" in top
    assert all(part not in top for part in ("cmp-su2-leaf1", "cmp-spine1"))  # cleared by passing pairs
    xml = ET.fromstring(junit(report))
    assert xml.get("tests") == str(len(suite.jobs())) and xml.get("failures") == "2"
    failures = [c for c in xml.iter("testcase") if c.find("failure") is not None]
    assert {c.get("name") for c in failures} == bad
    assert shared_cable in failures[0].find("failure").text


def test_the_report_command_exits_by_verdict(tmp_path):
    suite = build_suite(_plan(INVENTORY / "fabric.yml"))
    folder = _results(tmp_path, suite, set())
    done = run_in_process(
        "gpufabric", "acceptance", "report", "--results", str(folder), "--json", "--junit", str(tmp_path / "j.xml")
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["failed"] == 0 and doc["passed"] == len(suite.jobs())
    (folder / f"{suite.nccl[0].id}.txt").unlink()
    done = run_in_process("gpufabric", "acceptance", "report", "--results", str(folder), "--json")
    assert done.returncode == 4 and json.loads(done.stdout)["jobs"][len(suite.perf)]["status"] == "missing"


def test_slurm_scripts_parse_and_quote(tmp_path):
    files = scripts(build_suite(_plan(INVENTORY / "fabric.yml")))
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        subprocess.run(["bash", "-n", str(tmp_path / name)], check=True)
    nccl = files["all_reduce_perf.compute.cluster.sbatch"]
    assert "#SBATCH --nodes=4" in nccl and "export NCCL_IB_TC=106" in nccl and "--dependency=singleton" in nccl
    assert len([n for n in files if n.endswith(".sbatch")]) == len(build_suite(_plan(INVENTORY / "fabric.yml")).jobs())


# -- the lab's stand-in ---------------------------------------------------------------------------


def test_the_stand_in_keeps_the_pairs_and_says_what_it_is():
    from gpufabric.acceptance.suite import stand_in

    suite = build_suite(_plan(INVENTORY / "fabric.yml"))
    lab = stand_in(suite)
    assert [(j.client.server, j.server.server, j.path) for j in lab.perf] == [
        (j.client.server, j.server.server, j.path) for j in suite.perf
    ]
    assert {j.tool for j in lab.perf} == {"iperf3", "ping"} and not lab.nccl
    assert all("stand-in" in j.id for j in lab.perf)
    assert len({j.port for j in lab.perf}) == len(lab.perf)  # a listener per pair never collides


@pytest.mark.slow
def test_iperf3_and_ping_outputs_are_read_from_the_real_tools():
    """Real iperf3 and ping on the loopback (nothing leaves this machine)."""
    import shutil
    import socket

    from gpufabric.acceptance.parse import iperf3_bw, ping_rtt

    if shutil.which("iperf3") is None or shutil.which("ping") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must install iperf3 and ping (scripts/test.sh does)")
        pytest.skip("iperf3 or ping missing")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    server = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", port], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30  # until the server listens: a loaded machine starts it late
        while True:
            done = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", port, "-t", "1", "-J"], capture_output=True,
                                  text=True, check=False)  # fmt: skip
            if '"sum_received"' in done.stdout or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        server.wait(10)
    assert iperf3_bw(done.stdout).value > 0.1  # Gb/s over the loopback
    refused = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", port, "-t", "1", "-J"], capture_output=True,
                             text=True, check=False)  # fmt: skip
    with pytest.raises(OutputError, match=r"no iperf3 result: \w"):
        iperf3_bw(refused.stdout)
    ping = subprocess.run(["ping", "-c", "3", "-i", "0.2", "127.0.0.1"], capture_output=True, text=True, check=True)
    assert 0 < ping_rtt(ping.stdout).value < 5000
    with pytest.raises(OutputError):
        ping_rtt(
            "PING 10.0.0.1 (10.0.0.1) 56(84) bytes of data.\n\n--- 10.0.0.1 ping statistics ---\n"
            "3 packets transmitted, 0 received\n"
        )
