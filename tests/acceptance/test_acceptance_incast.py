"""Incast acceptance jobs: planned from the plan, run by Slurm scripts, judged by the counters of the
switch ports and NICs they cross. The switches' answers are built in the published formats of the
show commands (EOS text and JSON, NX-OS JSON) and of `ethtool -S` (Linux switches and mlx5 NICs), and
pass through the platforms' own lossless readers; perftest's output is the recorded one."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import INVENTORY, run_in_process
from incast_evidence import PortState, Run, lossless_results, nic_text

from gpufabric.acceptance import model as m
from gpufabric.acceptance.counters import SnapshotError, dump, parse_nic, snapshot_switches
from gpufabric.acceptance.model import IncastJob
from gpufabric.acceptance.report import incast_verdict, judge, junit
from gpufabric.acceptance.slurm import scripts
from gpufabric.acceptance.suite import build_suite
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan


@pytest.fixture(scope="module")
def vendor_plan(tmp_path_factory):
    """The example fabric with NX-OS leaves and EOS spines on its compute plane (their port names)."""
    text = (INVENTORY / "fabric.yml").read_text()
    text = text.replace("leaf:  {platform: frr, model: lab-400g-32", "leaf:  {platform: nxos, model: lab-400g-32", 1)
    # A SAND model: an EOS compute switch on `ecmp` hashes RoCE by queue pair (SAND or Strata hardware only).
    text = text.replace("spine: {platform: frr, model: lab-400g-32", "spine: {platform: eos, model: 7280CR3-32P4", 1)
    text = text.replace("      addressing: unnumbered\n", "      addressing: p2p31\n", 1)
    text = text.replace("      hosts: 10.10.0.0/16", "      hosts: 10.10.0.0/16\n      p2p: 10.200.0.0/24", 1)
    path = tmp_path_factory.mktemp("intent") / "fabric.yml"
    path.write_text(text)
    return build_plan(load_intent(str(path)))


@pytest.fixture(scope="module")
def linux_plan():
    return build_plan(load_intent(str(INVENTORY / "fabric.yml")))


# -- the plan -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "leaf_jobs", "spine_jobs", "senders"),
    [
        # 2 servers per leaf and rail: one sender under a leaf is no incast; 2 under the other leaf are
        ("fabric.yml", 0, 2, {2}),
        # 32 servers under each rail's one leaf: 31 candidates, capped at 8; no other leaf on the rail
        ("examples/superpod-1su.yml", 8, 0, {8}),
        # 4 units: a leaf job per leaf (8 rails x 4 leaves) and a spine job per rail
        pytest.param("examples/superpod-4su.yml", 32, 8, {8}, marks=pytest.mark.slow),
    ],
)
def test_incast_jobs_follow_from_the_design(path, leaf_jobs, spine_jobs, senders):
    plan = build_plan(load_intent(str(INVENTORY / path)))
    suite = build_suite(plan)
    assert sum(j.path == "leaf" for j in suite.incast) == leaf_jobs
    assert sum(j.path == "spine" for j in suite.incast) == spine_jobs
    assert {len(j.senders) for j in suite.incast} == senders
    for j in suite.incast:
        assert f"{len(j.senders)} senders" in j.why and j.receiver not in j.senders
        assert len({s.server for s in j.senders}) == len(j.senders)
        assert {s.hca for s in j.servers()} == {j.receiver.hca}  # one rail: one HCA index
        if j.path == "leaf":
            assert {s.leaf for s in j.senders} == {j.receiver.leaf} and j.crosses == (j.receiver.leaf,)
        else:
            assert j.receiver.leaf not in {s.leaf for s in j.senders}
            assert any(d for d in j.crosses if "spine" in d)
        assert j.congested == (j.receiver.leaf, j.receiver.leaf_port) and j.congested in j.ports
        nic = next(link.speed for link in plan.planes[j.plane].links if link.a == j.receiver.server)
        assert 0 < j.threshold < j.expected < nic and j.priority == 3 and j.traffic_class == 106
    if "4su" in path:
        capped = next(j for j in suite.incast if j.path == "leaf")
        assert "31 other servers" in capped.why and f"capped at {m.INCAST_MAX_SENDERS}" in capped.why


def test_a_spine_incast_crosses_every_uplink_between_the_leaves(vendor_plan):
    job = next(j for j in build_suite(vendor_plan).incast if j.rail == 1)
    ports = {(link.a, link.a_port) for link in vendor_plan.planes["compute"].links}
    ports |= {(link.b, link.b_port) for link in vendor_plan.planes["compute"].links}
    assert set(job.ports) <= ports
    by_switch = {d: {p for s, p in job.ports if s == d} for d in job.crosses}
    assert len(by_switch["cmp-spine1"]) == len(by_switch["cmp-spine2"]) == 2  # one down to each leaf
    assert len(by_switch["cmp-su2-leaf1"]) == 4  # two senders, two uplinks
    assert len(by_switch["cmp-su1-leaf1"]) == 3  # the receiver, two uplinks


def test_the_incast_scripts_snapshot_around_concurrent_senders(tmp_path, linux_plan):
    suite = build_suite(linux_plan)
    files = scripts(suite)
    job = suite.incast[0]
    text = files[f"{job.id}.sbatch"]
    (tmp_path / "job.sbatch").write_text(text)
    subprocess.run(["bash", "-n", str(tmp_path / "job.sbatch")], check=True)
    lines = text.splitlines()
    senders = [i for i, line in enumerate(lines) if "ib_write_bw" in line and job.receiver.address in line]
    assert len(senders) == len(job.senders) and all(lines[i].endswith("&") for i in senders)  # at once
    assert len({re.search(r"-p (\d+)", lines[i])[1] for i in senders}) == len(job.senders)  # a listener each
    before, after = lines.index("snapshot before"), lines.index("snapshot after")
    assert before < min(senders) and max(senders) < after
    assert f"ethtool -S {job.receiver.interface}" in text and "hw_counters/np_cnp_sent" in text
    assert f"acceptance counters --job {job.id}" in text and "--tclass=106" in text
    assert "submit.sh" in files and f"sbatch {job.id}.sbatch" in files["submit.sh"]


# -- the evidence -------------------------------------------------------------------------------------


def _run(plan, tmp_path: Path) -> Run:
    job = next(j for j in build_suite(plan).incast if j.rail == 1)
    r = Run(plan, job, tmp_path / job.id)
    r.snapshot("before")
    return r


@pytest.fixture(params=["vendor", "linux"])
def incast(request, tmp_path, vendor_plan, linux_plan):
    return _run(vendor_plan if request.param == "vendor" else linux_plan, tmp_path)


def test_a_lossless_run_passes(incast):
    incast.lossless()
    incast.snapshot("after")
    v = incast_verdict(incast.job, incast.write())
    assert v.status == "passed", v.detail
    leaf, port = incast.job.congested
    assert f"{leaf} {port}: ECN-marked +4000" in v.detail
    assert "np_cnp_sent +4800" in v.detail and "rx_prio3_pause +700" in v.detail
    assert v.observed == pytest.approx(incast.job.threshold * 1.05, abs=0.05)


def test_drops_on_a_queue_fail_naming_device_port_and_queue(incast):
    incast.lossless()
    spine = next(d for d in incast.job.crosses if "spine" in d)
    port = sorted(incast.switches[spine].ports)[0]
    incast.switches[spine].ports[port].q3_drops += 37  # EOS: no queue counter in its reader: port discards
    incast.switches[spine].ports[port].discards += 37
    incast.snapshot("after")
    v = incast_verdict(incast.job, incast.write())
    assert v.status == "failed"
    assert f"{spine} {port}" in v.detail and "+37" in v.detail
    if incast.platforms[spine] in ("frr", "cumulus"):
        assert f"{spine} {port} queue 3: +37 packets dropped" in v.detail


def test_drops_on_the_congested_queue_of_an_nxos_leaf_are_named(tmp_path, vendor_plan):
    r = _run(vendor_plan, tmp_path)
    r.lossless()
    leaf, port = r.job.congested
    r.switches[leaf].ports[port].q3_drops += 12
    r.snapshot("after")
    v = incast_verdict(r.job, r.write())
    assert v.status == "failed" and v.detail == f"dropped: {leaf} {port} queue 3: +12 packets dropped"


def test_a_nic_that_dropped_fails_naming_its_priority(incast):
    incast.lossless()
    incast.snapshot("after")
    receiver = incast.job.receiver
    incast.nic_after[receiver.server] |= {"rx_prio3_discards": 5, "rx_discards_phy": 5}
    v = incast_verdict(incast.job, incast.write())
    assert v.status == "failed"
    assert f"{receiver.server} {receiver.interface} priority 3: rx_prio3_discards +5" in v.detail
    assert f"{receiver.server} {receiver.interface} all priorities: rx_discards_phy +5" in v.detail


def test_no_pause_and_no_mark_is_not_a_pass(incast):
    incast.snapshot("after")  # counters unchanged: the senders never overlapped
    v = incast_verdict(incast.job, incast.write())
    assert v.status == "unstressed" and not v.passed
    assert "congested nothing" in v.detail and "no PFC pause on priority 3" in v.detail


def test_marks_without_any_pause_do_not_prove_losslessness(incast):
    incast.lossless()
    for s in incast.job.senders:
        incast.nic_after[s.server].pop("rx_prio3_pause")
    for state in incast.switches.values():
        for p in state.ports.values():
            p.pfc_tx = PortState().pfc_tx
    incast.snapshot("after")
    v = incast_verdict(incast.job, incast.write())
    assert v.status == "unstressed" and "never reached its pause threshold" in v.detail


def test_pauses_without_any_mark_fail_as_ecn_off(incast):
    incast.lossless()
    incast.switches[incast.job.congested[0]].ports[incast.job.congested[1]].ecn = PortState().ecn
    incast.nic_after[incast.job.receiver.server] = {}
    for s in incast.job.senders:
        incast.nic_after[s.server].pop("rp_cnp_handled")
    incast.snapshot("after")
    v = incast_verdict(incast.job, incast.write())
    assert v.status == "failed" and "ECN marking on the RoCE queue or DCQCN on the NICs is off" in v.detail


def test_a_slow_receiver_fails_even_without_drops(incast):
    incast.lossless()
    incast.snapshot("after")
    incast.rate = incast.job.threshold * 0.5 / len(incast.job.senders)
    v = incast_verdict(incast.job, incast.write())
    assert v.status == "failed" and "below" in v.detail


def test_missing_evidence_is_no_verdict(tmp_path, linux_plan):
    r = _run(linux_plan, tmp_path)
    r.lossless()
    folder = r.write()
    v = incast_verdict(r.job, folder)  # no switches.after.json
    assert v.status == "missing" and "switches.after.json" in v.detail
    unreachable = snapshot_switches(r.job, r.platforms, lambda d: (_ for _ in ()).throw(OSError("timed out")))
    (folder / "switches.after.json").write_text(dump(unreachable))
    v = incast_verdict(r.job, folder)
    assert v.status == "missing" and "OSError: timed out" in v.detail
    (folder / f"{r.job.senders[0].server}.txt").write_text("Couldn't connect to 10.10.0.1:18515\n")
    assert incast_verdict(r.job, folder).status == "unreadable"


def test_nic_counters_are_read_by_mlx5_name():
    found = parse_nic(nic_text(rx_prio3_discards=9))
    assert found["rx_prio3_discards"] == 9 and found["rx_prio3_pause"] == 48213
    assert found["np_cnp_sent"] == 7731 and found["out_of_buffer"] == 0
    with pytest.raises(SnapshotError):
        parse_nic("Cannot get stats information: Operation not supported\n")


def test_the_report_command_judges_incasts(tmp_path, linux_plan):
    suite = build_suite(linux_plan)
    results = tmp_path / "results"
    lossless_results(linux_plan, suite, results)
    report = judge(suite, results)
    assert all(v.passed for v in report.verdicts if isinstance(v.job, IncastJob))
    done = run_in_process("gpufabric", "acceptance", "report", "--results", str(results), "--json")
    jobs = {j["id"]: j for j in json.loads(done.stdout)["jobs"]}
    assert all(jobs[j.id]["status"] == "passed" for j in suite.incast)
    assert done.returncode == 4  # the pair and nccl-tests jobs have no result here
    (results / suite.incast[0].id / "switches.after.json").write_text(
        (results / suite.incast[0].id / "switches.before.json").read_text())  # fmt: skip
    for e in suite.incast[0].servers():
        (results / suite.incast[0].id / f"nic.after.{e.server}.txt").write_text(nic_text())
    report = judge(suite, results)
    xml = junit(report)
    assert f'name="{suite.incast[0].id}"><failure message="not a pass: no PFC pause' in xml


def test_an_unknown_incast_job_is_bad_input():
    done = run_in_process(
        "gpufabric", "acceptance", "counters", "--job", "incast.nope", "--phase", "before", "--results", "r"
    )
    assert done.returncode == 2 and "no incast job 'incast.nope'" in done.stderr
