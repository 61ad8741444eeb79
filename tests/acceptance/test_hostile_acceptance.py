"""`acceptance report` certifies no broken fabric: outputs that are not the job's evidence (another
tool or test type, other sizes or counts, two runs in one file), figures no link can produce (inf, NaN,
above line rate, negative times), data that was wrong or never checked, runs cut short, lost pings,
incast drop counters that were cleared mid-test, and result files that are no regular file, too large
or not UTF-8.

Every output here is built from the real tools' formats: perftest's and nccl-tests' as the recorded
outputs in tests/acceptance_outputs/ show them (nccl-tests' rows printed with its own column widths),
iperf3's JSON and ping's text as the real tools printed them on this machine's loopback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from conftest import INVENTORY, ROOT, cli_env
from incast_evidence import Run, lossless_results, nic_text

from gpufabric.acceptance.model import IncastJob, NcclJob, PerfJob, Suite
from gpufabric.acceptance.report import MAX_OUTPUT, Report, Verdict, incast_verdict, judge, junit
from gpufabric.acceptance.suite import build_suite, stand_in
from gpufabric.cli import main
from gpufabric.inputs import InputError
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan

OUTPUTS = Path(__file__).parents[1] / "acceptance_outputs"
CLI_TIMEOUT = 120  # seconds: a report that hangs on a FIFO never ends; one that works takes a few


@pytest.fixture(scope="module")
def plan():
    return build_plan(load_intent(str(INVENTORY / "fabric.yml")))


@pytest.fixture(scope="module")
def suite(plan):
    return build_suite(plan)


def _job(suite, tool: str, path: str = "spine") -> PerfJob:
    return next(j for j in suite.perf if j.tool == tool and j.path == path)


def _nccl_job(suite, tool: str = "all_reduce_perf") -> NcclJob:
    return next(n for n in suite.nccl if n.tool == tool and n.scope == "cluster")


def _judge(job: PerfJob | NcclJob, text: str, tmp_path: Path) -> Verdict:
    """The verdict on one job whose result file holds `text`, through the report's `judge`."""
    (tmp_path / f"{job.id}.txt").write_text(text)
    one = Suite("lab", perf=[job]) if isinstance(job, PerfJob) else Suite("lab", nccl=[job])
    [verdict] = judge(one, tmp_path).verdicts
    return verdict


# -- the tools' outputs --------------------------------------------------------------------------------


def bw_text(average: str, *, title: str = "RDMA_Write BW Test", size: int = 65536, extra: str = "") -> str:
    """ib_write_bw --report_gbits as recorded; `average` as printf prints it (4000.00, inf, -nan)."""
    text = (OUTPUTS / "ib_write_bw.txt").read_text().replace("{BW}", average)
    text = text.replace("RDMA_Write BW Test", title).replace(" 65536      ", f" {size:<7}    ")
    return text.replace(" Max inline data : 0[B]\n", extra or " Max inline data : 0[B]\n")


def read_bw_text(average: str) -> str:
    """ib_read_bw: its own title, and the outstanding reads where a write test shows its inline size."""
    return bw_text(average, title="RDMA_Read BW Test", extra=" Outstand reads  : 16\n")


def lat_text(typical: str, *, title: str = "RDMA_Write Latency Test", iterations: int = 10000) -> str:
    text = (OUTPUTS / "ib_write_lat.txt").read_text().replace("RDMA_Write Latency Test", title)
    text = text.replace(" 2       10000 ", f" 2       {iterations:<5} ")
    return text.replace("{LAT}", typical).replace("{MIN}", "2.01").replace("{AVG}", "2.10")


def _nccl_float(value: float, width: int) -> str:
    """nccl-tests' getFloatStr: two decimals if they fit the column, then one, then none."""
    for fmt in ("{:.2f}", "{:.1f}", "{:.0f}"):
        if len(s := fmt.format(value)) <= width:
            return s.rjust(width)
    return f"{value:.1e}".rjust(width)


def nccl_text(
    busbw: float = 19.5,
    *,
    largest: int = 8 << 30,
    max_bytes: int = 8 << 30,
    iters: int = 20,
    check: int = 1,
    wrong: dict[tuple[int, str], int] | None = None,
    name: str | None = None,
    footer: str | None = "0 OK",
    busbw_cell: str | None = None,
) -> str:
    """An nccl-tests run from 8 bytes to `largest` by a factor of 2, in its column widths (util.cu's
    writeBenchmarkLinePreamble and writeBenchmarkLineBody); the header and device lines as recorded.
    `wrong`: (size, "oop" | "ip") -> wrong elements; `footer`: what `Out of bounds values` says (None:
    the run died before it); `name`: the `# Collective test starting:` line newer versions print."""
    recorded = (OUTPUTS / "nccl.txt").read_text().splitlines()
    head = [line for line in recorded if line.startswith("#") and "Out of bounds" not in line and "Avg bus" not in line]
    head = head[: next(i for i, line in enumerate(head) if "(B)" in line) + 1]
    head[0] = (f"# nThread 1 nGpus 1 minBytes 8 maxBytes {max_bytes} step: 2(factor) warmup iters: 5 iters: {iters} "
               f"agg iters: 1 validation: {check} graph: 0")  # fmt: skip
    if name is not None:
        head = ["# nccl-tests version 2.17.6 nccl-headers=22703 nccl-library=22703",
                f"# Collective test starting: {name}", *head]  # fmt: skip
    rows, size = [], 8
    while size <= largest:
        bus = busbw * size / (size + (4 << 20))
        alg = bus  # two ranks: busbw = algbw x 2(n-1)/n
        time_us = size / max(alg, 1e-3) / 1e3
        line = f"{size:12d}  {size // 4:12d}  {'float':>8s}  {'sum':>6s}  {-1:6d}"
        for where in ("oop", "ip"):
            bus_s = busbw_cell if (busbw_cell and size == largest and where == "oop") else _nccl_float(bus, 6)
            n = (wrong or {}).get((size, where), 0)
            cell = "   N/A" if check == 0 else f"{n:6g}"
            line += f"  {_nccl_float(time_us, 7)}  {_nccl_float(alg, 6)}  {bus_s:>6s}  {cell}"
        rows.append(line)
        size *= 2
    tail = (
        []
        if footer is None
        else [f"# Out of bounds values : {footer}", f"# Avg bus bandwidth    : {busbw / 2:g} ", "#"]
    )
    return "\n".join([*head, *rows, *tail]) + "\n"


def iperf3_text(**changes: object) -> str:
    """iperf3 -c ... -P 2 -t 1 -J as it printed on the loopback; `changes` set test_start's keys, or the
    receiver's bits_per_second (`bps`, written as given: a number, or text such as 1e999)."""
    doc = json.loads((OUTPUTS / "iperf3.json").read_text())
    bps = changes.pop("bps", None)
    doc["start"]["test_start"].update(changes)
    text = json.dumps(doc, indent=2)
    if bps is not None:
        text = text.replace(json.dumps(doc["end"]["sum_received"]["bits_per_second"]), str(bps))
    return text


def ping_text(received: int = 5, rtt: str = "0.033/0.048/0.087/0.019", transmitted: int = 5) -> str:
    """ping -c 5 as it printed on the loopback, with `received` of its probes answered."""
    lines = (OUTPUTS / "ping.txt").read_text().splitlines()
    replies = [line for line in lines if line.startswith("64 bytes")][:received]
    lost = round(100 * (transmitted - received) / transmitted)
    out = [lines[0], *replies, "", lines[-3],
           f"{transmitted} packets transmitted, {received} received, {lost}% packet loss, time 815ms"]  # fmt: skip
    if received:
        out.append(f"rtt min/avg/max/mdev = {rtt} ms")
    return "\n".join(out) + "\n"


def test_a_figure_below_its_threshold_says_so(suite, tmp_path):
    v = _judge(_job(suite, "ib_write_bw"), bw_text("176.47"), tmp_path)
    assert (v.status, v.detail) == ("failed", "176.47 Gb/s below the threshold 352.93 Gb/s (65536 bytes)")


def test_the_recorded_and_real_outputs_pass(suite, tmp_path):
    """The checks refuse nothing the tools print for a run as planned."""
    bw, lat, nccl = _job(suite, "ib_write_bw"), _job(suite, "ib_write_lat"), _nccl_job(suite)
    assert _judge(bw, bw_text("380.12"), tmp_path).status == "passed"
    assert _judge(lat, lat_text("2.41"), tmp_path).status == "passed"
    v = _judge(nccl, nccl_text(nccl.expected * 1.02, name="all_reduce_perf"), tmp_path)
    assert v.status == "passed" and v.observed == pytest.approx(nccl.expected * 1.02, abs=0.01), v.detail
    lab = stand_in(suite)
    iperf3 = next(j for j in lab.perf if j.tool == "iperf3" and j.qps == 2)
    ping = next(j for j in lab.perf if j.tool == "ping")
    v = _judge(iperf3, iperf3_text(), tmp_path)
    assert v.status == "passed" and v.observed == pytest.approx(7.092, abs=0.001)
    v = _judge(ping, (OUTPUTS / "ping.txt").read_text(), tmp_path)
    assert v.status == "passed" and v.observed == 48.0


# -- 1. figures no link produces -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("printed", "says"),
    [
        ("inf", "bandwidth 'inf' is not a finite number"),
        ("-nan", "bandwidth '-nan' is not a finite number"),
        ("4000.00", "bandwidth 4000 Gb/s above the 400 Gb/s line rate"),
        ("400.01", "bandwidth 400.01 Gb/s above the 400 Gb/s line rate"),
    ],
)
def test_a_bandwidth_no_nic_can_reach_is_invalid(suite, tmp_path, printed, says):
    v = _judge(_job(suite, "ib_write_bw"), bw_text(printed), tmp_path)
    assert (v.status, v.detail, v.observed) == ("invalid", says, None)


@pytest.mark.parametrize(
    ("cell", "says"),
    [("   inf", "busbw at 8589934592 bytes 'inf' is not a finite number"),
     ("   nan", "busbw at 8589934592 bytes 'nan' is not a finite number"),
     ("5000.0", "bus bandwidth 5000 GB/s above 200 GB/s, twice what a server's NICs carry")],
)  # fmt: skip
def test_a_bus_bandwidth_no_nic_can_carry_is_invalid(suite, tmp_path, cell, says):
    v = _judge(_nccl_job(suite), nccl_text(busbw_cell=cell), tmp_path)
    assert (v.status, v.detail) == ("invalid", says)


@pytest.mark.parametrize("bps", ["Infinity", "NaN", "1e999", "-5.0"])
def test_an_iperf3_rate_that_is_no_number_is_refused(suite, tmp_path, bps):
    job = next(j for j in stand_in(suite).perf if j.tool == "iperf3" and j.qps == 2)
    v = _judge(job, iperf3_text(bps=bps), tmp_path)
    assert v.status in ("invalid", "unreadable") and v.observed is None, v
    assert ("not valid JSON" in v.detail) if bps in ("Infinity", "NaN") else ("bandwidth" in v.detail)


def test_the_json_report_stays_strict_json(suite, tmp_path, capsys):
    """No NaN reaches --json: the figure is refused, and the verdict says why."""
    results = tmp_path / "results"
    results.mkdir()
    job = _job(suite, "ib_write_bw")
    (results / f"{job.id}.txt").write_text(bw_text("nan"))
    with pytest.raises(SystemExit) as exited:
        main(["acceptance", "report", "--results", str(results), "--json"])
    assert exited.value.code == 4

    def no_constant(name: str) -> None:
        raise AssertionError(f"{name} in --json")

    doc = json.loads(capsys.readouterr().out, parse_constant=no_constant)
    seen = next(j for j in doc["jobs"] if j["id"] == job.id)
    assert seen["status"] == "invalid" and seen["observed"] is None and "not a finite number" in seen["detail"]


# -- 2. another tool or test type, other sizes or counts -------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "text", "says"),
    [
        ("ib_write_bw", read_bw_text("370.00"), "ib_read_bw output where ib_write_bw was planned"),
        ("ib_write_bw", bw_text("370.00", title="RDMA_Write Bidirectional BW Test"),
         "ib_write_bw output of a bidirectional test (-b) where a unidirectional one was planned"),
        ("ib_write_bw", bw_text("370.00", title="Send BW Test"), "ib_send_bw output where ib_write_bw was planned"),
        ("ib_write_bw", bw_text("370.00", size=4096), "messages of 4096 bytes where 65536 were planned"),
        ("ib_write_lat", lat_text("2.41", title="RDMA_Read Latency Test"),
         "ib_read_lat output where ib_write_lat was planned"),
        ("ib_write_lat", lat_text("2.41", iterations=1000), "1000 iterations where 10000 were planned"),
    ],
)  # fmt: skip
def test_another_perftest_than_the_jobs_is_invalid(suite, tmp_path, tool, text, says):
    v = _judge(_job(suite, tool), text, tmp_path)
    assert (v.status, v.detail) == ("invalid", says)


def test_all_message_sizes_where_one_was_planned_is_invalid(suite, tmp_path):
    text = bw_text("370.00")
    row = next(line for line in text.splitlines() if line.startswith(" 65536"))
    text = text.replace(row, row.replace(" 65536 ", " 32768 ") + "\n" + row)  # perftest -a prints a row per size
    v = _judge(_job(suite, "ib_write_bw"), text, tmp_path)
    assert (v.status, v.detail) == ("invalid", "results for 2 message sizes (perftest -a) where one size was planned")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (nccl_text(max_bytes=1 << 30, largest=1 << 30), "maxBytes 1073741824 where 8589934592 was planned (-e)"),
        (nccl_text(iters=5), "iters 5 where 20 was planned (-n)"),
        (nccl_text(name="all_gather_perf"), "all_gather_perf output where all_reduce_perf was planned"),
    ],
)
def test_another_nccl_run_than_the_jobs_is_invalid(suite, tmp_path, text, says):
    v = _judge(_nccl_job(suite), text, tmp_path)
    assert (v.status, v.detail) == ("invalid", says)


@pytest.mark.parametrize(
    ("changes", "says"),
    [({"reverse": 1}, "reverse 1 where the client sending (no -R)"), ({"bidir": 1}, "bidir 1 where one way"),
     ({"num_streams": 1}, "num_streams 1 where 2 streams (-P)"), ({"protocol": "UDP"}, "protocol 'UDP' where a TCP")],
)  # fmt: skip
def test_another_iperf3_test_than_the_stand_ins_is_invalid(suite, tmp_path, changes, says):
    job = next(j for j in stand_in(suite).perf if j.tool == "iperf3" and j.qps == 2)
    v = _judge(job, iperf3_text(**changes), tmp_path)
    assert v.status == "invalid" and says in v.detail, v.detail


def test_fewer_pings_than_planned_is_invalid(suite, tmp_path):
    job = next(j for j in stand_in(suite).perf if j.tool == "ping")
    v = _judge(job, ping_text(received=3, transmitted=3), tmp_path)
    assert (v.status, v.detail) == ("invalid", "ping sent 3 probes where 5 were planned (-c)")


# -- 3. two runs in one file -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "good", "bad", "says"),
    [
        ("ib_write_bw", bw_text("380.00"), bw_text("12.00"), "2 perftest runs in one file"),
        ("ib_write_lat", lat_text("2.41"), lat_text("95.00"), "2 perftest runs in one file"),
        ("all_reduce_perf", nccl_text(19.5), nccl_text(1.5), "2 nccl-tests runs in one file"),
        ("ping", ping_text(), ping_text(received=0), "2 ping runs in one file"),
    ],
)
def test_two_runs_appended_in_one_file_are_refused(suite, tmp_path, tool, good, bad, says):
    """The good run first, the bad one after: neither wins. The batch script writes a file afresh, so a
    second run means something else wrote it, and which run was the job's cannot be told."""
    if tool == "ping":
        job = next(j for j in stand_in(suite).perf if j.tool == "ping")
    else:
        job = _nccl_job(suite) if tool.endswith("_perf") else _job(suite, tool)
    v = _judge(job, good + bad, tmp_path)
    assert v.status == "invalid" and v.detail.startswith(says), v.detail


def test_two_iperf3_runs_in_one_file_are_refused(suite, tmp_path):
    job = next(j for j in stand_in(suite).perf if j.tool == "iperf3" and j.qps == 2)
    v = _judge(job, iperf3_text() + iperf3_text(bps=1000), tmp_path)
    assert (v.status, v.detail) == ("invalid", "more than one iperf3 run in one file: a result file holds one run")


# -- 4. data wrong in place, or never checked -------------------------------------------------------------


def test_wrong_elements_in_place_fail(suite, tmp_path):
    job = _nccl_job(suite)
    text = nccl_text(job.expected * 1.1, wrong={(8 << 30, "ip"): 7}, footer=None)  # died before its footer
    v = _judge(job, text, tmp_path)
    assert (v.status, v.detail) == ("failed", "7 wrong elements in place at 8589934592 bytes: data corrupted")


def test_wrong_elements_at_any_size_fail_whatever_the_footer_says(suite, tmp_path):
    job = _nccl_job(suite)
    v = _judge(job, nccl_text(job.expected * 1.1, wrong={(1 << 20, "oop"): 3}), tmp_path)
    assert (v.status, v.detail) == ("failed", "3 wrong elements out of place at 1048576 bytes: data corrupted")
    xml = ET.fromstring(junit(Report([v])))
    assert xml.find("testcase/failure").get("message") == v.detail  # the fault, not "observed 0.0 < threshold"


def test_data_not_checked_fails(suite, tmp_path):
    """`-c 0`: validation 0 in the parameters and N/A in every #wrong column: fast, and unproven."""
    job = _nccl_job(suite)
    v = _judge(job, nccl_text(job.expected * 1.1, check=0), tmp_path)
    assert v.status == "failed" and v.detail.startswith("data not checked (-c 0)"), v.detail
    text = nccl_text(job.expected * 1.1, check=0).replace("validation: 0", "validation: 1")
    v = _judge(job, text, tmp_path)  # the parameters altered, the columns still say N/A
    assert v.status == "failed" and v.detail.startswith("data not checked (-c 0)"), v.detail


# -- 5. a run cut short -----------------------------------------------------------------------------------


def test_a_run_that_died_at_1_gib_is_no_result(suite, tmp_path):
    job = _nccl_job(suite)
    v = _judge(job, nccl_text(job.expected * 1.1, largest=1 << 30, footer=None), tmp_path)
    assert v.status == "unreadable"
    assert v.detail.startswith("the run stopped at 1073741824 bytes, before the job's largest size, 8589934592")


def test_all_to_all_may_round_its_largest_size_down_to_whole_chunks_per_rank(suite, tmp_path):
    job = _nccl_job(suite, "all_to_all_perf")
    cut = (8 << 30) - job.ranks * 16  # nccl-tests' alltoall: a whole number of 16-byte chunks per rank
    text = nccl_text(job.expected * 1.1).replace(f"{8 << 30:12d}  {(8 << 30) // 4:12d}", f"{cut:12d}  {cut // 4:12d}")
    assert _judge(job, text, tmp_path).status == "passed"


# -- 6. lost pings, negative times ------------------------------------------------------------------------


def test_lost_pings_fail_the_path(suite, tmp_path):
    job = next(j for j in stand_in(suite).perf if j.tool == "ping")
    v = _judge(job, ping_text(received=1, rtt="0.081/0.081/0.081/0.000"), tmp_path)
    assert (v.status, v.detail, v.observed) == ("failed", "ping lost 4 of 5 probes (80%)", 81.0)
    v = _judge(job, ping_text(received=0), tmp_path)
    assert (v.status, v.detail) == ("failed", "ping lost all 5 probes: no reply came back")


@pytest.mark.parametrize(
    ("tool", "says"),
    [("ping", "round trip (avg) -0.048 ms is negative"), ("ib_write_lat", "latency (t_typical) -2.41 us is negative")],
)
def test_a_negative_latency_is_invalid(suite, tmp_path, tool, says):
    if tool == "ping":
        job = next(j for j in stand_in(suite).perf if j.tool == "ping")
        text = ping_text(rtt="0.033/-0.048/0.087/0.019")
    else:
        job, text = _job(suite, tool), lat_text("-2.41")
    v = _judge(job, text, tmp_path)
    assert (v.status, v.detail) == ("invalid", says)


# -- 7. incasts: a sender at NaN, a drop counter cleared mid-test ------------------------------------------


@pytest.fixture
def incast(plan, suite, tmp_path) -> Run:
    job = suite.incast[0]
    r = Run(plan, job, tmp_path / job.id)
    r.snapshot("before")
    r.lossless()
    return r


def test_an_incast_with_a_sender_at_nan_fails(incast):
    incast.snapshot("after")
    folder = incast.write()
    sender = incast.job.senders[1].server
    (folder / f"{sender}.txt").write_text(bw_text("nan"))
    v = incast_verdict(incast.job, folder)
    assert (v.status, v.detail) == ("invalid", f"sender {sender}: bandwidth 'nan' is not a finite number")
    (folder / f"{sender}.txt").write_text(bw_text("4000.00"))
    v = incast_verdict(incast.job, folder)
    assert (v.status, v.detail) == ("invalid", f"sender {sender}: bandwidth 4000 Gb/s above the 400 Gb/s line rate")


def test_a_nic_drop_counter_that_went_down_leaves_drops_unknown(incast):
    incast.snapshot("after")
    folder = incast.write()
    receiver = incast.job.receiver
    before = folder / f"nic.before.{receiver.server}.txt"
    after = folder / f"nic.after.{receiver.server}.txt"
    before.write_text(nic_text(rx_prio3_discards=120))
    after.write_text(after.read_text().replace("rx_prio3_discards: 0", "rx_prio3_discards: 4"))
    v = incast_verdict(incast.job, folder)
    assert v.status == "unknown" and not v.passed
    assert v.detail == (f"drops unknown, not none: {receiver.server} {receiver.interface}: rx_prio3_discards went "
                        "down from 120 to 4 (cleared or wrapped during the test)")  # fmt: skip


def test_a_nic_drop_counter_missing_after_leaves_drops_unknown(incast):
    incast.snapshot("after")
    folder = incast.write()
    sender = incast.job.senders[0]
    after = folder / f"nic.after.{sender.server}.txt"
    after.write_text(after.read_text().replace("     rx_discards_phy: 0\n", ""))
    v = incast_verdict(incast.job, folder)
    assert v.status == "unknown"
    assert f"{sender.server} {sender.interface}: rx_discards_phy read before (0), not after" in v.detail


def test_a_switch_discard_counter_that_went_down_leaves_drops_unknown(incast):
    spine = next(d for d in incast.job.crosses if "spine" in d)
    port = sorted(incast.switches[spine].ports)[0]
    incast.switches[spine].ports[port].discards = 50
    incast.snapshot("before")  # again, with the discards the port had before the test
    incast.switches[spine].ports[port].discards = 3  # cleared during the test, then 3 more
    incast.snapshot("after")
    v = incast_verdict(incast.job, incast.write())
    assert v.status == "unknown"
    assert f"{spine} {port}: discards.tx went down from 50 to 3" in v.detail


def test_two_nic_snapshots_in_one_file_are_refused(incast):
    """The first shows the drops, the second (appended) does not: neither is read."""
    incast.snapshot("after")
    folder = incast.write()
    receiver = incast.job.receiver.server
    after = folder / f"nic.after.{receiver}.txt"
    text = after.read_text()
    after.write_text(text.replace("rx_prio3_discards: 0", "rx_prio3_discards: 9") + text)
    v = incast_verdict(incast.job, folder)
    assert (v.status, v.detail) == (
        "unreadable",
        "counter snapshot: rx_prio3_discards read twice (9, then 0): more than one snapshot in the file",
    )


@pytest.mark.parametrize("value", ["NaN", '"12"', "1.5", "-4", "true"])
def test_a_switch_counter_that_is_no_whole_number_is_unreadable(incast, value):
    incast.snapshot("after")
    folder = incast.write()
    path = folder / "switches.after.json"
    doc = json.loads(path.read_text())
    spine = next(d for d in incast.job.crosses if "spine" in d)
    port = sorted(doc[spine])[0]
    text = json.dumps(doc, indent=1).replace('"discards.tx": 0', f'"discards.tx": {value}', 1)
    assert text != json.dumps(doc, indent=1)
    path.write_text(text)
    v = incast_verdict(incast.job, folder)
    assert v.status == "unreadable" and v.detail.startswith("counter snapshot: switches.after.json"), v.detail
    if value != "NaN":
        assert f"{spine} {port} discards.tx" in v.detail


# -- 8. result files that are no regular file, too large, or not UTF-8 ------------------------------------


def _report_cli(results: Path) -> subprocess.CompletedProcess:
    """The report in a process of its own, bounded: on a FIFO it would wait for a writer forever."""
    return subprocess.run([sys.executable, "-m", "gpufabric", "acceptance", "report", "--results", str(results)],
                          capture_output=True, text=True, cwd=ROOT, env=cli_env(), timeout=CLI_TIMEOUT,
                          check=False)  # fmt: skip


def test_a_fifo_as_a_pair_result_is_bad_input(suite, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    fifo = results / f"{_job(suite, 'ib_write_bw').id}.txt"
    os.mkfifo(fifo)
    done = _report_cli(results)
    assert done.returncode == 2, done.stderr
    assert f"error: {fifo}:" in done.stderr
    assert "is a FIFO, not a regular file (expected ib_write_bw's output)" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_fifo_in_an_incast_does_not_hang_the_report(plan, suite, tmp_path):
    results = tmp_path / "results"
    lossless_results(plan, suite, results)
    job: IncastJob = suite.incast[0]
    fifo = results / job.id / f"nic.before.{job.receiver.server}.txt"
    fifo.unlink()
    os.mkfifo(fifo)
    done = _report_cli(results)
    assert done.returncode == 2, done.stderr
    assert f"error: {fifo}:" in done.stderr and "is a FIFO, not a regular file" in done.stderr


def test_dev_zero_a_huge_file_and_latin_1_are_refused_located(suite, tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    path = results / f"{_job(suite, 'ib_write_bw').id}.txt"
    path.symlink_to("/dev/zero")
    with pytest.raises(InputError) as caught:
        judge(suite, results)
    assert caught.value.file == str(path) and "is a device, not a regular file" in caught.value.problems[0].message
    path.unlink()
    with path.open("wb") as fh:
        fh.truncate(MAX_OUTPUT + 1)  # sparse: no disk spent
    with pytest.raises(InputError) as caught:
        judge(suite, results)
    assert "is larger than 4 MiB" in caught.value.problems[0].message
    path.write_bytes(bw_text("380.00").replace("mlx5_0", "mlx5_\xe9").encode("latin-1"))
    with pytest.raises(InputError) as caught:
        judge(suite, results)
    assert "is not UTF-8 text" in caught.value.problems[0].message and caught.value.line_of(()) == 3


def test_latin_1_output_is_bad_input_on_the_command_line(suite, tmp_path, capsys):
    results = tmp_path / "results"
    results.mkdir()
    path = results / f"{_job(suite, 'ib_write_lat').id}.txt"
    path.write_bytes(lat_text("2.41").replace("Latency Test", "Latency Test \xb5s").encode("latin-1"))
    with pytest.raises(SystemExit) as exited:
        main(["acceptance", "report", "--results", str(results)])
    said = capsys.readouterr().err
    assert exited.value.code == 2 and f"error: {path}:2:" in said and "not UTF-8" in said, said
