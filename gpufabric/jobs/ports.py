"""The switch ports and host NICs of running jobs' footprints: the rows of the telemetry join, as
kube-state-metrics' pod info joins pods to nodes.

For each job, from its footprint (gpufabric/jobs/footprint.py):
- `host`: the leaf port each of the job's NICs plugs into (every data plane the job's nodes have a NIC on);
- `uplink`: a port of one of the job's leaves toward a spine that the plan's ECMP paths between the job's
  leaves (or toward its storage servers' leaves) cross; `downlink`: that link's spine end. Both ends, since a
  link's errors are counted where a frame is received.
Links between spines and superspines are not joined: each is on the paths of nearly every job that crosses a
pod, so joining them would give every such job a row per core link (`job show` lists them).

A job's rows depend only on its nodes and the plan: they are kept while the job runs with the same nodes, so a
refresh costs the jobs that started since the last one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpufabric.jobs.footprint import Footprint, Footprints
from gpufabric.jobs.running import RunningJob
from gpufabric.plan.model import Plan


@dataclass(frozen=True, slots=True)
class JoinedPort:
    """One switch port of a job's footprint."""

    plane: str
    device: str
    port: str
    rail: str
    role: str  # host | uplink | downlink
    peer: str
    cable: str


@dataclass(frozen=True, slots=True)
class JoinedNic:
    """One data NIC of a job's node."""

    plane: str
    host: str
    interface: str
    rail: str
    leaf: str


@dataclass(frozen=True, slots=True)
class JobRows:
    job: RunningJob
    ports: tuple[JoinedPort, ...]
    nics: tuple[JoinedNic, ...]
    unplanned: tuple[str, ...] = ()  # the job's nodes the plan does not hold (CPU nodes, another cluster's)


def rows(found: Footprint) -> tuple[tuple[JoinedPort, ...], tuple[JoinedNic, ...]]:
    """A footprint's join rows: one per switch port (first role wins where a port has two) and per NIC."""
    ports: dict[tuple[str, str], JoinedPort] = {}
    nics: list[JoinedNic] = []
    rail_of: dict[str, str] = {}
    for nic in found.nics:
        rail = "" if nic.rail is None else str(nic.rail)
        rail_of[nic.leaf] = rail
        nics.append(JoinedNic(nic.plane, nic.node, nic.interface, rail, nic.leaf))
        ports.setdefault(
            (nic.leaf, nic.leaf_port), JoinedPort(nic.plane, nic.leaf, nic.leaf_port, rail, "host", nic.node, nic.cable)
        )
    for crossing in (*found.planes, *found.storage):
        mine = set(crossing.leaves)  # the job's leaves (a storage path's far leaves are in `toward`)
        for link in crossing.links:
            for leaf, port, far, far_port in (
                (link.a, link.a_port, link.b, link.b_port),
                (link.b, link.b_port, link.a, link.a_port),
            ):
                if leaf in mine:
                    rail = rail_of.get(leaf, "")
                    ports.setdefault(
                        (leaf, port), JoinedPort(crossing.plane, leaf, port, rail, "uplink", far, link.cable)
                    )
                    ports.setdefault(
                        (far, far_port), JoinedPort(crossing.plane, far, far_port, rail, "downlink", leaf, link.cable)
                    )
    return tuple(ports.values()), tuple(nics)


class JobPorts:
    """The join rows of the running jobs on one plan, each job's kept while it runs on the same nodes."""

    def __init__(self, plan: Plan) -> None:
        self.footprints = Footprints(plan)
        self.footprints.warm()  # at start: the first refresh places jobs only
        self._kept: dict[tuple[str, tuple[str, ...]], JobRows] = {}

    def join(self, jobs: Sequence[RunningJob]) -> list[JobRows]:
        servers = self.footprints.servers
        kept: dict[tuple[str, tuple[str, ...]], JobRows] = {}
        out = []
        for job in jobs:
            key = (job.job_id, job.nodes)
            found = self._kept.get(key) or kept.get(key)
            if found is None or found.job != job:
                planned = [n for n in job.nodes if n in servers]
                unplanned = tuple(n for n in job.nodes if n not in servers)
                if planned:
                    ports, nics = rows(self.footprints.footprint(planned, job.job_id))
                else:
                    ports, nics = (), ()
                found = JobRows(job, ports, nics, unplanned)
            kept[key] = found
            out.append(found)
        self._kept = kept  # an ended job's rows go with it
        return out
