"""Prometheus's configuration for N exporter shards, from the plan: one scrape target per shard
(`gpufabric telemetry serve --shard I/N`), each labelled with its shard, listed in a file_sd file of
its own, and a manifest of the switches and servers each shard reads.

Every shard reads its share of the fabric at every scrape, so the scrape timeout is the interval:
a shard whose cycle does not fit the interval shows as a failed scrape (`up == 0`), not as old data.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from gpufabric.errors import GpufabricError
from gpufabric.outputs import json_dumps
from gpufabric.plan.model import Plan
from gpufabric.telemetry.shards import check_count, split

JOB = "gpufabric"
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?")


class ListenError(ValueError, GpufabricError):
    """--listen-base not HOST:PORT, or the shards' ports past 65535."""


@dataclass(frozen=True)
class Listen:
    host: str
    port: int  # shard I listens on port + I

    def address(self, shard: int) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port + shard}"


def parse_listen(text: str, count: int) -> Listen:
    host, _, port = text.rpartition(":")
    host = host.strip("[]")
    if not port.isdigit() or not host:
        raise ListenError(f"write HOST:PORT (127.0.0.1:9108), not {text!r}")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if _HOST.fullmatch(host) is None:
            raise ListenError(f"{host!r} is neither an IP address nor a host name") from None
    first = int(port)
    if first < 1 or first + count - 1 > 65535:
        raise ListenError(f"ports {first} to {first + count - 1} for {count} shards: ports end at 65535")
    return Listen(host, first)


def owners(plan: Plan, count: int, plane: str | None = None) -> list[dict[str, list[str]]]:
    """Per shard, the switches and the servers it reads (the same split `serve --shard` makes)."""
    switches = [d.name for d in plan.devices() if plane is None or d.plane == plane]
    servers = [s.name for s in plan.servers if any(plane is None or n.plane == plane for n in s.nics)]
    return [
        {"switches": sw, "servers": sv} for sw, sv in zip(split(switches, count), split(servers, count), strict=True)
    ]


def file_sd(listen: Listen, shard: int, count: int, fabric: str) -> list[dict[str, object]]:
    """One shard's file_sd entry: its exporter and the labels its series get."""
    labels = {"fabric": fabric, "shard": str(shard), "shards": str(count)}
    return [{"targets": [listen.address(shard)], "labels": labels}]


def prometheus_config(
    fabric: str, count: int, listen: Listen, *, interval: str, rules: str, sd_dir: str
) -> dict[str, object]:
    """prometheus.yml: one job; its targets are the shards' file_sd files (sd_dir/shard-I.json)."""
    check_count(count)
    files = [f"{sd_dir.rstrip('/')}/shard-{i}.json" for i in range(count)]
    return {
        "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
        "rule_files": [rules],
        "scrape_configs": [
            {
                "job_name": JOB,
                "scrape_interval": interval,
                "scrape_timeout": interval,
                "honor_labels": True,  # the exporter's plane/device labels are the fabric's, kept as served
                "file_sd_configs": [{"files": files, "refresh_interval": "1m"}],
            }
        ],
    }


def render(
    plan: Plan, count: int, listen: Listen, *, interval: str = "30s", rules: str = "gpufabric.rules.yml",
    sd_dir: str = "targets", plane: str | None = None,
) -> dict[str, str]:  # fmt: skip
    """Every file, by its path relative to the output folder: prometheus.yml, targets/shard-I.json,
    shards.json (who reads what)."""
    fabric = plan.intent.fabric.name
    out = {"prometheus.yml": json_dumps(prometheus_config(fabric, count, listen, interval=interval, rules=rules,
                                                         sd_dir=sd_dir), indent=2) + "\n"}  # fmt: skip
    for i in range(count):
        out[f"targets/shard-{i}.json"] = json_dumps(file_sd(listen, i, count, fabric), indent=2) + "\n"
    manifest = {
        "fabric": fabric, "shards": count, "hash": "md5 of the device name, last 8 bytes, modulo shards (hashmod)",
        "members": [{"shard": i, "listen": listen.address(i), **m} for i, m in enumerate(owners(plan, count, plane))],
    }  # fmt: skip
    out["shards.json"] = json_dumps(manifest, indent=2) + "\n"
    return out
