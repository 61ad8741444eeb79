"""Drain and undrain on a simulated switch: taking it out of service before a change, and back after.

The commands are those NVIDIA documents for Cumulus Linux ("Maintenance Mode", Cumulus Linux 5.14
user guide, docs.nvidia.com/networking-ethernet-software/cumulus-linux-514/System-Configuration/
Maintenance-Mode/; "System Maintenance", the NVUE command reference): from 5.13 `nv set maintenance
unit all-protocols mode enabled|disabled` then `nv config apply`, before it `nv action
enable|disable system maintenance mode`. With all protocols in maintenance, the protocols that
support it (BGP) perform a graceful shutdown with every neighbour, which then move their traffic to
other paths. No vendor publishes how
long that takes, so every figure below is an assumption (before `--latency-scale`):

| step                                | s   | basis (assumptions) |
|-------------------------------------|-----|---------------------|
| `nv set maintenance ...` (pending)  | 0.5 | a call of the `nv` client, as `nv config detach` (latency.py) |
| the drain applied (`nv config       | 3.0 | NVUE applying one BGP change (graceful shutdown on every |
| apply`, or the `nv action`)         |     | session): less than a full replace (8 s) |
| the traffic gone after the drain    | 5.0 | eBGP updates with no advertisement interval (FRR's datacenter |
|                                     |     | defaults) reach the neighbours in well under a second; a |
|                                     |     | controller reads port rates twice, seconds apart, to see them fall |
| the undrain applied                 | 3.0 | as the drain |
| ECMP widths back after the undrain  | 3.0 | the neighbours re-learn the paths (sub-second) and the |
|                                     |     | controller reads their widths back |

The switch answers what the real driver (gpufabric/nos/cumulus/driver.py) sends, as NVIDIA documents it:
the release (`/etc/lsb-release`, 5.14 unless a switch's entry names another), the unit's `nv set` only
from 5.13, and `nv show maintenance` (NVUE command reference, "System" show commands) as the table of
its example: one row a unit, its state `maintenance` or `production`. That state follows the mode
applied; how far the traffic has gone is not in it (NVIDIA shows no such state), so it is this
simulator's own (`Maintenance.state`) and only its log tells it. Each change is logged for the
benchmark (and gpufabric.push.proof): `drain` (out of service from here), `drained`, `undrain`,
`undrained` (back in service).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from bench.fleet_sim import latency
from bench.fleet_sim.shell import Result

NV_SET = "nv set maintenance"
DRAIN_APPLY = "drain apply"
DRAIN_SETTLE = "drain settle"
UNDRAIN_APPLY = "undrain apply"
UNDRAIN_SETTLE = "undrain settle"

LATENCY: dict[str, float] = {
    NV_SET: 0.5,
    DRAIN_APPLY: 3.0,
    DRAIN_SETTLE: 5.0,
    UNDRAIN_APPLY: 3.0,
    UNDRAIN_SETTLE: 3.0,
}

UNIT = "all-protocols"
UNITS = (UNIT, "all-interfaces")  # `nv show maintenance` lists both; the ports' unit is never put in maintenance
SINCE = (5, 13)  # the release that brought `nv set maintenance unit` and `nv show maintenance`
EXEC = latency.LATENCY[latency.EXEC]  # an SSH exec channel, per command


def drain_and_undrain(scale: float = 1.0) -> float:
    """The least a drained wave adds to a rollout by these figures: the drain and the undrain, each NVUE's
    confirm status asked (no change while a commit awaits confirmation), the pending revision detached, the
    unit's `nv set` and its apply, with an exec channel for each change and each read of the unit's state.
    The push goes on once NVUE has applied the unit: it does not wait for the traffic to leave or to come
    back (DRAIN_SETTLE, UNDRAIN_SETTLE; nothing NVIDIA documents shows it), so those are in the log (and
    the proof), not in the bound."""
    nv = latency.LATENCY[latency.NV_STATUS] + latency.LATENCY[latency.NV_DETACH] + LATENCY[NV_SET]
    return scale * (2 * nv + 4 * EXEC + LATENCY[DRAIN_APPLY] + LATENCY[UNDRAIN_APPLY])


def has_units(release: str) -> bool:
    """Whether `release` ("5.14.0") has NVUE's maintenance units (5.13 on)."""
    parts = [int(p) if p.isdigit() else 0 for p in release.split(".")[:2]]
    return tuple(parts + [0] * (2 - len(parts))) >= SINCE


def show_table(states: dict[str, str]) -> str:
    """`nv show maintenance` as NVIDIA's example prints it: a title, then a row a unit and its state."""
    rows = [f"{'Unit':<37}State", f"{'-' * 23:<37}{'-' * 15}"]
    rows += [f"{unit:<37}{state}" for unit, state in states.items()]
    return "Maintenance Info\n" + "=" * 14 + "\n" + "".join(f"{r}\n" for r in rows)


@dataclass
class Maintenance:
    """One switch's maintenance unit: the mode asked for (pending until applied) and its state."""

    name: str
    log: Callable[[float, str, str], None]  # (loop time, switch, event)
    scale: float = 1.0
    mode: str = "disabled"  # applied
    wanted: str | None = None  # `nv set` not yet applied
    state: str = "production"  # production | draining | maintenance | returning

    @property
    def pending(self) -> bool:
        return self.wanted is not None and self.wanted != self.mode

    async def _pause(self, step: str) -> None:
        delay = LATENCY[step] * self.scale
        if delay > 0:
            await asyncio.sleep(delay)

    async def command(self, args: list[str], release: str) -> Result | None:
        """`nv ...` words this unit answers on a switch running `release` (None: not a maintenance command)."""
        words = " ".join(args)
        if args[1:2] == ["maintenance"] and args[0] in ("set", "unset", "show") and not has_units(release):
            return Result(1, "", f"Error: nv {words}: no maintenance units before Cumulus Linux 5.13 ({release})\n")
        if words in (f"set maintenance unit {UNIT} mode enabled", f"set maintenance unit {UNIT} mode disabled"):
            await self._pause(NV_SET)
            self.wanted = args[-1]
            return Result()
        if words == f"unset maintenance unit {UNIT}":
            await self._pause(NV_SET)
            self.wanted = "disabled"
            return Result()
        if words in ("action enable system maintenance mode", "action disable system maintenance mode"):
            await self.apply("enabled" if args[1] == "enable" else "disabled")
            return Result(0, "Action succeeded\n")
        if words == "show maintenance":
            mine = "maintenance" if self.mode == "enabled" else "production"
            return Result(0, show_table({unit: mine if unit == UNIT else "production" for unit in UNITS}))
        return None

    async def apply_pending(self) -> None:
        """`nv config apply` with the maintenance change pending (and no other revision)."""
        wanted, self.wanted = self.wanted, None
        if wanted is not None:
            await self.apply(wanted)

    async def apply(self, mode: str) -> None:
        if mode == self.mode:
            return
        loop = asyncio.get_running_loop()
        if mode == "enabled":
            await self._pause(DRAIN_APPLY)
            self.mode, self.state = mode, "draining"
            self.log(loop.time(), self.name, "drain")
            loop.call_later(LATENCY[DRAIN_SETTLE] * self.scale, self._settled, "maintenance", "drained")
        else:
            await self._pause(UNDRAIN_APPLY)
            self.mode, self.state = mode, "returning"
            self.log(loop.time(), self.name, "undrain")
            loop.call_later(LATENCY[UNDRAIN_SETTLE] * self.scale, self._settled, "production", "undrained")

    def _settled(self, state: str, event: str) -> None:
        expected = "draining" if state == "maintenance" else "returning"
        if self.state == expected:
            self.state = state
            self.log(asyncio.get_running_loop().time(), self.name, event)
