"""Acceptance jobs for an InfiniBand plane: perftest pairs per rail and NCCL's environment.

On InfiniBand the adapters are addressed by LID through the subnet manager: no RoCE GID index
(`-x` for perftest, NCCL_IB_GID_INDEX for NCCL), no DSCP or traffic class. Per rail, one pair
under the same leaf (one hop) and, with more than one SU, one pair across SUs (leaf, spine, leaf),
each on the rail's adapter at both ends; NCCL gets every rail's adapter, port 1, matched exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gpufabric.ib.model import IbFabric, IbNode
from gpufabric.ib.opensm import Partition

PERFTEST = ("ib_write_bw", "ib_read_lat")


@dataclass(frozen=True, slots=True)
class Pair:
    rail: int
    path: str  # "leaf" (same leaf) or "spine" (across SUs)
    server: str  # host
    client: str
    device: str  # the rail's adapter on both hosts
    server_command: str
    client_command: str


def _adapter(node: IbNode) -> str:
    return node.name.split(" ", 1)[1]


def _command(tool: str, device: str, peer: str | None) -> str:
    # -d: the rail's adapter, port 1; no -x (GID index): InfiniBand addresses ports by LID.
    extra = " --report_gbits" if tool.endswith("_bw") else ""
    return f"{tool} -d {device} -i 1 -F{extra}" + (f" {peer}" if peer else "")


def pairs(fabric: IbFabric, tool: str = "ib_write_bw", partitions: Sequence[Partition] = ()) -> list[Pair]:
    """With partitions, both hosts of a pair share one: two tenants' adapters cannot reach each other."""
    compute = fabric.role("compute")
    shared = _sharing(partitions)
    out = []
    for rail in range(1, fabric.design.rails + 1):
        on_rail = [n for n in compute if n.rail == rail]
        first_su = [n for n in on_rail if n.su == 1]
        last_su = [n for n in on_rail if n.su == fabric.design.su_count]
        candidates: list[tuple[str, IbNode, IbNode]] = []
        leaf = _first_pair(first_su, first_su, shared)
        if leaf is not None:
            candidates.append(("leaf", *leaf))
        if fabric.design.su_count > 1:
            others = [n for n in on_rail if n.su != 1]
            spine = _first_pair(first_su, last_su, shared) or _first_pair(first_su, others, shared)
            if spine is not None:
                candidates.append(("spine", *spine))
        for path, server, client in candidates:
            device = _adapter(server)
            out.append(
                Pair(
                    rail,
                    path,
                    str(server.host),
                    str(client.host),
                    device,
                    _command(tool, device, None),
                    _command(tool, _adapter(client), str(server.host)),
                )
            )
    return out


def _sharing(partitions: Sequence[Partition]) -> Callable[[str, str], bool]:
    if not partitions:
        return lambda a, b: True
    member: dict[str, set[int]] = {}
    for p in partitions:
        for h in p.hosts:
            member.setdefault(h, set()).add(p.pkey)
    return lambda a, b: bool(member.get(a, set()) & member.get(b, set()))


def _first_pair(
    servers: list[IbNode], clients: list[IbNode], shared: Callable[[str, str], bool]
) -> tuple[IbNode, IbNode] | None:
    for s in servers:
        for c in clients:
            if s.host != c.host and shared(str(s.host), str(c.host)):
                return s, c
    return None


def nccl_env(fabric: IbFabric) -> dict[str, str]:
    """NCCL over InfiniBand: every rail's adapter (exact names, port 1); no GID index."""
    devices = [fabric.design.hca_name(r) for r in range(1, fabric.design.rails + 1)]
    return {"NCCL_IB_HCA": "=" + ",".join(f"{d}:1" for d in devices), "NCCL_NET": "IB"}
