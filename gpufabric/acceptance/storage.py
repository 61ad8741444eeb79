"""Storage jobs of the acceptance suite: fio (through the page cache's bypass, O_DIRECT) and NVIDIA's gdsio
(GPUDirect Storage) on the file systems the GPU servers mount over the storage plane, each with the figure the
plan expects (gpufabric/plan/storage.py sets the path's rate; docs/storage.md).

- one GPU server writing and reading alone: its storage NICs' rate, or the path's if that is lower;
- every GPU server writing at once (the checkpoint): the path's rate, its slowest stage; with a checkpoint in
  the intent, the time that rate gives is said beside it;
- gdsio from GPU 0 of one server, GPU memory straight to the file system (`-x 0`): one storage NIC's rate
  (cuFile takes the NIC nearest the GPU).

The figures are what the fabric allows, taken at RDMA's payload share of the line rate: the storage servers'
disks and software set their own ceiling below it, which is what these jobs find out. A job fails below
`STORAGE_TOLERANCE` of its figure.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufabric.acceptance.model import ROCE_OVERHEAD, ROCE_PAYLOAD
from gpufabric.intent.storage import FileSystem
from gpufabric.plan.model import Plan, Server
from gpufabric.plan.storage import client_groups, flow

PAYLOAD_SHARE = ROCE_PAYLOAD / (ROCE_PAYLOAD + ROCE_OVERHEAD)
STORAGE_TOLERANCE = 0.80  # a file system adds its own protocol and locking to RDMA's: more slack than perftest
FIO_SIZE, FIO_BLOCK, FIO_JOBS, FIO_DEPTH = "16G", "1M", 16, 32
GDSIO_SIZE, GDSIO_BLOCK, GDSIO_THREADS = "16G", "1M", 8
GDSIO_GPU_DIRECT = 0  # gdsio -x 0: GPU memory to storage through cuFile (1 is CPU only, 2 through a CPU bounce buffer)


@dataclass(frozen=True, slots=True)
class StorageJob:
    """One fio or gdsio run on a file system, from one GPU server or from all of them at once."""

    id: str
    tool: str  # fio | gdsio
    file_system: str
    mount: str
    direction: str  # write | read
    scope: str  # "server" (one) | "cluster" (every GPU server at once)
    servers: tuple[str, ...]
    expected: float  # GB/s, all servers together
    threshold: float
    unit: str
    limited_by: str  # the stage of the path (or the NICs) that sets the figure
    note: str = ""  # the checkpoint's time at this rate, where the intent gives one

    def command(self) -> list[str]:
        """The command each server runs, `{host}` standing for its name: its files go to its own folder under the
        mount (no shell is involved: the runner puts the name in)."""
        folder = f"{self.mount.rstrip('/')}/gpufabric-acceptance/{{host}}"
        if self.tool == "gdsio":
            return ["gdsio", "-D", folder, "-d", "0", "-w", str(GDSIO_THREADS), "-s", GDSIO_SIZE, "-i", GDSIO_BLOCK,
                    "-x", str(GDSIO_GPU_DIRECT), "-I", "1" if self.direction == "write" else "0"]  # fmt: skip
        return ["fio", f"--name=gpufabric-{self.direction}", f"--directory={folder}", f"--rw={self.direction}",
                f"--bs={FIO_BLOCK}", "--direct=1", "--ioengine=libaio", f"--iodepth={FIO_DEPTH}",
                f"--numjobs={FIO_JOBS}", f"--size={FIO_SIZE}", "--group_reporting", "--output-format=json"]  # fmt: skip


def _gbytes(gbps: float) -> float:
    """Gb/s of line rate to GB/s of payload."""
    return round(gbps * PAYLOAD_SHARE / 8, 2)


def _nic_gbps(server: Server) -> list[int]:
    return [n.speed for n in server.nics if n.plane == "storage" and n.native]


def storage_jobs(plan: Plan) -> list[StorageJob]:
    storage = plan.intent.planes.storage
    path = flow(plan)
    if storage is None or path is None or not storage.file_systems:
        return []
    groups = {g.name for g in client_groups(plan.intent, storage)}
    clients = [s for s in plan.servers if s.group in groups and _nic_gbps(s)]
    if not clients:
        return []
    jobs: list[StorageJob] = []
    first = clients[0]
    for fs in storage.file_systems:
        one = min(sum(_nic_gbps(first)), path.rate_gbps)
        why_one = "the server's storage NICs" if sum(_nic_gbps(first)) <= path.rate_gbps else path.bottleneck.name
        for direction in ("write", "read"):
            jobs.append(_job("fio", fs, direction, scope="server", servers=(first.name,), gbps=one, why=why_one))
        seconds = path.checkpoint_seconds()
        note = f"a checkpoint of the intent's size takes {seconds:.3g} s at this rate" if seconds is not None else ""
        everyone = tuple(s.name for s in clients)
        jobs.append(_job("fio", fs, "write", scope="cluster", servers=everyone, gbps=path.rate_gbps,
                         why=path.bottleneck.name, note=note))  # fmt: skip
        if fs.gds and first.gpus:
            nic = min(*_nic_gbps(first), path.rate_gbps)
            for direction in ("write", "read"):
                jobs.append(_job("gdsio", fs, direction, scope="server", servers=(first.name,), gbps=nic,
                                 why="one storage NIC (GPU 0's)"))  # fmt: skip
    return jobs


def _job(
    tool: str,
    fs: FileSystem,
    direction: str,
    *,
    scope: str,
    servers: tuple[str, ...],
    gbps: float,
    why: str,
    note: str = "",
) -> StorageJob:
    expected = _gbytes(gbps)
    who = servers[0] if scope == "server" else "cluster"
    return StorageJob(
        id=f"{tool}.{fs.name}.{direction}.{who}", tool=tool, file_system=fs.name, mount=fs.mount, direction=direction,
        scope=scope, servers=servers, expected=expected, threshold=round(expected * STORAGE_TOLERANCE, 2),
        unit="GB/s", limited_by=why, note=note,
    )  # fmt: skip
