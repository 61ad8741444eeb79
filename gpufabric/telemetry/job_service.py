"""The job join as a library call: the collector of running jobs for `telemetry serve --jobs slurm`, reading
Slurm's `squeue --json` through the scheduler reader, on the plan the exporter reads (telemetry/job_join.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpufabric.fleet.args import FleetArgs
from gpufabric.intent import load_intent
from gpufabric.plan import build_plan
from gpufabric.scheduler.slurm import Slurm
from gpufabric.telemetry.job_join import INTERVAL, SHARD_KEY, JobCollector

SCHEDULERS = ("slurm",)


def job_collector(
    args: FleetArgs, scheduler: str, *, conf: Path | None = None, interval: float = INTERVAL, shard: Any = None
) -> JobCollector | None:
    """The running jobs' collector, or None for an exporter shard that does not serve them (one shard does:
    two would serve every info series twice, and the joins would match each port twice)."""
    if scheduler not in SCHEDULERS:
        raise ValueError(f"no job reader for {scheduler!r} (readers: {', '.join(SCHEDULERS)})")
    if shard is not None and not shard.owns(SHARD_KEY):
        return None
    # The plan's names only: no login is needed to join jobs to ports (the lab's switches carry the same names).
    plan = build_plan(load_intent(args.file, embedded=False))
    settings = plan.intent.scheduler
    if conf is None and settings is not None and settings.slurm is not None and settings.slurm.conf:
        conf = Path(settings.slurm.conf)
    return JobCollector(plan, Slurm(conf).squeue, scheduler=scheduler, interval=interval)
