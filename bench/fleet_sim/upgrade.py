"""A simulated Cumulus Linux switch's image slots and reboots, for `nornir restart` and `nornir upgrade`
against the fleet simulator (bench/upgrade_scale.py, tests/simulators/test_upgrade_sim.py).

Each switch has two partitions (NVIDIA's optimized image upgrade), a running one and the one it boots next,
the images fetched onto it, and a boot time. `nv action fetch system image URL` stores the file (its
content, and so its SHA-512, follows from its name: `image_bytes`); `nv action install system image files
NAME` writes it into the partition not running; `nv action boot-next system image other` picks that
partition; `nv action reboot system mode M` takes the switch down: no login is accepted until it has booted
the next partition. A switch planted to hang on a release stays down until its watchdog resets it, and then
boots the other partition (the previous release): the fallback the rollout must notice. The switch's
/proc/uptime and /etc/lsb-release follow its boots.

No vendor publishes how long these take on a switch; the figures below are assumptions, each with its
basis, multiplied by the run's `--latency-scale` like every other latency of the simulator.

| step                                   | s     | basis (assumed unless said) |
|----------------------------------------|-------|-----------------------------|
| `nv action fetch system image`         | 15    | a ~1.5 GB image over a 1 Gb/s management port, with TCP overhead |
| `sha512sum` of the image               | 5     | SHA-512 at ~300 MB/s on a switch's x86 control-plane CPU |
| `nv action install system image files` | 240   | writing and checking a partition on the switch's SSD |
| reboot, cold                           | 180   | control plane boot, switchd programs the ASIC, ports and BGP up |
| reboot, fast                           | 120   | the ASIC's warm-up shortened (NVIDIA documents it; no figure) |
| reboot, warm                           | 90    | the control plane alone reboots; the data plane forwards meanwhile |
| watchdog reset of a hung boot          | 600   | a hardware watchdog's period plus a cold boot |
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import posixpath
import re
from dataclasses import dataclass, field

from bench.fleet_sim.shell import Result

IMAGE_DIR = "/var/lib/cumulus/images"  # gpufabric.nos.cumulus.upgrade.IMAGE_DIR
FETCH, SHA512, INSTALL, WATCHDOG = "fetch", "sha512", "install", "watchdog"
SECONDS: dict[str, float] = {
    FETCH: 15.0,
    SHA512: 5.0,
    INSTALL: 240.0,
    "cold": 180.0,
    "fast": 120.0,
    "warm": 90.0,
    WATCHDOG: 600.0,
}
_RELEASE = re.compile(r"cumulus-linux-([0-9]+\.[0-9]+\.[0-9]+)")


def image_bytes(name: str) -> bytes:
    """What a simulated image file holds: its name, so that its SHA-512 is known before it is fetched."""
    return f"simulated Cumulus Linux image {name}\n".encode()


def image_sha512(name: str) -> str:
    return hashlib.sha512(image_bytes(name)).hexdigest()


def release_of(name: str) -> str | None:
    """The release an image file holds, from NVIDIA's naming (`cumulus-linux-5.14.0-mlx-amd64.bin`)."""
    found = _RELEASE.search(name)
    return found.group(1) if found else None


def wave_bound(mode: str, scale: float, settle: float) -> float:
    """The least one wave of an upgrade can take by these figures: fetch, checksum, install, reboot, the
    settle of the checks. Every wave takes at least this, however many switches it holds."""
    return (SECONDS[FETCH] + SECONDS[SHA512] + SECONDS[INSTALL] + SECONDS[mode]) * scale + settle


def reboot_bound(mode: str, scale: float, settle: float) -> float:
    """The least one wave of a restart can take: the reboot and the settle."""
    return SECONDS[mode] * scale + settle


@dataclass
class Lifecycle:
    """One switch's partitions, images and boots. `hang_on`: releases it hangs booting (a planted fault);
    `corrupt`: the images it fetches come out damaged (another checksum)."""

    name: str
    release: str = "5.9.2"
    scale: float = 1.0
    hang_on: frozenset[str] = frozenset()
    corrupt: bool = False
    partitions: dict[int, str] = field(default_factory=dict)  # partition -> release installed
    current: int = 1
    next: int = 1
    images: dict[str, str] = field(default_factory=dict)  # path -> SHA-512
    booted_at: float = 0.0  # loop time of the last boot
    up_at: float = 0.0  # loop time from which it accepts logins again
    boots: list[tuple[float, str, str]] = field(default_factory=list)  # (loop time, release, event)

    def __post_init__(self) -> None:
        self.partitions = self.partitions or {1: self.release, 2: self.release}

    @property
    def running(self) -> str:
        return self.partitions[self.current]

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def is_up(self) -> bool:
        return self.now() >= self.up_at

    async def pause(self, step: str) -> None:
        delay = SECONDS[step] * self.scale
        if delay > 0:
            await asyncio.sleep(delay)

    # -- files the switch shows ---------------------------------------------------------------
    def read(self, path: str) -> str | None:
        if path == "/proc/uptime":
            return f"{max(0.0, self.now() - self.booted_at):.2f} 0.00\n"
        if path == "/etc/lsb-release":
            return f'DISTRIB_ID="Cumulus Linux"\nDISTRIB_RELEASE={self.running}\n'
        return None

    # -- commands -------------------------------------------------------------------------------
    async def run(self, argv: list[str]) -> Result | None:
        """The command's result when it is one of these steps, else None (the switch's other commands)."""
        if argv[:1] == ["sha512sum"] and len(argv) == 2:
            digest = self.images.get(posixpath.normpath(argv[1]))
            if digest is None:
                return Result(1, "", f"sha512sum: {argv[1]}: No such file or directory\n")
            await self.pause(SHA512)
            return Result(0, f"{digest}  {argv[1]}\n")
        if argv[:3] != ["nv", "action", "fetch"] and argv[:2] != ["nv", "action"] and argv[:4] != [
            "nv", "show", "system", "image"
        ]:  # fmt: skip
            return None
        words = argv[1:]
        if words == ["show", "system", "image", "-o", "json"]:
            shown = {"current": str(self.current), "next": str(self.next)}
            for part, rel in self.partitions.items():
                shown[f"partition{part}"] = {"build-id": f"cumulus-linux-{rel}"}  # type: ignore[assignment]
            return Result(0, json.dumps(shown) + "\n")
        if words[:4] == ["action", "fetch", "system", "image"] and len(words) == 5:
            name = words[4].rstrip("/").rsplit("/", 1)[-1]
            await self.pause(FETCH)
            data = image_bytes(name) + (b"damaged" if self.corrupt else b"")
            self.images[f"{IMAGE_DIR}/{name}"] = hashlib.sha512(data).hexdigest()
            return Result(0, f"Fetched {name}\n")
        if words[:5] == ["action", "install", "system", "image", "files"] and len(words) == 6:
            path = f"{IMAGE_DIR}/{words[5]}"
            installed = release_of(words[5])
            if path not in self.images or installed is None:
                return Result(1, "", f"Error: no image file {words[5]}\n")
            await self.pause(INSTALL)
            other = 2 if self.current == 1 else 1
            self.partitions[other] = installed
            return Result(0, f"Installed {words[5]} into partition {other}\n")
        if words == ["action", "boot-next", "system", "image", "other"]:
            self.next = 2 if self.current == 1 else 1
            return Result(0, f"Next boot: partition {self.next}\n")
        if words[:3] == ["action", "reboot", "system"]:
            mode = words[4] if words[3:4] == ["mode"] and len(words) == 5 else "cold"
            if mode not in ("cold", "fast", "warm"):
                return Result(1, "", f"Error: no reboot mode {mode}\n")
            self.reboot(mode)
            return Result(0, "Rebooting\n")
        return Result(1, "", f"Error: nv {' '.join(words)}: not simulated\n")

    def reboot(self, mode: str) -> None:
        """Down from now; up again on the next partition after the mode's boot time, or, when that release
        hangs, on the other partition after the watchdog's reset."""
        now = self.now()
        target = self.next
        rel = self.partitions[target]
        if rel in self.hang_on:
            fallback = 2 if target == 1 else 1
            self.current = self.next = fallback
            self.boots.append((now, rel, "hang"))
            boot = SECONDS[WATCHDOG] * self.scale
            self.boots.append((now + boot, self.partitions[fallback], "watchdog boot"))
        else:
            self.current = target
            boot = SECONDS[mode] * self.scale
            self.boots.append((now + boot, rel, f"{mode} boot"))
        self.up_at = now + boot
        self.booted_at = now + boot
