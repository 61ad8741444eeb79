"""Front-panel port names per platform, including breakouts.

A logical port is (physical cage, lane) on a cage split `split` ways; each NOS
spells that differently, and the names must match what the device shows in LLDP.
"""

from __future__ import annotations

from gpufabric.platforms import platform

# The MLAG/vPC peer link takes the leaf's last cage, unsplit, so host and uplink numbering is unchanged.
MLAG_PEER_CAGES = 1


class PortMap:
    """Logical downlinks first, then uplinks on the next free cage; both may be split."""

    __slots__ = ("_cache", "_name", "down_split", "first_up_cage", "up_split")

    def __init__(self, platform_name: str, down_split: int, up_split: int, reserved_downlinks: int) -> None:
        self._name = platform(platform_name).port_name
        self.down_split = down_split
        self.up_split = up_split
        self.first_up_cage = -(-reserved_downlinks // down_split) + 1
        self._cache: dict[tuple[bool, int], tuple[str, int]] = {}

    def down(self, i: int) -> tuple[str, int]:
        """Name and cage of logical downlink i (0-based)."""
        key = (False, i)
        hit = self._cache.get(key)
        if hit is None:
            cage = i // self.down_split + 1
            hit = self._cache[key] = (self._name(cage, i % self.down_split, self.down_split), cage)
        return hit

    def whole(self, cage: int) -> str:
        """Name of an unsplit cage (the MLAG peer link)."""
        return self._name(cage, 0, 1)

    def up(self, j: int) -> tuple[str, int]:
        """Name and cage of logical uplink j (0-based)."""
        key = (True, j)
        hit = self._cache.get(key)
        if hit is None:
            cage = self.first_up_cage + j // self.up_split
            hit = self._cache[key] = (self._name(cage, j % self.up_split, self.up_split), cage)
        return hit


def cages_needed(downlinks: int, down_split: int, uplinks: int, up_split: int) -> int:
    return -(-downlinks // down_split) + -(-uplinks // up_split)
