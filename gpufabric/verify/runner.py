"""Read every rendered file of the selected switches and run the checks: `nornir verify`.

Switches are read and checked in chunks on every core (gpufabric.parallel); what the link checks
need of each switch (port MTUs and addresses, BGP sessions, ASN) comes back as plain tuples, and
the links are checked once all their ends are in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.secrets import PasswordHasher
from gpufabric.gc_pause import gc_paused
from gpufabric.intent.types import SecretRef
from gpufabric.parallel import chunked, cores, fork_map, task_size
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform
from gpufabric.verify import vendor
from gpufabric.verify.checks import check_device, check_link
from gpufabric.verify.facts import Finding, LinkEnd

PARALLEL_FROM = 64  # switches; fewer are read in-process
LINK_CHECKED = ("fabric", "edge")  # the links whose two ends are held to each other (host ends: one switch)
CHUNK = 16  # switches a task, at least
CHUNK_MAX = 64  # and at most: the last task's switches are the time one worker may wait on the other
TASKS_PER_WORKER = 32  # a large fabric's switches in fewer, larger tasks: each costs the parent a
# message both ways and a wake-up (at 16 switches a task, 0.17 ms a switch of the parent's CPU, 2.1 s
# for the 131k-GPU example, taken from the cores the workers read on; at 64, half of that)


class _NoSecrets(PasswordHasher):
    """Verification reads hashes from the files; it never needs the password itself."""

    def hash(self, ref: SecretRef, user: str, algorithm: str, field: str, rounds: int = 0) -> str:
        return ""


@dataclass
class Report:
    switches: int = 0
    files: int = 0
    findings: list[Finding] = field(default_factory=list)
    judged: dict[str, int] = field(default_factory=dict)  # platform -> files its vendor's model judged
    skipped: dict[str, str] = field(default_factory=dict)  # platform -> why its vendor's model did not run


def _judges(plan: Plan, names: Sequence[str], index: LinkIndex, wanted: bool) -> tuple[set[str], dict[str, str]]:
    """The platforms whose vendor judge runs, and why each other one with a judge does not."""
    present = {p for p in {index.devices[n].platform for n in names} if platform(p).judge is not None}
    if not wanted:
        return set(), {p: "not asked for (--no-vendor)" for p in sorted(present)}
    running = {p for p in present if vendor.installed(p)}
    return running, {p: vendor.skipped_note(p) for p in sorted(present - running)}


def _check_chunk(
    plan: Plan, index: LinkIndex, folder: Path, judged: set[str], names: Sequence[str]
) -> tuple[Report, list[LinkEnd]]:
    report, ends = Report(), []
    with gc_paused():
        for name in names:
            device = index.devices[name]
            spec = platform(device.platform)
            # Missing is missing; anything else there (a FIFO, a device, a folder) its reader refuses by name.
            missing = [f for f in spec.files(name) if not (folder / f).exists()]
            if missing:
                report.findings.append(
                    Finding("files", name, missing[0], 0, "a rendered file (run `nornir render`)", "missing")
                )
                continue
            found = spec.read_files(name, folder)
            report.switches += 1
            report.files += len(found.files)
            ctx = build(plan, device, index)
            report.findings += check_device(plan, ctx, found)
            if device.platform in judged and not any(f.check == "parse" for f in found.problems):
                report.findings += vendor.judge(ctx, folder)
                report.judged[device.platform] = report.judged.get(device.platform, 0) + 1
            ends.append(LinkEnd.of(found, {p.name for p in ctx.ports if p.kind in LINK_CHECKED}))
    return report, ends


def _chunk(switches: int, workers: int) -> int:
    return task_size(switches, workers, CHUNK, CHUNK_MAX, TASKS_PER_WORKER)


def verify(
    plan: Plan, folder: Path, plane: str | None = None, workers: int | None = None, vendor_judges: bool = True
) -> Report:
    """`vendor_judges`: also hand each file to its vendor's model where that is installed."""
    # The cycle collector paused throughout, not only in the workers: the index of a 131k-GPU plan's
    # 894k links, the workers' results and the link checks allocate millions of acyclic objects, and
    # each collection they trigger walks the whole plan (the index took 2.4 s of CPU with it, 0.4 s without).
    with gc_paused():
        return _verify(plan, folder, plane, workers, vendor_judges)


def _verify(plan: Plan, folder: Path, plane: str | None, workers: int | None, vendor_judges: bool) -> Report:
    index = LinkIndex(plan, _NoSecrets(plan.intent.fabric.name))
    names = [d.name for d in plan.devices() if plane is None or d.plane == plane]
    workers = (workers or cores()) if len(names) >= PARALLEL_FROM else 1
    judged, skipped = _judges(plan, names, index, vendor_judges)
    if workers > 1:  # each judge's model built once, here, rather than once in every worker
        for name in sorted(judged):
            vendor.warm(name, plan.intent.release(name))
    report = Report(skipped=skipped)
    link_ends: dict[str, LinkEnd] = {}
    for part, ends in fork_map(
        partial(_check_chunk, plan, index, folder, judged), chunked(names, _chunk(len(names), workers)), workers
    ):
        report.switches += part.switches
        report.files += part.files
        report.findings += part.findings
        for name, count in part.judged.items():
            report.judged[name] = report.judged.get(name, 0) + count
        link_ends.update((e.device, e) for e in ends)
    for link in plan.links():
        if link.kind in LINK_CHECKED and (plane is None or link.plane == plane):
            report.findings += check_link(link, link_ends)
    return report
