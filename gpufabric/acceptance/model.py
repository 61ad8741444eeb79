"""The jobs of an acceptance suite and the figures they are judged by.

Expected figures are derived from the plan (NIC speed, path, MTU, oversubscription) with the
efficiencies below; a job fails when its observed figure is worse than its threshold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpufabric.acceptance.parse import Expect

# RoCEv2 carries at most 4096 bytes of payload per packet (the largest RDMA MTU that fits a 9000-byte
# Ethernet MTU). Each packet adds Ethernet (14 + 4 FCS + 20 preamble and gap), IPv4 (20), UDP (8),
# BTH (12) and ICRC (4) bytes: 82 bytes of overhead, so large writes reach 4096 / 4178 of line rate.
ROCE_PAYLOAD = 4096
ROCE_OVERHEAD = 82
BW_TOLERANCE = 0.90  # ib_write_bw fails below 90% of its expected figure

# Latency: a back-to-back RDMA write (ib_write_lat, 2-byte messages, t_typical) and what each switch
# hop adds (store-and-forward-free cut-through ASICs). Estimates, not vendor guarantees.
LAT_BASE_US = 2.0
LAT_PER_HOP_US = 0.7
LAT_TOLERANCE = 1.5  # fails above 1.5x its expected figure

# nccl-tests bus bandwidth against the per-GPU share of the server's RoCE NIC bandwidth, for the
# largest message size: all_reduce reaches ~90% of it on a non-blocking fabric, all_to_all ~75%.
NCCL_EFFICIENCY = {"all_reduce_perf": 0.90, "all_to_all_perf": 0.75}
NCCL_TOLERANCE = 0.90

# What each tool runs, and what its output is checked against: perftest's bandwidth tests write
# messages of its default size (no -s), for a duration (-D) rather than a count; its latency test writes
# 2-byte messages 10000 times; nccl-tests steps from 8 bytes to 8 GiB by a factor of 2, 20 iterations
# each, checking every result (-c 1).
PERFTEST_BW_SIZE = 65536  # perftest's DEF_SIZE_BW
PERFTEST_BW_SECONDS = 10
PERFTEST_LAT_SIZE, PERFTEST_LAT_ITERATIONS = 2, 10000
NCCL_MIN_BYTES, NCCL_MAX_BYTES, NCCL_FACTOR, NCCL_ITERATIONS = 8, 8 << 30, 2, 20

# InfiniBand: 4096 bytes of payload per packet (the IB MTU every partition uses) and per packet the local
# route header (8), BTH (12), invariant CRC (4) and variant CRC (2): large writes reach 4096 / 4122 of the
# data rate (the rate after the link's 64b/66b encoding, which NDR's 400 Gb/s already is).
IB_PAYLOAD = 4096
IB_OVERHEAD = 26

GID_INDEX = 3  # RoCEv2 over IPv4 in ConnectX's default GID table (the roce_qos role's NCCL_IB_GID_INDEX)

# The lab's stand-in (no RDMA NIC there): iperf3 over TCP for bandwidth, ping for latency, between the
# same pairs over the same routed rails. Figures for veths forwarded by FRR namespaces on one machine,
# not for any NIC: a floor that proves the path carries traffic, and a round trip that proves no detour.
STAND_IN_GBPS, STAND_IN_GBPS_FLOOR = 1.0, 0.2
STAND_IN_RTT_US, STAND_IN_RTT_CEILING_US = 500.0, 5000.0
STAND_IN_TOOLS = {"ib_write_bw": "iperf3", "ib_write_lat": "ping"}
STAND_IN_SECONDS, STAND_IN_PROBES = 1, 5  # iperf3 -t, ping -c


def line_rate_ceiling(gbits: float | None) -> tuple[float | None, str]:
    """No perftest pair or sender reports more than its link's line rate (its payload is less)."""
    return gbits, f"the {gbits:g} Gb/s line rate" if gbits is not None else ""


@dataclass(frozen=True, slots=True)
class Endpoint:
    server: str
    interface: str
    hca: str  # RDMA device, mlx5_<n> in RoCE NIC order (the roce_qos role's default)
    address: str
    leaf: str
    leaf_port: str


@dataclass(frozen=True, slots=True)
class PerfJob:
    """One perftest pair on one rail: the server side listens, the client side reports."""

    id: str
    tool: str  # ib_write_bw | ib_write_lat
    plane: str
    rail: int
    path: str  # leaf (both under one leaf) | spine (across the spine layer) | rail (across rails) | pod
    server: Endpoint
    client: Endpoint
    traffic_class: int
    gid_index: int | None  # None on InfiniBand: ports are addressed by LID, with no GID index or traffic class
    qps: int  # queue pairs: enough flows for ECMP to spread over every uplink
    expected: float  # Gb/s (bw) or microseconds (lat)
    threshold: float
    unit: str
    crosses: tuple[str, ...]  # switches the traffic may cross
    cables: tuple[str, ...]  # cable ids it may cross
    port: int = 5201  # the stand-in's TCP port
    line_rate: float | None = None  # Gb/s of the slower NIC of the pair; none for the stand-in (veths)

    def command(self, side: str) -> list[str]:
        """The tool's command line on one side: `server` waits, `client` connects to the server."""
        if self.tool == "iperf3":
            if side == "server":
                return ["iperf3", "-s", "-1", "-B", self.server.address, "-p", str(self.port)]
            return ["iperf3", "-c", self.server.address, "-B", self.client.address, "-p", str(self.port), "-t",
                    str(STAND_IN_SECONDS), "-P", str(self.qps), "-J"]  # fmt: skip
        if self.tool == "ping":
            return [] if side == "server" else ["ping", "-c", str(STAND_IN_PROBES), "-i", "0.2", "-I",
                                                 self.client.address, self.server.address]  # fmt: skip
        end = self.server if side == "server" else self.client
        if self.gid_index is None:  # InfiniBand: the adapter's port 1, addressed by its LID
            cmd = [self.tool, "-d", end.hca, "-i", "1", "-F"]
        else:
            cmd = [self.tool, "-d", end.hca, "-x", str(self.gid_index), f"--tclass={self.traffic_class}", "-F"]
        if self.tool == "ib_write_bw":
            cmd += ["--report_gbits", "-q", str(self.qps), "-D", str(PERFTEST_BW_SECONDS)]
        else:
            cmd += ["-s", str(PERFTEST_LAT_SIZE), "-n", str(PERFTEST_LAT_ITERATIONS)]
        return cmd + ([self.server.address] if side == "client" else [])

    def expect(self) -> Expect:
        """What the client's output must show: this tool, this test type, the sizes and counts above."""
        if self.tool == "ib_write_bw":
            ceiling, what = line_rate_ceiling(self.line_rate)
            return Expect(self.tool, size=PERFTEST_BW_SIZE, ceiling=ceiling, ceiling_what=what)
        if self.tool == "ib_write_lat":
            return Expect(self.tool, size=PERFTEST_LAT_SIZE, iterations=PERFTEST_LAT_ITERATIONS)
        if self.tool == "iperf3":
            ceiling, what = line_rate_ceiling(self.line_rate)
            return Expect(self.tool, streams=self.qps, seconds=STAND_IN_SECONDS, ceiling=ceiling, ceiling_what=what)
        return Expect(self.tool, iterations=STAND_IN_PROBES)


@dataclass(frozen=True, slots=True)
class NcclJob:
    """One nccl-tests run over a set of servers."""

    id: str
    tool: str  # all_reduce_perf | all_to_all_perf
    plane: str
    scope: str  # "unit N" or "cluster"
    servers: tuple[str, ...]
    gpus_per_server: int
    env: dict[str, str] = field(hash=False)
    expected: float = 0.0  # bus bandwidth, GB/s
    threshold: float = 0.0
    unit: str = "GB/s"
    crosses: tuple[str, ...] = ()
    cables: tuple[str, ...] = ()
    ceiling: float | None = None  # GB/s of bus bandwidth no run can reach over the servers' NICs

    @property
    def ranks(self) -> int:
        return len(self.servers) * self.gpus_per_server

    def command(self) -> list[str]:
        return [self.tool, "-b", str(NCCL_MIN_BYTES), "-e", f"{NCCL_MAX_BYTES >> 30}G", "-f", str(NCCL_FACTOR),
                "-g", "1", "-n", str(NCCL_ITERATIONS), "-c", "1"]  # fmt: skip

    def expect(self) -> Expect:
        what = f"{self.ceiling:g} GB/s, twice what a server's NICs carry" if self.ceiling is not None else ""
        return Expect(self.tool, size=NCCL_MIN_BYTES, max_size=NCCL_MAX_BYTES, factor=NCCL_FACTOR,
                      iterations=NCCL_ITERATIONS, ranks=self.ranks, ceiling=self.ceiling,
                      ceiling_what=what)  # fmt: skip


# Incast: N senders write to one receiver at once, so the receiver's leaf port is offered N times its
# line rate. Eight senders are far past what ECN alone absorbs at the incast's onset (the queue fills
# before the first CNP reaches a sender), so PFC must engage; more adds processes on the receiver (one
# perftest listener per sender), not a harder test.
INCAST_MAX_SENDERS = 8
INCAST_MIN_SENDERS = 2  # one sender is a pair, not an incast: it never offers more than line rate
INCAST_BASE_PORT = 18515  # perftest's default port; listener i takes base + i


@dataclass(frozen=True, slots=True)
class IncastJob:
    """N senders write to one receiver at once: judged by the counters of the ports it crosses (no drop,
    PFC pauses and ECN marks that rose) and by the receiver's aggregate rate."""

    id: str
    tool: str  # ib_write_bw
    plane: str
    rail: int
    path: str  # leaf (senders under the receiver's leaf) | spine (senders under other leaves of the rail)
    receiver: Endpoint
    senders: tuple[Endpoint, ...]
    why: str  # how N was chosen, in words
    traffic_class: int
    gid_index: int
    priority: int  # the lossless priority whose pauses and drops are read
    qps: int
    expected: float  # aggregate Gb/s at the receiver
    threshold: float
    unit: str
    crosses: tuple[str, ...]
    cables: tuple[str, ...]
    ports: tuple[tuple[str, str], ...]  # (switch, port) the traffic may cross, read before and after
    congested: tuple[str, str]  # (leaf, port): the egress toward the receiver, where the queue builds
    line_rate: float | None = None  # Gb/s of the receiver's NIC: no sender's flow into it can exceed it

    def command(self, side: str, index: int) -> list[str]:
        """Listener `index` on the receiver (side `server`) or sender `index` (side `client`)."""
        end = self.receiver if side == "server" else self.senders[index]
        cmd = [self.tool, "-d", end.hca, "-x", str(self.gid_index), f"--tclass={self.traffic_class}", "-F",
               "--report_gbits", "-q", str(self.qps), "-D", str(PERFTEST_BW_SECONDS), "-p",
               str(INCAST_BASE_PORT + index)]  # fmt: skip
        return cmd + ([self.receiver.address] if side == "client" else [])

    def expect(self) -> Expect:
        """What each sender's output must show."""
        ceiling, what = line_rate_ceiling(self.line_rate)
        return Expect(self.tool, size=PERFTEST_BW_SIZE, ceiling=ceiling, ceiling_what=what)

    def servers(self) -> list[Endpoint]:
        return [self.receiver, *self.senders]


# DCGM's diagnostic at level 3 (`dcgmi diag -r 3`, "long": about 15 minutes per node in NVIDIA's dcgmi diag
# reference), with its result as JSON (`-j`): the GPUs' stress, power, memory and PCIe tests on every GPU of the node.
DCGM_LEVEL = 3
DCGM_SECONDS = 3600  # what the run may take before it is stopped: four times the reference's figure


@dataclass(frozen=True, slots=True)
class DiagJob:
    """DCGM's GPU diagnostic on one node: judged by the tests its JSON output reports (none may fail)."""

    id: str
    server: str
    gpus: int
    tool: str = "dcgmi"
    plane: str = "gpu"  # not a network plane: JUnit's class is acceptance.gpu.dcgmi
    level: int = DCGM_LEVEL
    expected: float = 0.0  # failed test results
    threshold: float = 0.0
    unit: str = "failed tests"
    crosses: tuple[str, ...] = ()  # no switch or cable: a GPU's fault is its node's
    cables: tuple[str, ...] = ()

    def command(self) -> list[str]:
        return ["dcgmi", "diag", "-r", str(self.level), "-j"]


@dataclass(slots=True)
class Suite:
    fabric: str
    perf: list[PerfJob] = field(default_factory=list)
    nccl: list[NcclJob] = field(default_factory=list)
    incast: list[IncastJob] = field(default_factory=list)
    # fio and gdsio on the storage plane's file systems (gpufabric/acceptance/storage.py): listed with their
    # figures by `acceptance plan`; scripts, run and report do not take them yet, so they stay out of jobs().
    storage: list[Any] = field(default_factory=list)
    gpu: list[DiagJob] = field(default_factory=list)  # DCGM's diagnostic, one per GPU node

    def jobs(self) -> list[PerfJob | NcclJob | IncastJob | DiagJob]:
        return [*self.perf, *self.nccl, *self.incast, *self.gpu]
