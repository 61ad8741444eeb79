"""The scheduler before a switch: the servers that depend on a switch alone (`servers_behind`), taken
out of Slurm and Kubernetes before the switch changes and put back after (`drain_for`, `resume`).

Used by the services that change switches (push, maintenance, restart, upgrade) and by the
remediation loop, which drains nodes for a failing part (`drain_nodes` with its own mark).
Below the services, above the domain: it reads the plan and the exports' RDMA resource names, and
reaches the schedulers itself (Slurm's commands, Kubernetes' REST API). docs/scheduler.md.
"""

from gpufabric.scheduler.behind import Behind, BehindServer, CutNic, servers_behind
from gpufabric.scheduler.model import (
    Mark,
    NodeDrain,
    NodeState,
    Scheduler,
    SchedulerDrain,
    SchedulerError,
    SchedulerOutputError,
    Watcher,
)
from gpufabric.scheduler.reach import Reach, job_wait, schedulers
from gpufabric.scheduler.service import drain_for, drain_nodes, nodes_behind, resume, resume_owner, status

__all__ = [
    "Behind",
    "BehindServer",
    "CutNic",
    "Mark",
    "NodeDrain",
    "NodeState",
    "Reach",
    "Scheduler",
    "SchedulerDrain",
    "SchedulerError",
    "SchedulerOutputError",
    "Watcher",
    "drain_for",
    "drain_nodes",
    "job_wait",
    "nodes_behind",
    "resume",
    "resume_owner",
    "schedulers",
    "servers_behind",
    "status",
]
