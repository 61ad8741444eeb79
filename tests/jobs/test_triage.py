"""NCCL's and PyTorch's errors mapped onto the plan, and the part they have in common: a 512-rank job's mixed
log, written by the generator below in the layouts of tests/jobs/test_nccl_log.py (NCCL 2.22-2.27's NET/IB
completion line, 2.18-2.27's init and socket lines, PyTorch's watchdog), resolves to the one cable behind its
errors; a leaf, a server and nothing at all where the errors say so."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest

from gpufabric.export.cabling import render as cabling
from gpufabric.jobs.nccl_log import Reading, lines_of, read_lines_into
from gpufabric.jobs.triage import triage
from gpufabric.plan.model import ip
from tests.conftest import example_plan, run_in_process

ROOT = Path(__file__).resolve().parents[2]
SUPERPOD = ROOT / "inventory" / "examples" / "superpod-4su.yml"
DEFAULT = ROOT / "inventory" / "fabric.yml"


def warn(host, dev, message, where="transport/net_ib.cc:2458"):
    # src/debug.cc: "%s:%d:%d [%d] %s:%d NCCL WARN " (2.26 on: "[%F %T] " first)
    return f"[2026-11-27 07:59:0{dev}] {host}:{4000 + dev}:{4100 + dev} [{dev}] {where} NCCL WARN {message}"


def completion(peer_socket, status, local_gid, remote_gid, hca, req="Send"):
    # src/transport/net_ib.cc (NCCL 2.22-2.27): "NET/IB: Got completion from peer %s with status=%d opcode=%d len=%u
    # vendor err %u (%s)%s%s%s%s hca %s"
    return (
        f"NET/IB: Got completion from peer {peer_socket}<51234> with status={status} opcode=0 len=0 vendor err 129 "
        f"({req}) localGid ::ffff:{local_gid} remoteGids::ffff:{remote_gid} hca {hca}"
    )


def nics_of(server, plane="compute"):
    return {n.rail: n for n in server.nics if n.plane == plane}


def job_log(plan, nodes, bad_node, bad_rail, peers_per_side=6):
    """A 64-node, 512-rank job whose `bad_rail` NIC on `bad_node` lost its link: init lines for every rank (a
    world communicator and one per node), the retry-exceeded completions from both ends of the bad NIC's queue
    pairs, a watchdog timeout on every rank, a closed bootstrap socket, training output and a WARN of another
    kind."""
    servers = {s.name: s for s in plan.servers}
    lines = ["epoch 0 step 1200 loss 2.113"]
    rank = 0
    place = {}
    for node in nodes:
        for dev in range(8):
            # src/init.cc, 2.23 on: "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx"
            lines.append(
                f"{node}:{3000 + dev}:{3000 + dev} [{dev}] NCCL INFO ncclCommInitRank comm 0x7f{rank:04x} rank {rank} "
                f"nranks 512 cudaDev {dev} nvmlDev {dev} busId {dev}b000 commId 0x5eed - Init COMPLETE"
            )
            lines.append(
                f"{node}:{3000 + dev}:{3000 + dev} [{dev}] NCCL INFO ncclCommSplit comm 0x6f{rank:04x} rank {dev} "
                f"nranks 8 cudaDev {dev} nvmlDev {dev} busId {dev}b000 parent 0x7f{rank:04x} splitCount 1 color 1 "
                f"key {dev} - Init COMPLETE"
            )
            place[rank] = node
            rank += 1
    bad = nics_of(servers[bad_node])[bad_rail]
    bad_socket = ip(nics_of(servers[bad_node], "business")[1].address)
    peers = [n for n in nodes if n != bad_node][:peers_per_side]
    dev = bad_rail - 1  # the GPU next to the NIC: what NCCL picks on this server kind, and nothing here relies on
    for peer in peers:
        their = nics_of(servers[peer])[bad_rail]
        their_socket = ip(nics_of(servers[peer], "business")[1].address)
        lines.append("")  # WARN lines start with a newline of their own
        lines.append(
            warn(bad_node, dev, completion(their_socket, 12, ip(bad.address), ip(their.address), f"mlx5_{dev}"))
        )
        lines.append(
            warn(peer, dev, completion(bad_socket, 12, ip(their.address), ip(bad.address), f"mlx5_{dev}", "Recv"))
        )
    # src/misc/socket.cc: "socketProgress: Connection closed by remote peer %s", the peer by name
    lines.append(
        warn(peers[0], 0, f"socketProgress: Connection closed by remote peer {bad_node}.superpod.example.net<40001>",
             "misc/socket.cc:71")
    )  # fmt: skip
    lines.append(warn(peers[1], 2, "Cuda failure 'unspecified launch failure'", "enqueue.cc:1402"))
    for r in range(512):
        lines.append(
            f"[rank{r}]:[E1127 08:09:00.000000000 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
            f"Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9021, OpType=ALLREDUCE, NumelIn=4194304, "
            f"NumelOut=4194304, Timeout(ms)=600000) ran for 600118 milliseconds before timing out."
        )
    return "\n".join(lines) + "\n", bad, place


def read(text, name="job.log"):
    reading = Reading()
    read_lines_into(reading, name, lines_of(text))
    return reading


def exported_cable(plan, node, interface):
    for row in csv.DictReader(io.StringIO(cabling(plan))):
        if (row["a_device"], row["a_port"]) == (node, interface):
            return row["cable_id"], row["b_device"], row["b_port"]
    raise AssertionError((node, interface))


@pytest.fixture(scope="module")
def superpod():
    return example_plan(SUPERPOD)


def gpu_nodes(plan, count=64):
    return [s.name for s in plan.servers if s.kind == "gpu"][:count]


def test_a_512_rank_job_s_mixed_log_resolves_to_the_cable_of_the_nic_in_every_failing_pair(superpod):
    nodes = gpu_nodes(superpod)
    text, bad, place = job_log(superpod, nodes, "dgx017", 3)
    found = triage(superpod, read(text))
    assert found.ranks_placed == 512  # the world communicator's, not the per-node ones' ranks 0-7
    assert found.reading.unread_count == 1  # the CUDA failure: a WARN in no network layout
    assert found.evidence == "network" and found.weighed == 13  # 12 completions + the closed socket
    (suspect,) = found.suspects
    cable, leaf, port = exported_cable(superpod, "dgx017", bad.interface)
    assert (suspect.kind, suspect.name) == ("nic", f"dgx017 {bad.interface}")
    assert (suspect.nic.cable, suspect.nic.leaf, suspect.nic.leaf_port, suspect.nic.rail) == (cable, leaf, port, 3)
    assert suspect.events == 12
    # the watchdog's ranks are mapped (each to its own node), and weighed only when no network error is there
    timeouts = [e for e in found.events if e.said.kind == "watchdog"]
    assert len(timeouts) == 512 and all(e.ends[0].server == place[e.said.rank] for e in timeouts)


def test_two_servers_nics_under_one_leaf_name_that_leaf(superpod):
    servers = {s.name: s for s in superpod.servers}
    a, b = nics_of(servers["dgx001"])[3], nics_of(servers["dgx002"])[3]  # unit 1, rail 3: one leaf
    c, d = nics_of(servers["dgx040"])[3], nics_of(servers["dgx070"])[3]  # other units' rail-3 leaves
    assert a.leaf == b.leaf and len({a.leaf, c.leaf, d.leaf}) == 3
    text = "\n".join(
        [
            warn("dgx001", 2, completion("10.0.0.1", 12, ip(a.address), ip(c.address), "mlx5_2")),
            warn("dgx002", 2, completion("10.0.0.1", 12, ip(b.address), ip(d.address), "mlx5_2")),
            warn("dgx070", 2, completion("10.0.0.1", 12, ip(d.address), ip(a.address), "mlx5_2")),
        ]
    )
    found = triage(superpod, read(text))
    assert [(s.kind, s.name, s.events) for s in found.suspects] == [("leaf", a.leaf, 3)]
    assert found.suspects[0].confirm[0].endswith(f"--device {a.leaf} --counter-window 60")


def test_timeouts_alone_name_the_server_all_their_ranks_ran_on():
    plan = example_plan(DEFAULT)
    init = "\n".join(
        f"{host}:9:9 [{dev}] NCCL INFO comm 0x1{r} rank {r} nranks 4 cudaDev {dev} busId 1000 commId 0x2 - Init "
        "COMPLETE"
        for r, (host, dev) in enumerate([("gpu01", 0), ("gpu01", 1), ("gpu02", 0), ("gpu02", 1)])
    )
    dog = (
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLGATHER, NumelIn=8, "
        "NumelOut=32, Timeout(ms)=60000) ran for 60012 milliseconds before timing out."
    )
    text = f"{init}\n[PG ID 0 PG GUID 0(default_pg) Rank 2] {dog}\n[PG ID 0 PG GUID 0(default_pg) Rank 3] {dog}\n"
    found = triage(plan, read(text))
    assert found.evidence == "timeouts"
    assert [(s.kind, s.name) for s in found.suspects] == [("server", "gpu02")]
    assert found.suspects[0].confirm == ("ansible-playbook -i <inventory> playbooks/validate.yml --limit gpu02",)


def test_errors_with_nothing_in_common_point_nowhere():
    plan = example_plan(DEFAULT)
    text = "\n".join(
        [
            warn("gpu01", 0, completion("10.12.0.5", 12, "10.10.0.1", "10.10.0.9", "mlx5_0")),  # gpu01 rail 1 - gpu03
            warn("gpu02", 1, completion("10.12.0.7", 12, "10.10.0.7", "10.10.0.15", "mlx5_1")),  # gpu02 rail 2 - gpu04
        ]
    )
    found = triage(plan, read(text))
    assert found.weighed == 2 and found.suspects == [] and found.common == []


def test_each_address_gid_and_name_is_mapped_or_said_unmapped():
    plan = example_plan(DEFAULT)
    gpu03 = {n.interface: n for n in next(s for s in plan.servers if s.name == "gpu03").nics}
    text = "\n".join(
        [
            # RoCE v2 GIDs of gpu01 eth1 and gpu03 eth1; the peer socket is gpu03's business NIC
            warn("gpu01", 0, completion(ip(gpu03["eth4"].address), 12, "10.10.0.1", ip(gpu03["eth1"].address), "m0")),
            # a link-local GID (RoCE v1, from a MAC) and an address the plan does not hold
            warn("gpu01", 0, completion("192.0.2.9", 12, "10.10.0.1", "10.10.0.1", "m0").replace(
                "remoteGids::ffff:10.10.0.1", "remoteGidsfe80::ba59:9fff:fe00:1")),
            # a socket peer by its name in the management domain, and a host outside the plan
            warn("gpu02", 0, "socketProgress: Connection closed by remote peer gpu04.lab.gpufabric.test<1234>",
                 "misc/socket.cc:49"),
            warn("cpu77", 0, "socketStartConnect: Connect to 10.12.0.1<1234> failed : Connection refused",
                 "misc/socket.cc:480"),
        ]
    )  # fmt: skip
    events = triage(plan, read(text)).events
    first = [(e.via, e.server, e.nic.interface if e.nic else None) for e in events[0].ends]
    assert first == [("local GID", "gpu01", "eth1"), ("remote GID", "gpu03", "eth1")]
    second = {e.via: e for e in events[1].ends}
    assert second["remote GID"].server is None and "no IPv4 address" in second["remote GID"].note
    third = [(e.via, e.server) for e in events[2].ends]
    assert third == [("host", "gpu02"), ("peer name", "gpu04")]
    fourth = [(e.via, e.server, e.note) for e in events[3].ends]
    assert fourth[0] == ("host", None, "not a server of the plan")
    assert fourth[1][:2] == ("peer address", "gpu01") and fourth[1][2] == ""
    assert events[3].ends[1].nic.plane == "business"


@pytest.fixture
def logs(tmp_path):
    plan = example_plan(SUPERPOD)
    text, bad, _ = job_log(plan, gpu_nodes(plan), "dgx017", 3)
    half = text.index("[rank0]:")
    (tmp_path / "rank-logs.txt").write_text(text[:half])
    (tmp_path / "torch.txt").write_text(text[half:])
    return tmp_path, bad


def test_the_command_line_exits_4_naming_the_cable_and_prints_json(logs):
    folder, bad = logs
    args = ("gpufabric", "triage", "nccl", folder / "rank-logs.txt", folder / "torch.txt", "--intent", SUPERPOD)
    done = run_in_process(*args)
    assert done.returncode == 4, done.stderr
    cable, leaf, port = exported_cable(example_plan(SUPERPOD), "dgx017", bad.interface)
    assert f"cable {cable} to {leaf} {port}" in done.stdout
    as_json = run_in_process(*args, "--json")
    assert as_json.returncode == 4
    doc = json.loads(as_json.stdout)
    assert doc["suspects"] == [
        {"kind": "nic", "name": f"dgx017 {bad.interface}", "events": 12, "plane": "compute", "rail": 3,
         "cable": cable, "leaf": leaf, "leaf_port": port,
         "confirm": [f"nornir validate {SUPERPOD} --device {leaf} --counter-window 60"]}
    ]  # fmt: skip
    assert doc["unread_count"] == 1 and doc["unread"][0]["text"].endswith("'unspecified launch failure'")


def test_a_log_naming_nothing_exits_0(tmp_path):
    log = tmp_path / "quiet.log"
    log.write_text("epoch 1 loss 1.9\ngpu01:1:1 [0] NCCL INFO Channel 00/02 : 0 1\n")
    done = run_in_process("gpufabric", "triage", "nccl", log)
    assert done.returncode == 0, done.stderr
    assert "no part common to the 0 error(s)" in done.stdout


def test_unreadable_logs_exit_2_with_file_and_line(tmp_path):
    latin = tmp_path / "latin1.log"
    latin.write_bytes(b"ok\ngpu01:1:1 [0] x.cc:1 NCCL WARN caf\xe9\n")
    long = tmp_path / "long.log"
    long.write_text("x" * (64 * 1024 + 10) + "\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, said in (
        (latin, "not UTF-8"),
        (long, "longer than 65,536 bytes"),
        (fifo, "a FIFO"),
        (tmp_path, "director"),
    ):
        done = run_in_process("gpufabric", "triage", "nccl", path)
        assert done.returncode == 2, (path, done.stderr)
        assert said in done.stderr and "Traceback" not in done.stderr
    done = run_in_process("gpufabric", "triage", "nccl", latin)
    assert f"{latin}:2:" in done.stderr  # the file and the line of the first byte that is not UTF-8
