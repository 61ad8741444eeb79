"""The slow-node screen's outputs as its tools print them (perftest's ib_write_bw and nccl-tests'
all_reduce_perf, from the published formats in tests/acceptance_outputs/), written for every job of a
screen, with planted slow NICs, nodes or switches: shared by the screen's tests and the loop's."""

from __future__ import annotations

from pathlib import Path

from gpufabric.acceptance.model import PerfJob, Suite

OUTPUTS = Path(__file__).parent / "acceptance_outputs"


def perftest_text(job: PerfJob, gbits: float) -> str:
    rate = gbits * 1e9 / 8 / 65536 / 1e6  # Mpps of 65536-byte messages
    text = (OUTPUTS / "ib_write_bw.txt").read_text()
    text = text.replace("mlx5_0", job.client.hca).replace("7481236", str(round(rate * 1e6 * 10)))
    return text.replace("{BW}", f"{gbits:.2f}").replace("0.747621", f"{rate:.6f}")


def nccl_node_text(host: str, busbw: float, ranks: int = 8) -> str:
    algbw = busbw * ranks / (2 * (ranks - 1))
    time_us = (8 << 30) / (algbw * 1e9) * 1e6
    return (
        (OUTPUTS / "nccl_node.txt")
        .read_text()
        .format(HOST=host, TIME=f"{time_us:.0f}", ALGBW=f"{algbw:.2f}", BUSBW=f"{busbw:.2f}", AVG=f"{busbw * 0.41:.4f}")
    )


def record(folder: Path, suite: Suite, *, slow_nics: dict[str, float] | None = None,
           slow_nodes: dict[str, float] | None = None,
           slow_switches: dict[str, float] | None = None) -> Path:  # fmt: skip
    """Every screen job's output: ~390 Gb/s per pair and ~480 GB/s per node with a little spread, a
    pair through a NIC in `slow_nics` ("gpu03 eth1") or across a switch in `slow_switches` at that
    rate, a node in `slow_nodes` at its figure."""
    folder.mkdir(parents=True, exist_ok=True)
    slow_nics, slow_nodes, slow_switches = slow_nics or {}, slow_nodes or {}, slow_switches or {}
    for i, job in enumerate(suite.perf):
        rate = 388.0 + (i % 5)
        for end in (job.client, job.server):
            rate = min(rate, slow_nics.get(f"{end.server} {end.interface}", rate))
        for switch in job.crosses:
            rate = min(rate, slow_switches.get(switch, rate))
        (folder / f"{job.id}.txt").write_text(perftest_text(job, rate))
    for i, nccl in enumerate(suite.nccl):
        if len(nccl.servers) == 1:
            host = nccl.servers[0]
            (folder / f"{nccl.id}.txt").write_text(nccl_node_text(host, slow_nodes.get(host, 478.0 + i % 4)))
    return folder
