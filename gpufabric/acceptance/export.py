"""The suite as JSON: what a scheduler or a person reads to run it by hand."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from gpufabric.acceptance.model import Suite


def suite_dict(suite: Suite) -> dict[str, Any]:
    perf = []
    for j in suite.perf:
        doc = asdict(j)
        doc["commands"] = {"server": j.command("server"), "client": j.command("client")}
        perf.append(doc)
    nccl = [{**asdict(j), "ranks": j.ranks, "command": j.command()} for j in suite.nccl]
    incast = []
    for i in suite.incast:
        doc = asdict(i)
        doc["commands"] = {
            "listeners": [i.command("server", n) for n in range(len(i.senders))],
            "senders": [i.command("client", n) for n in range(len(i.senders))],
        }
        incast.append(doc)
    counts: dict[str, int] = {}
    for job in suite.jobs():
        key = "incast" if job in suite.incast else job.tool
        counts[key] = counts.get(key, 0) + 1
    gpu = [{**asdict(j), "command": j.command()} for j in suite.gpu]
    storage = [{**asdict(j), "command": j.command()} for j in suite.storage]
    for j in suite.storage:
        counts[j.tool] = counts.get(j.tool, 0) + 1
    return {"fabric": suite.fabric, "counts": counts, "perftest": perf, "nccl": nccl, "incast": incast,
            "gpu": gpu, "storage": storage}  # fmt: skip
