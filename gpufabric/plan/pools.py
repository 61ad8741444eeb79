"""Address and ASN pools, checked for size before anything is taken from them."""

from __future__ import annotations

from ipaddress import IPv4Network

from gpufabric.intent.errors import Path, Problem


def block_for(hosts: int) -> int:
    """Smallest power-of-two block holding `hosts` addresses."""
    size = 1
    while size < hosts:
        size *= 2
    return size


def prefix_of(block: int) -> int:
    return 32 - (block.bit_length() - 1)


def need_addresses(net: IPv4Network | None, needed: int, path: Path, what: str) -> list[Problem]:
    if net is None or needed <= net.num_addresses:
        return []
    prefix = 32 - (block_for(needed).bit_length() - 1)
    return [
        Problem(path, f"{net} has {net.num_addresses} addresses; {what} need {needed}", f"use a /{prefix} or larger")
    ]


def need_asns(first: int, last: int, needed: int, path: Path) -> list[Problem]:
    size = last - first + 1
    if needed <= size:
        return []
    return [
        Problem(
            path,
            f"{first}-{last} holds {size} ASNs; the plane needs {needed} "
            "(one per leaf and border, one per spine group)",
            f"widen it to {first}-{first + needed - 1}",
        )
    ]
