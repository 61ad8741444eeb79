"""The storage plane's data path: what it carries from the GPU servers to the data servers, and what the
intent demands of it (`planes.storage.demand`, docs/storage.md).

A checkpoint (or a data-loading read, the same path backwards: links are full duplex) crosses, in turn:
the GPU servers' storage NICs, their leaves' uplinks, the spines (with 3 tiers and the two ends in
different pods, the spines' uplinks to the superspines as well), the spines' links down to the data
servers' leaves, and the data servers' ports. Each stage's capacity is the sum of its planned link
speeds; the slowest stage sets the rate at which the whole cluster can write, and so the checkpoint's
time at full fabric rate. Metadata servers are not counted: bulk data does not flow through them.

What this does not know: the storage servers' disks and software (a data server's port rate is its
ceiling, not its throughput), and how evenly the file system stripes over the servers; the time it gives
is a lower bound the fabric sets, which the acceptance jobs (`gdsio`, `fio`) measure against.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil

from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import Intent, ServerGroup, StoragePlane
from gpufabric.intent.storage import bytes_text, gbps_text, seconds_text
from gpufabric.plan.model import Plan, Server

AT: Path = ("planes", "storage")


def target_groups(plane: StoragePlane, intent: Intent) -> tuple[set[str], set[str]]:
    """(data groups, metadata groups): as the file systems name them, or every `kind: storage` group on the
    plane as data when the intent names no file system."""
    if plane.file_systems:
        data = {g for fs in plane.file_systems for g in fs.data}
        meta = {g for fs in plane.file_systems for g in fs.metadata}
        return data, meta
    return {g.name for g in intent.server_groups if g.kind == "storage" and "storage" in g.nics}, set()


def client_groups(intent: Intent, plane: StoragePlane) -> list[ServerGroup]:
    """The GPU server groups attached to the storage plane: the ones that load data and write checkpoints."""
    data, meta = target_groups(plane, intent)
    return [
        g
        for g in intent.server_groups
        if g.gpus > 0 and "storage" in g.nics and g.nics["storage"].native and g.name not in data | meta
    ]


def checkpoint_gbps(plane: StoragePlane) -> float | None:
    """The rate (Gb/s) the checkpoint must be written at to finish in its time."""
    demand = plane.demand
    if demand is None or demand.checkpoint is None:
        return None
    return demand.checkpoint.size * 8 / 1e9 / demand.checkpoint.within


@dataclass(frozen=True, slots=True)
class LeafDemand:
    """What the demand asks of each storage leaf's uplinks."""

    gbps: float  # per leaf
    uplinks: int  # of the leaf's uplink speed
    why: str  # which demand, in words
    at: Path  # the field that asks it


def _asks(intent: Intent, plane: StoragePlane, gpus: int) -> list[tuple[float, str, Path]]:
    """Each demand as (Gb/s all GPUs together, in words, the field that asks it)."""
    demand = plane.demand
    assert demand is not None
    asks: list[tuple[float, str, Path]] = []
    if demand.read_per_gpu is not None:
        why = f"reading {byte_rate_text(demand.read_per_gpu)} per GPU"
        asks.append((gpus * demand.read_per_gpu, why, (*AT, "demand", "read_per_gpu")))
    ckpt = checkpoint_gbps(plane)
    if ckpt is not None and demand.checkpoint is not None:
        why = f"a checkpoint of {bytes_text(demand.checkpoint.size)} in {seconds_text(demand.checkpoint.within)}"
        asks.append((ckpt, why, (*AT, "demand", "checkpoint")))
    return asks


def leaf_demand(intent: Intent, plane: StoragePlane, unit_nodes: int, uplink_gbps: int) -> LeafDemand | None:
    """Uplinks a storage leaf needs for the demand, on the GPU servers' side and on the data servers' side;
    None without a demand. A GPU server's NICs land one on each leaf of its unit, so a leaf carries the share
    of a full unit's servers; the data servers' leaves carry all of it, in proportion to their groups' ports."""
    clients = client_groups(intent, plane)
    gpus = sum(g.count * g.gpus for g in clients)
    if plane.demand is None or gpus == 0:
        return None
    data, _ = target_groups(plane, intent)
    targets = [g for g in intent.server_groups if g.name in data and "storage" in g.nics]
    ports = {g.name: g.count * len(g.nics["storage"].interfaces) * g.nics["storage"].speed for g in targets}
    best: LeafDemand | None = None
    for total, why, at in _asks(intent, plane, gpus):
        per_leaf = [unit_nodes * total * g.gpus / gpus / len(g.nics["storage"].interfaces) for g in clients]
        for g in targets:
            leaves = ceil(g.count / unit_nodes) * len(g.nics["storage"].interfaces)
            per_leaf.append(total * ports[g.name] / sum(ports.values()) / leaves)
        for gbps in per_leaf:
            if best is None or gbps > best.gbps:
                best = LeafDemand(gbps, max(1, ceil(gbps / uplink_gbps - 1e-9)), why, at)
    return best


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage of the path from the GPU servers to the data servers."""

    name: str
    gbps: float
    detail: str  # what it is made of, e.g. "64 leaves x 16 uplinks of 400G"
    fix: str  # what raises it


@dataclass(frozen=True, slots=True)
class StorageFlow:
    """The storage plane's path and what the intent's demand asks of it."""

    stages: tuple[Stage, ...]
    gpus: int  # GPUs of the client servers (installed)
    read_gbps: float | None  # the read demand, all GPUs together
    checkpoint_gbps: float | None  # the rate the checkpoint needs
    checkpoint_bytes: int | None
    checkpoint_within: float | None

    @property
    def bottleneck(self) -> Stage:
        return min(self.stages, key=lambda s: s.gbps)

    @property
    def rate_gbps(self) -> float:
        return self.bottleneck.gbps

    def checkpoint_seconds(self) -> float | None:
        if self.checkpoint_bytes is None or self.rate_gbps <= 0:
            return None
        return self.checkpoint_bytes * 8 / 1e9 / self.rate_gbps


def _count(items: dict[int, int], noun: str) -> str:
    """'4 switches: 64 uplinks of 400G', from {speed: links}, for the stage's detail."""
    parts = [f"{_plural(n, 'uplink')} of {s}G" for s, n in sorted(items.items(), reverse=True)]
    return f"{noun}: " + " + ".join(parts) if parts else f"{noun}: none"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "es" if word.endswith("ch") else "s")


def flow(plan: Plan) -> StorageFlow | None:
    """The storage plane's path, from the built plan; None where the plan has no storage plane with GPU
    servers and data servers on it."""
    plane_intent = plan.intent.planes.storage
    pp = plan.planes.get("storage")
    if plane_intent is None or pp is None:
        return None
    data, _ = target_groups(plane_intent, plan.intent)
    client_names = {g.name for g in client_groups(plan.intent, plane_intent)}
    clients = [s for s in plan.servers if s.group in client_names]
    targets = [s for s in plan.servers if s.group in data]
    if not clients or not targets:
        return None
    client_nics = _nics(clients)
    target_nics = _nics(targets)
    roles = {d.name: d for d in pp.devices}
    c_leaves = {leaf for leaf, _ in client_nics}
    t_leaves = {leaf for leaf, _ in target_nics}
    shared = c_leaves & t_leaves  # traffic between servers of one leaf never leaves it
    up: dict[str, dict[int, int]] = {}
    for link in pp.links:
        if link.kind == "fabric" and link.a in roles:
            per = up.setdefault(link.a, {})
            per[link.speed] = per.get(link.speed, 0) + 1
    stages = [
        Stage("GPU servers' storage NICs", sum(s for _, s in client_nics),
              f"{_plural(len(clients), 'server')}, {_plural(len(client_nics), 'NIC')}",
              "faster or more storage NICs on the GPU servers"),
        _uplinks("GPU servers' leaves' uplinks", c_leaves - shared, up,
                 "more leaf uplinks: a lower oversubscription or leaf `uplinks`"),
    ]  # fmt: skip
    if pp.tiers == 3:
        c_pods = {roles[leaf].pod for leaf in c_leaves}
        t_pods = {roles[leaf].pod for leaf in t_leaves}
        if not c_pods & t_pods:
            spines = lambda pods: {d.name for d in pp.devices if d.role == "spine" and d.pod in pods}  # noqa: E731
            stages.append(min(
                _uplinks("GPU pods' spines' uplinks to the superspines", spines(c_pods), up,
                         "more spine uplinks: a lower oversubscription"),
                _uplinks("storage pods' spines' uplinks to the superspines", spines(t_pods), up,
                         "more spine uplinks: a lower oversubscription"),
                key=lambda s: s.gbps,
            ))  # fmt: skip
    stages += [
        _uplinks("spines' links to the storage leaves", t_leaves - shared, up,
                 "more uplinks on the storage servers' leaves: a lower oversubscription or leaf `uplinks`"),
        Stage("storage targets' ports", sum(s for _, s in target_nics),
              f"{_plural(len(targets), 'data server')}, {_plural(len(target_nics), 'port')}",
              "more data servers, or faster ports on them"),
    ]  # fmt: skip
    if shared:  # a leaf with both ends: the data that stays on it crosses no uplink, so no stage is exact
        stages = [s for s in stages if s.gbps > 0]
    demand = plane_intent.demand
    gpus = sum(s.gpus for s in clients)
    read = gpus * demand.read_per_gpu if demand is not None and demand.read_per_gpu is not None else None
    ckpt = demand.checkpoint if demand is not None else None
    return StorageFlow(
        tuple(stages),
        gpus,
        read,
        checkpoint_gbps(plane_intent),
        ckpt.size if ckpt is not None else None,
        ckpt.within if ckpt is not None else None,
    )


def _nics(servers: list[Server]) -> list[tuple[str, int]]:
    """(leaf, speed) of each native storage NIC of `servers`."""
    return [(n.leaf, n.speed) for s in servers for n in s.nics if n.plane == "storage" and n.native]


def _uplinks(name: str, leaves: set[str], up: dict[str, dict[int, int]], fix: str) -> Stage:
    speeds: dict[int, int] = {}
    for leaf in leaves:
        for speed, n in up.get(leaf, {}).items():
            speeds[speed] = speeds.get(speed, 0) + n
    total = sum(speed * n for speed, n in speeds.items())
    return Stage(name, total, _count(speeds, _plural(len(leaves), "switch")), fix)


def problems(plan: Plan) -> list[Problem]:
    """The demands the planned path cannot carry, each with the numbers and the stage that falls short."""
    f = flow(plan)
    if f is None:
        return []
    found: list[Problem] = []
    if f.read_gbps is not None:
        each = f.read_gbps / f.gpus
        what = f"{f.gpus} GPUs reading {byte_rate_text(each)} ({gbps_text(each)}) each need {gbps_text(f.read_gbps)}"
        found += _short(f, f.read_gbps, what, (*AT, "demand", "read_per_gpu"))
    if f.checkpoint_gbps is not None and f.checkpoint_bytes is not None and f.checkpoint_within is not None:
        what = (
            f"a checkpoint of {bytes_text(f.checkpoint_bytes)} in {seconds_text(f.checkpoint_within)} needs "
            f"{gbps_text(f.checkpoint_gbps)}"
        )
        found += _short(f, f.checkpoint_gbps, what, (*AT, "demand", "checkpoint", "within"))
    return found


def _short(f: StorageFlow, need: float, what: str, at: Path) -> list[Problem]:
    """One problem for the slowest stage below `need`, naming every stage that falls short."""
    short = [s for s in f.stages if s.gbps + 1e-6 < need]
    if not short:
        return []
    worst = min(short, key=lambda s: s.gbps)
    others = [s for s in short if s is not worst]
    also = ("; also short: " + ", ".join(f"{s.name} {gbps_text(s.gbps)}" for s in others)) if others else ""
    message = f"{what} at the {worst.name}; they carry {gbps_text(worst.gbps)} ({worst.detail}){also}"
    return [Problem(at, message, f"{worst.fix}, or ask less of the plane")]


def summary(f: StorageFlow) -> dict[str, object]:
    """The path as `plan --json` gives it (docs/plan-json.md: `storage_path`)."""
    seconds = f.checkpoint_seconds()
    return {
        "stages": [{"name": s.name, "gbps": round(s.gbps, 3), "detail": s.detail} for s in f.stages],
        "bottleneck": f.bottleneck.name,
        "rate_gbps": round(f.rate_gbps, 3),
        "gpus": f.gpus,
        "read": None if f.read_gbps is None else {"needed_gbps": round(f.read_gbps, 3)},
        "checkpoint": None
        if f.checkpoint_bytes is None or f.checkpoint_within is None or seconds is None
        else {
            "bytes": f.checkpoint_bytes,
            "within_s": f.checkpoint_within,
            "needed_gbps": round(f.checkpoint_bytes * 8 / 1e9 / f.checkpoint_within, 3),
            "seconds": round(seconds, 3),
        },
    }


def notes(f: StorageFlow) -> list[str]:
    """What `gpufabric plan` says of the storage path, in lines."""
    lines = [
        f"storage: the GPU servers write and read at most {gbps_text(f.rate_gbps)} ({byte_rate_text(f.rate_gbps)}), "
        f"limited by the {f.bottleneck.name} ({f.bottleneck.detail})",
        "storage: path " + " -> ".join(f"{s.name} {gbps_text(s.gbps)}" for s in f.stages),
    ]
    seconds = f.checkpoint_seconds()
    if f.checkpoint_bytes is not None and seconds is not None and f.checkpoint_within is not None:
        lines.append(
            f"storage: a checkpoint of {bytes_text(f.checkpoint_bytes)} takes {seconds_text(seconds)} at full fabric "
            f"rate (target {seconds_text(f.checkpoint_within)}); the fabric sets this floor, the servers' disks "
            "may not reach it"
        )
    if f.read_gbps is not None:
        lines.append(
            f"storage: {f.gpus} GPUs reading together need {gbps_text(f.read_gbps)} "
            f"({100 * f.read_gbps / f.rate_gbps:.0f}% of the path)"
        )
    return lines


def byte_rate_text(gbps: float) -> str:
    """A rate in bytes per second: 400 Gb/s is 50 GB/s."""
    per_s = gbps / 8
    return f"{per_s / 1000:.3g} TB/s" if per_s >= 1000 else f"{per_s:.3g} GB/s"
