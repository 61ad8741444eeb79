"""The planner: the intent expanded into devices, links, addresses and ASNs."""

from gpufabric.plan.model import Device, FailureDomain, HostNic, Link, Plan, PlanePlan, Server, ip
from gpufabric.plan.planner import build_plan

__all__ = ["Device", "FailureDomain", "HostNic", "Link", "Plan", "PlanePlan", "Server", "build_plan", "ip"]
