"""The storage plane's own part of the intent: what its clients mount and what they demand of it.

A storage plane is a routed plane like the others (`DataPlane`); this adds what only storage has:
- `demand`: the data-loading rate per GPU and the checkpoint (its size, and the time it must be written
  in). The planner sizes the plane's leaf uplinks to carry both and refuses, with the numbers, a plane
  that cannot (gpufabric/plan/storage.py, docs/storage.md).
- `file_systems`: the NFS-over-RDMA, Lustre or BeeGFS file systems the GPU servers mount over the plane,
  with their data servers and metadata servers named apart (server groups), so the client files
  (`gpufabric export storage`) point each class at its own servers and the checkpoint's write rate
  counts only the ports of the servers that hold data.

Sizes, rates and durations are written as storage people write them (`40TB`, `2GB/s`, `90s`) and kept as
one canonical number (bytes, Gb/s, seconds), so the planner never parses text.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, WithJsonSchema, model_validator

from gpufabric.intent.types import NAME_PATTERN, _pattern

# Decimal units, as disk and network vendors count them (a TB is 10^12 bytes); the binary ones are
# accepted where written so (TiB), since checkpoint sizes are often read from `du -h --si` or `ls -lh`.
_SIZE_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
    "PiB": 2**50,
}
_SIZE = re.compile(r"^\s*(\d{1,15}(?:\.\d{1,6})?)\s*([KMGTP]?i?B)\s*$")
# A rate says what it counts: `GB/s` bytes, `Gb/s` bits (the unit of the intent's port speeds).
_RATE = re.compile(r"^\s*(\d{1,15}(?:\.\d{1,6})?)\s*([KMGT])([Bb])/s\s*$")
_RATE_GBPS = {"K": 1e-6, "M": 1e-3, "G": 1.0, "T": 1e3}
_DURATION = re.compile(r"^\s*(\d{1,15}(?:\.\d{1,6})?)\s*(s|min|h)\s*$")
_DURATION_S = {"s": 1, "min": 60, "h": 3600}
MAX_SIZE = 10**18  # an exabyte: far past any checkpoint, small enough that no arithmetic overflows a float


def _parse_size(value: Any) -> Any:
    """A size in bytes, written like 40TB or 512GiB (a bare number is bytes)."""
    if isinstance(value, bool | float):
        raise ValueError("a size is written like 40TB or 512GiB")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        m = _SIZE.match(value)
        if m and m.group(2) in _SIZE_UNITS:
            size = float(m.group(1)) * _SIZE_UNITS[m.group(2)]
            if size >= 1:
                return int(size)
        raise ValueError(f"'{value}' is not a size; write it like 40TB (decimal) or 36TiB (binary)")
    raise ValueError("a size is written like 40TB or 512GiB")


def _parse_rate(value: Any) -> Any:
    """A rate in Gb/s, written with its unit: `2GB/s` (bytes, as storage is measured) or `16Gb/s` (bits)."""
    if isinstance(value, str):
        m = _RATE.match(value)
        if m:
            gbps = float(m.group(1)) * _RATE_GBPS[m.group(2)] * (8 if m.group(3) == "B" else 1)
            if gbps > 0:
                return gbps
        raise ValueError(f"'{value}' is not a rate; write it like 2GB/s (bytes per second) or 16Gb/s (bits)")
    raise ValueError("a rate is written with its unit, like 2GB/s (bytes per second) or 16Gb/s (bits)")


def _parse_duration(value: Any) -> Any:
    """A duration in seconds, written like 60s, 5min or 1h (a bare whole number is seconds)."""
    if isinstance(value, bool | float):
        raise ValueError("a duration is written like 60s, 5min or 1h")
    if isinstance(value, int):
        if not 0 < value <= 10**9:  # float() of a 400-digit number would overflow; a week is the limit anyway
            raise ValueError(f"{value} s is not a duration a checkpoint can be asked in; write it like 60s")
        return float(value)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m and float(m.group(1)) > 0:
            return float(m.group(1)) * _DURATION_S[m.group(2)]
        raise ValueError(f"'{value}' is not a duration; write it like 60s, 5min or 1h")
    raise ValueError("a duration is written like 60s, 5min or 1h")


def bytes_text(size: float) -> str:
    """A byte count as people say it: 40 TB, 1.5 PB (decimal units)."""
    for unit, scale in (("PB", 10**15), ("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.0f} B"


def gbps_text(gbps: float) -> str:
    """A rate in bits: 3.2 Tb/s, 400 Gb/s."""
    if gbps >= 1e6:
        return f"{gbps / 1e6:.3g} Pb/s"
    return f"{gbps / 1000:.3g} Tb/s" if gbps >= 1000 else f"{gbps:.3g} Gb/s"


def seconds_text(seconds: float) -> str:
    """A duration: 45.2 s, 3.5 min, 1.2 h."""
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    if seconds >= 120:
        return f"{seconds / 60:.3g} min"
    return f"{seconds:.3g} s"


# What an editor's schema says of them (`gpufabric schema`): as written (40TB, 2GB/s, 60s), by the patterns the
# validators match, where pydantic's own would say the number they become; the ranges are checked on load.
SIZE_JSON_SCHEMA: dict[str, Any] = {
    "anyOf": [{"type": "integer", "minimum": 1, "maximum": MAX_SIZE}, {"type": "string", "pattern": _SIZE.pattern}],
    "examples": ["40TB", "512GiB"],
}
RATE_JSON_SCHEMA: dict[str, Any] = {"type": "string", "pattern": _RATE.pattern, "examples": ["2GB/s", "16Gb/s"]}
DURATION_JSON_SCHEMA: dict[str, Any] = {
    "anyOf": [{"type": "integer", "minimum": 1, "maximum": 10**9}, {"type": "string", "pattern": _DURATION.pattern}],
    "examples": ["60s", "5min", "1h"],
}

DataSize = Annotated[
    int,
    BeforeValidator(_parse_size),
    Field(ge=1, le=MAX_SIZE),
    PlainSerializer(bytes_text, return_type=str),
    WithJsonSchema(SIZE_JSON_SCHEMA),
]
Rate = Annotated[
    float,
    BeforeValidator(_parse_rate),
    Field(gt=0, le=1_000_000),
    PlainSerializer(lambda v: f"{v:g}Gb/s", return_type=str),
    WithJsonSchema(RATE_JSON_SCHEMA),
]
Duration = Annotated[
    float,
    BeforeValidator(_parse_duration),
    Field(gt=0, le=7 * 86400),
    PlainSerializer(lambda v: f"{v:g}s", return_type=str),
    WithJsonSchema(DURATION_JSON_SCHEMA),
]
# A mount point or an export: an absolute path of plain characters (it reaches fstab, a systemd unit's
# name and a shell-free mount command line, none of which quote the same way).
ABSOLUTE_PATH = _pattern(
    r"^/([A-Za-z0-9._-]{1,64}(/[A-Za-z0-9._-]{1,64}){0,15})?$",
    "an absolute path of letters, digits, '.', '_' and '-' (e.g. /mnt/scratch), at most 16 parts of 64",
)
GroupName = Annotated[str, Field(pattern=NAME_PATTERN)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Checkpoint(_Strict):
    """A checkpoint every GPU server writes at once, and the time it must be written in."""

    size: DataSize = Field(
        description="Size of one whole checkpoint, all GPUs together, e.g. `40TB` (decimal) or `36TiB` (binary)."
    )
    within: Duration = Field(
        description="Time the checkpoint must be written in at the fabric's full rate, e.g. `60s`, `5min`, `1h`."
    )


class StorageDemand(_Strict):
    """What the GPU servers ask of the storage plane: the planner sizes its leaf uplinks to carry it."""

    read_per_gpu: Rate | None = Field(
        None,
        description="Data-loading rate every GPU reads at, at once, with its unit: `2GB/s` (bytes per second) or "
        "`16Gb/s` (bits). Omitted: no read demand.",
    )
    checkpoint: Checkpoint | None = Field(
        None, description="The checkpoint the GPU servers write together, and the time it must take at most."
    )


class FileSystem(_Strict):
    """A file system the GPU servers mount over the storage plane (`gpufabric export storage`).

    Its servers are server groups of the plan with NICs on the storage plane, named by class: `data` (NFS
    servers, Lustre OSSs, BeeGFS storage servers) and `metadata` (Lustre MGS/MDS, BeeGFS management and
    metadata servers). A group serves one class only."""

    name: str = Field(pattern=NAME_PATTERN, description="Name of the file system (Lustre's fsname with `lustre`).")
    type: Literal["nfs", "lustre", "beegfs"] = Field(
        description="`nfs`: NFS over RDMA (RFC 8267, port 20049); `lustre`: LNet over o2ib; `beegfs`: BeeGFS "
        "client over RDMA."
    )
    data: list[GroupName] = Field(
        min_length=1,
        description="Server groups that hold the data: NFS servers, Lustre object storage servers, BeeGFS storage "
        "servers. Their storage ports are the 'storage targets' a checkpoint is written to.",
    )
    metadata: list[GroupName] = Field(
        default_factory=list,
        description="Server groups that hold the metadata: the Lustre MGS/MDS (the clients' MGS NIDs), the BeeGFS "
        "management and metadata servers (`sysMgmtdHost` is the first). Required with `lustre` and `beegfs`; "
        "refused with `nfs`, whose servers serve both.",
    )
    mount: str = Field(pattern=ABSOLUTE_PATH, description="Mount point on every client, e.g. `/mnt/scratch`.")
    export: Annotated[str, Field(pattern=ABSOLUTE_PATH)] | None = Field(
        None,
        description="`nfs` only: the path the servers export (`server:/export`). Default: `/` (NFSv4's root).",
    )
    nconnect: Annotated[int, Field(ge=1, le=16)] | None = Field(
        None,
        description="`nfs` only: connections per server (the nfs(5) `nconnect` option; Linux caps it at 16). "
        "Default: 8.",
    )
    gds: bool = Field(
        True,
        description="GPUDirect Storage reads and writes on this file system: its clients get a cufile.json "
        "listing their storage NICs (`properties.rdma_dev_addr_list`).",
    )

    @model_validator(mode="after")
    def _classes(self) -> FileSystem:
        if self.type == "nfs" and self.metadata:
            raise ValueError("an NFS file system has no metadata servers apart: leave `metadata` out")
        if self.type != "nfs" and not self.metadata:
            raise ValueError(f"a {self.type} file system needs its metadata servers: name their group in `metadata`")
        both = sorted(set(self.data) & set(self.metadata))
        if both:
            raise ValueError(f"group {both[0]!r} is named as data and as metadata: a group serves one class")
        if self.type != "nfs" and (self.export is not None or self.nconnect is not None):
            raise ValueError("`export` and `nconnect` are NFS options: leave them out of a " + self.type)
        return self
