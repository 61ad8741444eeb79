"""The acceptance jobs of an InfiniBand compute plane, in the same suite, scripts and report as RoCE's.

Per rail a perftest pair under one leaf and one across the scalable units (through the spines), both
hosts in one partition where the plan has partitions (gpufabric/ib/acceptance.py picks them); nccl-tests
per scalable unit and for the cluster with NCCL's InfiniBand settings (every rail's adapter, port 1, by
exact name; no GID index). perftest reaches the peer over the hosts' own network by name for its
out-of-band exchange, and the adapters by LID. No incast job: InfiniBand's link-level credits do not
drop or pause the way a RoCE plane's PFC and ECN do, and the switches' counters are read by `gpufabric ib`.
"""

from __future__ import annotations

from collections import defaultdict

from gpufabric.acceptance import model as m
from gpufabric.acceptance.model import Endpoint, NcclJob, PerfJob
from gpufabric.ib import acceptance as ib_pairs
from gpufabric.ib.hardware import RATES
from gpufabric.ib.model import IbFabric
from gpufabric.plan.infiniband import IbPlan
from gpufabric.plan.model import Plan, Server

HOPS = {"leaf": 1, "spine": 3}


class _Fabric:
    """Where each adapter is cabled, and which cables a path may cross."""

    def __init__(self, fabric: IbFabric) -> None:
        self.fabric = fabric
        nodes = fabric.by_name
        self.leaf_of: dict[str, tuple[str, str, str]] = {}  # adapter node -> (leaf, leaf port, cable id)
        self.uplinks: dict[str, set[tuple[str, str]]] = defaultdict(set)  # leaf -> (spine, cable id)
        for number, cable in enumerate(fabric.cables, 1):
            ident = f"ib-{number:06d}"
            if cable.tier == "node-leaf":
                self.leaf_of[cable.down.node] = (cable.up.node, str(cable.up.port), ident)
            elif cable.tier == "leaf-spine" and nodes[cable.down.node].role == "leaf":
                self.uplinks[cable.down.node].add((cable.up.node, ident))

    def endpoint(self, host: str, device: str) -> Endpoint:
        leaf, port, _ = self.leaf_of[f"{host} {device}"]
        return Endpoint(host, device, device, host, leaf, port)

    def route(self, path: str, a: Endpoint, b: Endpoint) -> tuple[tuple[str, ...], tuple[str, ...]]:
        switches = {a.leaf, b.leaf}
        cables = {self.leaf_of[f"{e.server} {e.hca}"][2] for e in (a, b)}
        if path != "leaf":
            for leaf in (a.leaf, b.leaf):
                switches |= {spine for spine, _ in self.uplinks[leaf]}
                cables |= {ident for _, ident in self.uplinks[leaf]}
        return tuple(sorted(switches)), tuple(sorted(cables))


def perf_jobs(ib: IbPlan) -> list[PerfJob]:
    where = _Fabric(ib.fabric)
    rate = float(RATES[ib.fabric.design.hca_rate].gbps)
    jobs = []
    for pair in ib_pairs.pairs(ib.fabric, partitions=ib.settings.partitions):
        server, client = where.endpoint(pair.server, pair.device), where.endpoint(pair.client, pair.device)
        crosses, cables = where.route(pair.path, client, server)
        for tool in ("ib_write_bw", "ib_write_lat"):
            if tool == "ib_write_bw":
                expected = rate * m.IB_PAYLOAD / (m.IB_PAYLOAD + m.IB_OVERHEAD)
                threshold, unit = expected * m.BW_TOLERANCE, "Gb/s"
            else:
                expected = m.LAT_BASE_US + m.LAT_PER_HOP_US * HOPS[pair.path]
                threshold, unit = expected * m.LAT_TOLERANCE, "us"
            jobs.append(PerfJob(
                id=f"{tool}.{ib.plane}.rail{pair.rail}.{pair.path}.{client.server}-{server.server}", tool=tool,
                plane=ib.plane, rail=pair.rail, path=pair.path, server=server, client=client, traffic_class=0,
                gid_index=None, qps=1, expected=round(expected, 2), threshold=round(threshold, 2), unit=unit,
                crosses=crosses, cables=cables, line_rate=rate,
            ))  # fmt: skip
    return jobs


def nccl_jobs(plan: Plan, ib: IbPlan) -> list[NcclJob]:
    """all_reduce and all_to_all per scalable unit and for the cluster; with partitions, per partition (a
    tenant's adapters reach only their own partition's, so no collective spans two)."""
    hosts = set(ib.fabric.hosts)
    gpu = {s.name: s for s in plan.servers if s.gpus and s.name in hosts}
    if len(gpu) < 2:
        return []
    groups = [(p.name, [h for h in p.hosts if h in gpu]) for p in ib.settings.partitions] or [("", list(gpu))]
    su_of = {n.host: n.su for n in ib.fabric.adapters if n.host is not None}
    rails = ib.fabric.design.rails
    rate = RATES[ib.fabric.design.hca_rate].gbps
    jobs = []
    for partition, members in groups:
        if len(members) < 2:
            continue
        first = gpu[members[0]]
        per_gpu = rails * rate / max(1, first.gpus) / 8  # GB/s
        env = {**ib_pairs.nccl_env(ib.fabric), "NCCL_SOCKET_IFNAME": "=" + _bootstrap(first)}
        units: dict[int, list[str]] = defaultdict(list)
        for name in members:
            units[su_of.get(name) or 0].append(name)
        scopes = [(f"unit{u}", names) for u, names in sorted(units.items()) if len(names) > 1]
        if len(units) > 1 or not scopes:
            scopes.append(("cluster", members))
        prefix = f"{ib.plane}.{partition}" if partition else ib.plane
        for scope, names in scopes:
            for tool, efficiency in m.NCCL_EFFICIENCY.items():
                expected = per_gpu * efficiency
                jobs.append(NcclJob(
                    id=f"{tool}.{prefix}.{scope}", tool=tool, plane=ib.plane, scope=scope, servers=tuple(names),
                    gpus_per_server=first.gpus, env=env, expected=round(expected, 2),
                    threshold=round(expected * m.NCCL_TOLERANCE, 2), ceiling=2 * rails * rate / 8,
                ))  # fmt: skip
    return jobs


def _bootstrap(server: Server) -> str:
    """NCCL bootstraps over the business NIC, else the management NIC (as on a RoCE plane)."""
    business = [n.interface for n in server.nics if n.plane == "business"]
    return business[0] if business else server.mgmt_interface or "eth0"
