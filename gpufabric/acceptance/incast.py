"""Incast jobs of a plane: per leaf, N servers under it write to one more at once; per rail and pod,
N servers under the other leaves write to one across the spine layer. Each job names every switch
port it crosses (read before and after) and the egress where the queue builds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import zip_longest
from typing import NamedTuple

from gpufabric.acceptance import model as m
from gpufabric.acceptance.model import Endpoint, IncastJob
from gpufabric.acceptance.paths import Fabric
from gpufabric.plan.model import PlanePlan

Leaves = Sequence[tuple[str, list[Endpoint]]]  # (leaf, endpoints under it on the rail), in fabric order


class Rail(NamedTuple):
    plane: PlanePlan
    fabric: Fabric
    rail: int
    tos: int  # the ToS byte the hosts stamp on RoCE
    priority: int  # the lossless priority


def incast_jobs(rail: Rail, pods: Mapping[int, Leaves]) -> list[IncastJob]:
    jobs = []
    for leaves in pods.values():
        for _, under in leaves:
            if len(under) - 1 >= m.INCAST_MIN_SENDERS:
                senders = under[1 : 1 + m.INCAST_MAX_SENDERS]
                why = _why(len(under) - 1, "other servers under the leaf on this rail")
                jobs.append(_job(rail, "leaf", under[0], senders, why))
        if len(leaves) < 2:
            continue
        receiver = leaves[0][1][0]
        # Round robin over the other leaves: every leaf's uplinks carry part of the load.
        spread = [e for row in zip_longest(*(u for _, u in leaves[1:])) for e in row if e is not None]
        if len(spread) >= m.INCAST_MIN_SENDERS:
            why = _why(len(spread), "servers under the rail's other leaves in the pod")
            senders = spread[: m.INCAST_MAX_SENDERS]
            jobs.append(_job(rail, "spine", receiver, senders, why))
    return jobs


def _why(available: int, what: str) -> str:
    n = min(available, m.INCAST_MAX_SENDERS)
    capped = f", capped at {m.INCAST_MAX_SENDERS}" if available > m.INCAST_MAX_SENDERS else ""
    return f"{n} senders: {available} {what}{capped}"


def _job(ctx: Rail, path: str, receiver: Endpoint, senders: list[Endpoint], why: str) -> IncastJob:
    plane, fabric, rail = ctx.plane, ctx.fabric, ctx.rail
    switches: set[str] = set()
    cables: set[str] = set()
    for s in senders:
        sw, cb = fabric.between_leaves(s.leaf, receiver.leaf, plane.tiers)
        switches |= sw
        cables |= cb
    ports = {(e.leaf, e.leaf_port) for e in (receiver, *senders)}
    ports |= {end for c in cables for end in fabric.ends.get(c, ())}
    cables |= {fabric.host_cable.get((e.server, e.interface), "") for e in (receiver, *senders)} - {""}
    speed = fabric.host_speed[(receiver.server, receiver.interface)]
    expected = speed * m.ROCE_PAYLOAD / (m.ROCE_PAYLOAD + m.ROCE_OVERHEAD)
    qps = max(1, min(64, int(plane.sizing.get("leaf_uplinks", 1)))) if path != "leaf" else 1
    return IncastJob(
        id=f"incast.{plane.name}.rail{rail}.{path}.{receiver.leaf}.{len(senders)}to1-{receiver.server}",
        tool="ib_write_bw", plane=plane.name, rail=rail, path=path, receiver=receiver, senders=tuple(senders),
        why=why, traffic_class=ctx.tos, gid_index=m.GID_INDEX, priority=ctx.priority, qps=qps,
        expected=round(expected, 2), threshold=round(expected * m.BW_TOLERANCE, 2), unit="Gb/s",
        crosses=tuple(sorted(switches)), cables=tuple(sorted(cables)), ports=tuple(sorted(ports)),
        congested=(receiver.leaf, receiver.leaf_port), line_rate=float(speed),
    )  # fmt: skip
