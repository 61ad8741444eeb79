"""Which exporter shard reads which switch (or server): the hash Prometheus's `hashmod` relabelling
uses, over the device name, so a shard's share is the same in gpufabric and in a Prometheus
configuration that shards with `action: hashmod` on a `device` label.

Prometheus (relabel.go): the MD5 of the label value, its last 8 bytes read as a big-endian unsigned
64-bit integer, modulo N. Shards are numbered from 0, as hashmod's results are. MD5 here is a
spreading function, not a security one. Python's own hash() is randomized per process (PYTHONHASHSEED)
and would give every exporter a different split: it is never used.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gpufabric.errors import GpufabricError

MAX_SHARDS = 1024
# A shard answers a scrape within its budget, below `telemetry prometheus`'s 30 s scrape timeout, and
# gives each switch (or server) a deadline inside it (gpufabric.telemetry.exporter).
SCRAPE_BUDGET = 25.0
SWITCH_DEADLINE = 10.0
_SPEC = re.compile(r"(\d{1,4})/(\d{1,4})")


class ShardError(ValueError, GpufabricError):
    """A shard written wrongly: not I/N, N out of range, or I not below N."""


@dataclass(frozen=True)
class Shard:
    index: int  # 0 .. count-1
    count: int

    def owns(self, name: str) -> bool:
        return shard_of(name, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(name: str, count: int) -> int:
    """The shard (0-based) that reads `name` among `count` shards: Prometheus's hashmod of the name."""
    if count < 1:
        raise ShardError(f"a shard count is at least 1, not {count}")
    digest = hashlib.md5(name.encode(), usedforsecurity=False).digest()
    return int.from_bytes(digest[8:], "big") % count


def check_count(count: int) -> int:
    if not 1 <= count <= MAX_SHARDS:
        raise ShardError(f"the number of shards is 1 to {MAX_SHARDS}, not {count}")
    return count


def parse_shard(text: str) -> Shard:
    """`I/N`: shard I (counted from 0) of N."""
    found = _SPEC.fullmatch(text.strip())
    if found is None:
        raise ShardError(f"write the shard as I/N with I counted from 0 (0/3, 1/3, 2/3), not {text!r}")
    index, count = int(found[1]), check_count(int(found[2]))
    if index >= count:
        raise ShardError(f"shard {index} of {count} does not exist: shards are 0 to {count - 1}")
    return Shard(index, count)


def split(names: Iterable[str], count: int) -> list[list[str]]:
    """Every name in exactly one shard, each shard's names sorted."""
    check_count(count)
    out: list[list[str]] = [[] for _ in range(count)]
    for name in sorted(set(names)):
        out[shard_of(name, count)].append(name)
    return out
