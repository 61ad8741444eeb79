"""The acceptance suite of a plan: perftest pairs that cross every leaf and spine of every rail, and
nccl-tests runs per scalable unit and for the whole cluster, each with its expected figure."""

from __future__ import annotations

import dataclasses
import itertools
from collections import defaultdict
from typing import NamedTuple

from gpufabric.acceptance import infiniband
from gpufabric.acceptance import model as m
from gpufabric.acceptance.incast import Rail, incast_jobs
from gpufabric.acceptance.model import DiagJob, Endpoint, IncastJob, NcclJob, PerfJob, Suite
from gpufabric.acceptance.paths import Fabric
from gpufabric.acceptance.storage import storage_jobs
from gpufabric.plan.model import Device, HostNic, Plan, PlanePlan, Server, ip
from gpufabric.plan.multiplane import parts

HOPS = {"leaf": 1, "spine": 3, "rail": 3, "pod": 5}  # switches crossed on the way


class Pair(NamedTuple):
    path: str  # leaf | spine | rail (across rails, through a spine) | pod
    client: Endpoint
    server: Endpoint


class _Plane(NamedTuple):
    plane: PlanePlan
    fabric: Fabric
    tos: int


def stand_in(suite: Suite) -> Suite:
    """The lab's version of a suite: the same pairs, iperf3 and ping in place of perftest (named so in
    every job id), the lab's own figures; collectives need GPUs and are left out."""
    out = Suite(suite.fabric)
    for i, j in enumerate(p for p in suite.perf if p.gid_index is not None):  # InfiniBand has no IP stand-in
        tool = m.STAND_IN_TOOLS[j.tool]
        bw = tool == "iperf3"
        out.perf.append(dataclasses.replace(
            j, tool=tool, id=j.id.replace(j.tool, f"{tool}-stand-in", 1), port=5201 + i % 100, line_rate=None,
            expected=m.STAND_IN_GBPS if bw else m.STAND_IN_RTT_US,
            threshold=m.STAND_IN_GBPS_FLOOR if bw else m.STAND_IN_RTT_CEILING_US,
        ))  # fmt: skip
    return out


def build_suite(plan: Plan) -> Suite:
    suite = Suite(plan.intent.fabric.name)
    hcas = _hcas(plan)
    for name, plane in plan.planes.items():
        if not plane.carries_roce:
            continue
        fabric = Fabric.of(plan, name)
        tos = _tos(plan, plane)
        # Pairs and incasts within each plane of a multi-plane compute plane (no path joins two planes);
        # the collectives run over every plane's NICs at once, as NCCL balances across the planes.
        for part in _parts(name, plane):
            ctx = _Plane(part, fabric, tos)
            for rail, pairs in _pairs(plan, part, hcas).items():
                for pair in pairs:
                    route = _route(ctx, pair)
                    suite.perf += [_perf(ctx, tool, rail, pair, route) for tool in ("ib_write_bw", "ib_write_lat")]
            suite.incast += _incast(plan, ctx, hcas)
        suite.nccl += _nccl(plan, plane, fabric, hcas, tos)
    if plan.infiniband is not None:
        suite.perf += infiniband.perf_jobs(plan.infiniband)
        suite.nccl += infiniband.nccl_jobs(plan, plan.infiniband)
    suite.storage = storage_jobs(plan)
    suite.gpu = diag_jobs(plan)
    return suite


def diag_jobs(plan: Plan) -> list[DiagJob]:
    """DCGM's level-3 diagnostic on every server with GPUs: a GPU that fails under stress slows every
    collective it is in, which no network test tells apart from a slow link."""
    return [DiagJob(f"dcgmi-diag.r{m.DCGM_LEVEL}.{s.name}", s.name, s.gpus) for s in plan.servers if s.gpus]


def _incast(plan: Plan, ctx: _Plane, hcas: dict[tuple[str, str], str]) -> list[IncastJob]:
    profile = plan.intent.qos_profiles.get(ctx.plane.qos) if ctx.plane.qos else None
    priority = profile.roce_priority if profile is not None else 3
    leaves, by_rail = _by_rail(plan, ctx.plane, hcas)
    jobs = []
    for rail in sorted(by_rail):
        under = by_rail[rail]
        pods: dict[int, list[tuple[str, list[Endpoint]]]] = defaultdict(list)
        for n in sorted(under, key=lambda n: _place(leaves[n])):
            pods[leaves[n].pod or 0].append((n, under[n]))
        jobs += incast_jobs(Rail(ctx.plane, ctx.fabric, rail, ctx.tos, priority), pods)
    return jobs


def _by_rail(plan: Plan, plane: PlanePlan, hcas: dict[tuple[str, str], str]
             ) -> tuple[dict[str, Device], dict[int, dict[str, list[Endpoint]]]]:  # fmt: skip
    """The plane's leaves by name, and per rail the endpoints under each leaf."""
    leaves = {d.name: d for d in plane.devices if d.role == "leaf"}
    by_rail: dict[int, dict[str, list[Endpoint]]] = defaultdict(lambda: defaultdict(list))
    for s in plan.servers:
        for nic in s.nics:
            # A leaf's name is the plane's own (and one plane's of a multi-plane one). A NIC that joins only a
            # converged plane's carried planes (`native: false`) has no address of the plane's own to test.
            if nic.leaf in leaves and nic.native:
                by_rail[nic.rail][nic.leaf].append(_endpoint(s, nic, hcas))
    return leaves, by_rail


def _parts(name: str, plane: PlanePlan) -> list[PlanePlan]:
    """The plane, or each plane of a multi-plane compute plane named as the exports name it (`compute-p1`):
    its jobs say which plane they test."""
    return [dataclasses.replace(part, name=label) if label != name else part for label, part in parts(name, plane)]


def _tos(plan: Plan, plane: PlanePlan) -> int:
    profile = plan.intent.qos_profiles.get(plane.qos) if plane.qos else None
    return profile.host_tos if profile is not None else 0


def _hcas(plan: Plan) -> dict[tuple[str, str], str]:
    """mlx5_<n> per (server, interface), n counting the server's NICs on RoCE planes in order."""
    roce = {n for n, p in plan.planes.items() if p.carries_roce}
    out: dict[tuple[str, str], str] = {}
    for s in plan.servers:
        for i, nic in enumerate(n for n in s.nics if n.plane in roce):
            out[(s.name, nic.interface)] = f"mlx5_{i}"
    return out


def _endpoint(server: Server, nic: HostNic, hcas: dict[tuple[str, str], str]) -> Endpoint:
    return Endpoint(server.name, nic.interface, hcas[(server.name, nic.interface)], str(ip(nic.address)),
                    nic.leaf, nic.leaf_port)  # fmt: skip


def _pairs(plan: Plan, plane: PlanePlan, hcas: dict[tuple[str, str], str]) -> dict[int, list[Pair]]:
    """Per rail: a pair under each leaf that has two servers, a chain across the leaves of each pod
    (every leaf, through the spine layer) and a chain across the pods (through the superspines).
    Where a rail has one leaf in a pod (one scalable unit), no same-rail pair reaches the spines: a
    chain across the rails does (rail-optimized jobs keep to their rail, but the cables must carry it)."""
    leaves, by_rail = _by_rail(plan, plane, hcas)
    out: dict[int, list[Pair]] = {}
    lone: dict[int, list[list[Endpoint]]] = defaultdict(list)  # pod -> the endpoints of rails with one leaf there
    for rail in sorted(by_rail):
        under = by_rail[rail]
        order = sorted(under, key=lambda n: _place(leaves[n]))
        pairs = [Pair("leaf", under[n][-1], under[n][0]) for n in order if len(under[n]) > 1]
        pods: dict[int, list[str]] = defaultdict(list)
        for n in order:
            pods[leaves[n].pod or 0].append(n)
        for pod, names in pods.items():
            pairs += [Pair("spine", under[b][0], under[a][0]) for a, b in itertools.pairwise(names)]
            if len(names) == 1:
                lone[pod].append(under[names[0]])
        firsts = [names[0] for _, names in sorted(pods.items())]
        pairs += [Pair("pod", under[b][0], under[a][0]) for a, b in itertools.pairwise(firsts)]
        out[rail] = pairs
    for groups in lone.values():
        for a, b in itertools.pairwise(groups):
            client = next((e for e in reversed(b) if e.server != a[0].server), b[-1])
            rail = next(n.rail for s in plan.servers if s.name == a[0].server for n in s.nics if n.leaf == a[0].leaf)
            out[rail].append(Pair("rail", client, a[0]))
    return out


def _place(d: Device) -> tuple[int, int, int, str]:
    return (d.pod or 0, d.unit or 0, d.side or 0, d.name)


def _route(ctx: _Plane, pair: Pair) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The switches and cables a pair's traffic may cross (every equal-cost path)."""
    switches, cables = ctx.fabric.between_leaves(pair.client.leaf, pair.server.leaf, ctx.plane.tiers)
    cables |= {ctx.fabric.host_cable.get((e.server, e.interface), "") for e in (pair.client, pair.server)} - {""}
    return tuple(sorted(switches)), tuple(sorted(cables))


def _perf(ctx: _Plane, tool: str, rail: int, pair: Pair, route: tuple[tuple[str, ...], tuple[str, ...]]) -> PerfJob:
    plane, fabric, (path, client, server) = ctx.plane, ctx.fabric, pair
    speed = min(fabric.host_speed[(e.server, e.interface)] for e in (client, server))
    if tool == "ib_write_bw":
        expected = speed * m.ROCE_PAYLOAD / (m.ROCE_PAYLOAD + m.ROCE_OVERHEAD)
        threshold, unit = expected * m.BW_TOLERANCE, "Gb/s"
    else:
        expected = m.LAT_BASE_US + m.LAT_PER_HOP_US * HOPS[path]
        threshold, unit = expected * m.LAT_TOLERANCE, "us"
    qps = max(1, min(64, int(plane.sizing.get("leaf_uplinks", 1)))) if path != "leaf" else 1
    return PerfJob(
        id=f"{tool}.{plane.name}.rail{rail}.{path}.{client.server}-{server.server}",
        tool=tool, plane=plane.name, rail=rail, path=path, server=server, client=client, traffic_class=ctx.tos,
        gid_index=m.GID_INDEX, qps=qps, expected=round(expected, 2), threshold=round(threshold, 2), unit=unit,
        crosses=route[0], cables=route[1], line_rate=float(speed),
    )  # fmt: skip


def _nccl(plan: Plan, plane: PlanePlan, fabric: Fabric, hcas: dict[tuple[str, str], str], tos: int) -> list[NcclJob]:
    """all_reduce and all_to_all per unit (traffic stays under the unit's leaves) and for the cluster."""
    gpu = [s for s in plan.servers if s.gpus and any(n.plane == plane.name for n in s.nics)]
    if len(gpu) < 2:
        return []
    units: dict[int, list[Server]] = defaultdict(list)
    for s in gpu:
        units[s.units.get(plane.name, 0)].append(s)
    scopes = [(f"unit{u}", members) for u, members in sorted(units.items()) if len(members) > 1]
    if len(units) > 1 or not scopes:
        scopes.append(("cluster", gpu))
    leaf_ratio = next((t.ratio for t in plane.tier_stats if t.tier == "leaf"), 1.0)
    jobs = []
    for scope, members in scopes:
        first = members[0]
        nics = [n for n in first.nics if n.plane == plane.name]
        per_gpu = sum(n.speed for n in nics) / max(1, first.gpus) / 8  # GB/s
        # Bus bandwidth counts what each rank would move in a ring, so reduction inside the server
        # (NVLink) or in the switches lifts it above the per-GPU share of the NICs; but every byte a
        # server sends or receives still crosses its NICs, which bounds an all-reduce's below twice
        # their bandwidth (and an all-to-all's below twice the per-GPU share): above is no measurement.
        ceiling = 2 * sum(n.speed for n in nics) / 8
        factor = 1.0 if scope != "cluster" or len(units) == 1 else 1 / max(1.0, leaf_ratio)
        env = {
            "NCCL_IB_HCA": ",".join(hcas[(first.name, n.interface)] for n in nics),
            "NCCL_IB_GID_INDEX": str(m.GID_INDEX),
            "NCCL_IB_TC": str(tos),
            "NCCL_SOCKET_IFNAME": "=" + _bootstrap_interface(first),
        }
        leaves = {n.leaf for s in members for n in s.nics if n.plane == plane.name}
        switches = set(leaves) | (fabric.uppers(leaves) if scope == "cluster" and len(units) > 1 else set())
        cables = {fabric.host_cable.get((s.name, n.interface), "") for s in members for n in s.nics} - {""}
        for tool, efficiency in m.NCCL_EFFICIENCY.items():
            expected = per_gpu * efficiency * factor
            jobs.append(NcclJob(
                id=f"{tool}.{plane.name}.{scope}", tool=tool, plane=plane.name, scope=scope,
                servers=tuple(s.name for s in members), gpus_per_server=first.gpus, env=env,
                expected=round(expected, 2), threshold=round(expected * m.NCCL_TOLERANCE, 2),
                crosses=tuple(sorted(switches)), cables=tuple(sorted(cables)), ceiling=ceiling,
            ))  # fmt: skip
    return jobs


def _bootstrap_interface(server: Server) -> str:
    """NCCL bootstraps over the business NIC, else the management NIC (as the roce_qos role sets it)."""
    business = [n.interface for n in server.nics if n.plane == "business"]
    return business[0] if business else server.mgmt_interface or "eth0"


def screen_suite(plan: Plan) -> Suite:
    """The jobs `acceptance screen` runs on a schedule to find slow nodes, judged against their median.

    - ib_write_bw around a ring of each rail's NICs (in leaf order): every NIC is in two pairs, once
      sending and once receiving, so a slow NIC, cable or leaf port shows in both and its partners in
      one. The acceptance suite's pairs cover every switch, not every NIC twice.
    - all_reduce_perf on each GPU server alone (its GPUs over NVLink and PCIe: a slow GPU or link), and
      the acceptance suite's all_reduce_perf per scalable unit and for the cluster.
    """
    suite = Suite(plan.intent.fabric.name)
    hcas = _hcas(plan)
    for name, plane in plan.planes.items():
        if not plane.carries_roce:
            continue
        fabric = Fabric.of(plan, name)
        for part in _parts(name, plane):
            ctx = _Plane(part, fabric, _tos(plan, plane))
            leaves, by_rail = _by_rail(plan, part, hcas)
            for rail in sorted(by_rail):
                ring = [
                    e for leaf in sorted(by_rail[rail], key=lambda n: _place(leaves[n])) for e in by_rail[rail][leaf]
                ]
                pairs = list(itertools.pairwise(ring)) + ([(ring[-1], ring[0])] if len(ring) > 2 else [])
                for server, client in pairs:
                    path = "leaf" if server.leaf == client.leaf else _farther(leaves[server.leaf], leaves[client.leaf])
                    pair = Pair(path, client, server)
                    job = _perf(ctx, "ib_write_bw", rail, pair, _route(ctx, pair))
                    suite.perf.append(
                        dataclasses.replace(job, id=job.id.replace("ib_write_bw.", "screen.ib_write_bw.", 1))
                    )
        units = [j for j in _nccl(plan, plane, fabric, hcas, _tos(plan, plane)) if j.tool == "all_reduce_perf"]
        for s in plan.servers:
            if s.gpus and any(n.plane == name for n in s.nics):
                suite.nccl.append(NcclJob(
                    id=f"screen.all_reduce_perf.{name}.node.{s.name}", tool="all_reduce_perf", plane=name,
                    scope=f"node {s.name}", servers=(s.name,), gpus_per_server=s.gpus, env={},
                ))  # fmt: skip
        suite.nccl += [dataclasses.replace(j, id=f"screen.{j.id}") for j in units]
    return suite


def _farther(a: Device, b: Device) -> str:
    return "spine" if (a.pod or 0) == (b.pod or 0) else "pod"
