"""Each layout the NCCL log reader knows, on a line written here from the format string of the NCCL release
named beside it (NVIDIA/nccl, the file and tag given: the WARN's format and arguments, as the source prints
them), and PyTorch's watchdog message as ProcessGroupNCCL.cpp builds it. No line is copied from a log."""

from __future__ import annotations

import pytest

from gpufabric.jobs.nccl_log import LAYOUTS, Reading, lines_of, read_lines_into

# src/debug.cc (every release): "%s:%d:%d [%d] %s:%d NCCL WARN " (host cut at its first dot, pid, tid, cudaDev,
# file, line); from v2.26.2-1 a "[%F %T] " timestamp before it on WARN lines by default.
PREFIX = "gpu01:2001:2050 [1] transport/net_ib.cc:1296 NCCL WARN "

CASES = [
    (
        # v2.18.1-1 src/transport/net_ib.cc:1294, "NET/IB : Got completion from peer %s with error %d, opcode %d,
        # len %d, vendor err %d (%s)%s%s%s%s" (the GIDs: " localGid " %s " remoteGid " %s, RoCE only)
        "v2.18.1-1 src/transport/net_ib.cc",
        "NET/IB : Got completion from peer 10.12.0.3<55021> with error 12, opcode 0, len 0, vendor err 129 (Send) "
        "localGid ::ffff:10.10.0.1 remoteGid ::ffff:10.10.0.3",
        dict(
            kind="ib-completion",
            layout="ib-completion-2.18",
            peer="10.12.0.3",
            local_gid="::ffff:10.10.0.1",
            remote_gid="::ffff:10.10.0.3",
            status="12",
            status_name="IBV_WC_RETRY_EXC_ERR",
            req="Send",
        ),
    ),
    (
        # v2.19.3-1 src/transport/net_ib.cc:1333, the same format; on InfiniBand's link layer no GID is printed
        "v2.19.3-1 src/transport/net_ib.cc",
        "NET/IB : Got completion from peer 10.12.0.3<55021> with error 5, opcode 129, len 0, vendor err 249 (Recv)",
        dict(
            kind="ib-completion",
            layout="ib-completion-2.18",
            peer="10.12.0.3",
            local_gid=None,
            remote_gid=None,
            status="5",
            status_name="IBV_WC_WR_FLUSH_ERR",
            req="Recv",
        ),
    ),
    (
        # v2.20.3-1 src/transport/net_ib.cc:1696, "... with status=%d opcode=%d len=%d vendor err %d (%s)%s%s%s%s",
        # the remote GID after " remoteGids" with no space
        "v2.20.3-1 src/transport/net_ib.cc",
        "NET/IB : Got completion from peer 10.12.0.3<55021> with status=12 opcode=0 len=0 vendor err 129 (Send) "
        "localGid ::ffff:10.10.0.1 remoteGids::ffff:10.10.0.3",
        dict(
            kind="ib-completion",
            layout="ib-completion-2.20",
            local_gid="::ffff:10.10.0.1",
            remote_gid="::ffff:10.10.0.3",
            status="12",
        ),
    ),
    (
        # v2.21.5-1 src/transport/net_ib.cc:1909, as 2.20
        "v2.21.5-1 src/transport/net_ib.cc",
        "NET/IB : Got completion from peer 10.12.0.3<55021> with status=13 opcode=128 len=0 vendor err 136 (Recv) "
        "localGid ::ffff:10.10.0.1 remoteGids::ffff:10.10.0.3",
        dict(layout="ib-completion-2.20", status_name="IBV_WC_RNR_RETRY_EXC_ERR"),
    ),
    (
        # v2.22.3-1 src/transport/net_ib.cc:1984, "NET/IB: Got completion ... (%s)%s%s%s%s hca %s"
        "v2.22.3-1 src/transport/net_ib.cc",
        "NET/IB: Got completion from peer 10.12.0.3<55021> with status=12 opcode=0 len=0 vendor err 129 (Send) "
        "localGid ::ffff:10.10.0.1 remoteGids::ffff:10.10.0.3 hca mlx5_0",
        dict(layout="ib-completion-2.22", hca="mlx5_0", local_gid="::ffff:10.10.0.1", remote_gid="::ffff:10.10.0.3"),
    ),
    (
        # v2.27.7-1 src/transport/net_ib.cc:2458, len and vendor err as %u since v2.24.3-1; IB link layer: no GID
        "v2.27.7-1 src/transport/net_ib.cc",
        "NET/IB: Got completion from peer 10.12.0.3<55021> with status=12 opcode=0 len=4294967295 vendor err 129 "
        "(Send) hca mlx5_4",
        dict(layout="ib-completion-2.22", hca="mlx5_4", local_gid=None, remote_gid=None, len="4294967295"),
    ),
    (
        # v2.18.1-1 src/transport/net_ib.cc:95, "NET/IB : Got async event : %s"
        "v2.18.1-1 src/transport/net_ib.cc",
        "NET/IB : Got async event : port error",
        dict(kind="ib-async", layout="ib-async-2.18", event="port error"),
    ),
    (
        # v2.20.3-1 src/transport/net_ib.cc, "NET/IB : %s:%d Got async event : %s"
        "v2.20.3-1 src/transport/net_ib.cc",
        "NET/IB : mlx5_3:1 Got async event : port error",
        dict(kind="ib-async", layout="ib-async-2.20", hca="mlx5_3", port="1", event="port error"),
    ),
    (
        # v2.23.4-1 src/transport/net_ib.cc, "NET/IB : %s:%d Got async error event: %s"
        "v2.23.4-1 src/transport/net_ib.cc",
        "NET/IB : mlx5_3:1 Got async error event: port error",
        dict(layout="ib-async-2.23", hca="mlx5_3", event="port error"),
    ),
    (
        # v2.27.7-1 src/transport/net_ib.cc:180, "NET/IB : %s:%d async fatal event on QP (%p): %s"
        "v2.27.7-1 src/transport/net_ib.cc",
        "NET/IB : mlx5_3:1 async fatal event on QP (0x55d1c0a0): local work queue catastrophic error",
        dict(layout="ib-async-2.23", hca="mlx5_3", event="local work queue catastrophic error"),
    ),
    (
        # v2.24.3-1 src/misc/ibvwrap.cc:291, "Call to ibv_modify_qp failed with %d %s, %s", the last from
        # ibvModifyQpLog: "on dev %s:%d, curr state %s, next state %s, local GID index %d, local GID %s, remote GID %s"
        "v2.24.3-1 src/misc/ibvwrap.cc",
        "Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, curr state INIT, next state "
        "RTR, local GID index 3, local GID ::ffff:10.10.0.1, remote GID ::ffff:10.10.0.3",
        dict(
            kind="ibv-call",
            layout="ibv-modify-qp-2.24",
            call="ibv_modify_qp",
            hca="mlx5_0",
            local_gid="::ffff:10.10.0.1",
            remote_gid="::ffff:10.10.0.3",
            state="INIT",
            next="RTR",
        ),
    ),
    (
        # v2.27.7-1 src/misc/ibvwrap.cc:301: the same; a GID it cannot read is "N/A"
        "v2.27.7-1 src/misc/ibvwrap.cc",
        "Call to ibv_modify_qp failed with 22 Invalid argument, on dev mlx5_0:1, curr state RTR, next state RTS, "
        "local GID index -1, local GID N/A, remote GID N/A",
        dict(layout="ibv-modify-qp-2.24", local_gid=None, remote_gid=None),
    ),
    (
        # v2.20.3-1 src/misc/ibvwrap.cc:60, "Call to " name " failed with error %s errno %d"
        "v2.20.3-1 src/misc/ibvwrap.cc",
        "Call to ibv_create_qp failed with error Cannot allocate memory errno 12",
        dict(
            kind="ibv-call", layout="ibv-call-errno", call="ibv_create_qp", error="Cannot allocate memory", errno="12"
        ),
    ),
    (
        # v2.18.1-1 src/misc/ibvwrap.cc:34, "Call to " name " failed with error %s"
        "v2.18.1-1 src/misc/ibvwrap.cc",
        "Call to ibv_reg_mr failed with error Bad address",
        dict(layout="ibv-call-error", call="ibv_reg_mr", error="Bad address"),
    ),
    (
        # v2.18.1-1 src/misc/ibvwrap.cc:43, "Call to " name " failed"
        "v2.18.1-1 src/misc/ibvwrap.cc",
        "Call to ibv_open_device failed",
        dict(layout="ibv-call", call="ibv_open_device"),
    ),
    (
        # v2.27.7-1 src/transport/net_socket.cc:561, "NET/Socket : peer %s message truncated : receiving %d bytes
        # instead of %d. If you believe ..."
        "v2.27.7-1 src/transport/net_socket.cc",
        "NET/Socket : peer 10.12.0.3<41234> message truncated : receiving 1048576 bytes instead of 65536. If you "
        "believe your socket network is in a healthy state, there may be a mismatch in collective sizes",
        dict(kind="socket", layout="socket-truncated", peer="10.12.0.3"),
    ),
    (
        # v2.18.1-1 src/transport/net_socket.cc:214, "NET/Socket : socket progress error"
        "v2.18.1-1 src/transport/net_socket.cc",
        "NET/Socket : socket progress error",
        dict(kind="socket", layout="socket-progress-error", peer=None),
    ),
    (
        # v2.18.1-1 src/misc/socket.cc:29, "socketProgressOpt: Call to recv from %s failed : %s"
        "v2.18.1-1 src/misc/socket.cc",
        "socketProgressOpt: Call to recv from 10.12.0.3<41234> failed : Connection reset by peer",
        dict(layout="socket-call", peer="10.12.0.3", op="recv from", error="Connection reset by peer"),
    ),
    (
        # v2.24.3-1 src/misc/socket.cc:46, "socketProgressOpt: Call to %s %s failed : %s" (recv from | send to)
        "v2.24.3-1 src/misc/socket.cc",
        "socketProgressOpt: Call to send to 10.12.0.3<41234> failed : Broken pipe",
        dict(layout="socket-call", peer="10.12.0.3", op="send to"),
    ),
    (
        # v2.18.1-1 src/misc/socket.cc:49, "socketProgress: Connection closed by remote peer %s" with the host's
        # name where it resolves (ncclSocketToString's numericHostForm 0)
        "v2.18.1-1 src/misc/socket.cc",
        "socketProgress: Connection closed by remote peer gpu03.lab.gpufabric.test<41234>",
        dict(layout="socket-closed", peer="gpu03.lab.gpufabric.test"),
    ),
    (
        # v2.18.1-1 src/misc/socket.cc:480, "socketStartConnect: Connect to %s failed : %s"
        "v2.18.1-1 src/misc/socket.cc",
        "socketStartConnect: Connect to 10.12.0.3<41234> failed : Connection refused",
        dict(layout="socket-connect", peer="10.12.0.3", func="socketStartConnect"),
    ),
    (
        # v2.27.7-1 src/misc/socket.cc:592, "%s: connect to %s failed : %s"
        "v2.27.7-1 src/misc/socket.cc",
        "socketStartConnect: connect to 10.12.0.3<41234> failed : No route to host",
        dict(layout="socket-connect", peer="10.12.0.3", error="No route to host"),
    ),
    (
        # v2.27.7-1 src/misc/socket.cc:578, "%s: connect to %s returned %s, exceeded error retry count after %d
        # attempts"
        "v2.27.7-1 src/misc/socket.cc",
        "socketStartConnect: connect to 10.12.0.3<41234> returned Connection refused, exceeded error retry count "
        "after 35 attempts",
        dict(layout="socket-connect-retries-2.27", peer="10.12.0.3", error="Connection refused"),
    ),
    (
        # v2.20.3-1 src/misc/socket.cc:533, "socketPollConnect: Connect to %s returned %d(%s) errno %d(%s)"
        "v2.20.3-1 src/misc/socket.cc",
        "socketPollConnect: Connect to 10.12.0.3<41234> returned 111(Connection refused) errno 115(Operation now "
        "in progress)",
        dict(layout="socket-poll-connect-2.20", peer="10.12.0.3", error="Connection refused"),
    ),
    (
        # v2.27.7-1 src/misc/socket.cc:618, "socketPollConnect to %s failed with error %s"
        "v2.27.7-1 src/misc/socket.cc",
        "socketPollConnect to 10.12.0.3<41234> failed with error Connection timed out",
        dict(layout="socket-poll-connect-2.27", peer="10.12.0.3", error="Connection timed out"),
    ),
]


def read(text: str) -> Reading:
    reading = Reading()
    read_lines_into(reading, "job.log", lines_of(text))
    return reading


@pytest.mark.parametrize(("source", "message", "expected"), CASES, ids=[f"{c[0]}: {c[2].get('layout')}" for c in CASES])
def test_each_layout_reads_what_its_release_prints(source, message, expected):
    reading = read(PREFIX + message)
    assert reading.unread == [], source
    (said,) = reading.said
    assert (said.host, said.device, said.where.line) == ("gpu01", 1, 1)
    got = {
        "kind": said.kind,
        "layout": said.layout,
        "peer": said.peer,
        "local_gid": said.local_gid,
        "remote_gid": said.remote_gid,
        "hca": said.hca,
        **said.detail,
    }
    assert {k: got.get(k) for k in expected} == expected, source
    assert source.split()[1] in next(x.source for x in LAYOUTS if x.name == said.layout)


def test_every_layout_is_exercised_with_its_provenance():
    assert {c[2]["layout"] for c in CASES} == {x.name for x in LAYOUTS}


def test_the_prefix_is_found_behind_a_timestamp_or_a_launcher_s_label():
    # v2.26.2-1 src/debug.cc: "[%F %T] " before the host on WARN lines by default; srun --label puts "N: " first
    message = "NET/IB : Got async event : port error"
    for line in (f"[2025-03-01 10:00:00] {PREFIX}{message}", f"17: {PREFIX}{message}", f"\t{PREFIX}{message}"):
        (said,) = read(line).said
        assert said.host == "gpu01" and said.layout == "ib-async-2.18"


def test_a_warn_in_no_known_layout_is_unread_never_guessed():
    reading = read(
        "\n".join(
            [
                PREFIX + "Cuda failure 'out of memory'",
                PREFIX + "NET/IB : Got completion from peer 10.12.0.3 with status=12 opcode=0",  # no <port>, cut short
                "NCCL WARN NET/IB : Got async event : port error",  # no host:pid:tid [dev] prefix
                "[Rank 3] Watchdog caught collective operation timeout: something else",
            ]
        )
    )
    assert reading.said == [] and reading.unread_count == 4
    assert [w.line for w, _ in reading.unread] == [1, 2, 3, 4]


def test_init_lines_place_ranks_in_their_communicator():
    # v2.18.1-1 src/init.cc:1326 "comm %p rank %d nranks %d cudaDev %d busId %lx commId 0x%llx - Init COMPLETE";
    # v2.23.4-1 on: "%s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init START"
    reading = read(
        "gpu02:77:77 [3] NCCL INFO comm 0x55e0 rank 11 nranks 16 cudaDev 3 busId 3d000 commId 0xabc - Init COMPLETE\n"
        "gpu03:78:78 [0] NCCL INFO ncclCommInitRank comm 0x7f00 rank 16 nranks 32 cudaDev 0 nvmlDev 0 busId 1b000 "
        "commId 0xdef - Init START\n"
        "gpu03:78:78 [0] NCCL INFO Channel 00/02 : 0 1 2 3\n"
    )
    assert [(r.host, r.rank, r.nranks, r.cuda_dev) for r in reading.ranks] == [
        ("gpu02", 11, 16, 3),
        ("gpu03", 16, 32, 0),
    ]


WATCHDOG = (
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=412, OpType=ALLREDUCE, NumelIn=1048576, "
    "NumelOut=1048576, Timeout(ms)=600000) ran for 600432 milliseconds before timing out."
)


def test_the_watchdog_s_rank_is_global_only_where_the_line_says_so():
    # torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp: logPrefix() "[PG ID %d PG GUID %s(%s) Rank %d] " (PyTorch
    # 2.3 on), "[Rank %d] " before; WorkNCCL's operator<< "WorkNCCL(SeqNum=, OpType=, NumelIn=, NumelOut=,
    # Timeout(ms)=)"; torchrun's log line prefix "[rank%d]:" is the global rank.
    reading = read(
        f"[PG ID 0 PG GUID 0(default_pg) Rank 5] {WATCHDOG}\n"
        f"[PG ID 2 PG GUID 7 Rank 1] {WATCHDOG}\n"
        f"[Rank 3] {WATCHDOG}\n"
        f"[rank9]:[E1127 08:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 1] {WATCHDOG}\n"
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(OpType=BROADCAST, Timeout(ms)=1800000) "
        "ran for 1800523 milliseconds before timing out.\n"
    )
    got = [(s.rank, s.pg_rank, s.detail["op"]) for s in reading.said]
    assert got == [(5, None, "ALLREDUCE"), (None, 1, "ALLREDUCE"), (None, 3, "ALLREDUCE"), (9, None, "ALLREDUCE"),
                   (None, 0, "BROADCAST")]  # fmt: skip
    assert reading.said[0].detail == {"op": "ALLREDUCE", "ms": "600432", "seq": "412", "pg": "0 (default_pg)"}


def test_a_line_built_to_make_the_patterns_retry_costs_its_window_not_its_square():
    # Each marker repeated over a 64 KiB line: a pattern searched over the whole line retried from every
    # repetition (about 2 s a line here); read in bounded windows around the first marker, 50 lines take
    # milliseconds. The bound below is for a loaded machine.
    import time

    hostile = [
        (" x:1:1 [0] NCCL INFO nranks Init" * 2000)[:65000],
        (" x:1:1 [0] NCCL WARN " * 3000)[:65000],
        ("[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(OpType=A" * 900)[:65000],
    ]
    start = time.monotonic()
    reading = Reading()
    read_lines_into(reading, "hostile.log", [(n, line) for n in range(50) for line in hostile])
    assert time.monotonic() - start < 5
    assert reading.said == [] and reading.ranks == [] and reading.unread_count == 100
