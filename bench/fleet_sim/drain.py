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
| the unit removed after the undrain  | 1.0 | NVUE applying a revision no protocol reads (the unit is |
| (`nv unset`, applied)               |     | already disabled): as a confirm (latency.py) |
| ECMP widths back after the undrain  | 3.0 | the neighbours re-learn the paths (sub-second) and the |
|                                     |     | controller reads their widths back |

The switch answers what the real driver (gpufabric/nos/cumulus/driver.py) sends, as NVIDIA documents it:
the release (`/etc/lsb-release`, 5.14 unless a switch's entry names another), the unit's `nv set` and
`nv unset` only from 5.13, and `nv show maintenance` (NVUE command reference, "System" show commands) as
the table of its example: one row a unit, its state `maintenance` or `production`. From 5.13 the unit is
configuration (NVUE's object model holds `maintenance unit <name> mode`): `nv set` and `nv unset` change
the pending revision like any other key (cumulus.py), `nv config replace` replaces it with the file's (a
file without the unit drops it), and the mode in effect is the applied revision's, an absent unit being
in production as on a switch never drained. Before 5.13 the action is no configuration: a replace and an
apply leave it alone (assumed: NVIDIA documents the action, not how an apply treats it). The state follows
the mode applied; how far the traffic has gone is not in it (NVIDIA shows no such state), so it is this
simulator's own (`Maintenance.state`) and only its log tells it. Each change is logged for the
benchmark (and gpufabric.push.proof): `drain` (out of service from here), `drained`, `undrain`,
`undrained` (back in service).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.fleet_sim import latency
from bench.fleet_sim.shell import Result

NV_SET = "nv set maintenance"
DRAIN_APPLY = "drain apply"
DRAIN_SETTLE = "drain settle"
UNDRAIN_APPLY = "undrain apply"
UNDRAIN_SETTLE = "undrain settle"
TIDY_APPLY = "unit removed"

LATENCY: dict[str, float] = {
    NV_SET: 0.5,
    DRAIN_APPLY: 3.0,
    DRAIN_SETTLE: 5.0,
    UNDRAIN_APPLY: 3.0,
    UNDRAIN_SETTLE: 3.0,
    TIDY_APPLY: 1.0,
}

UNIT = "all-protocols"
UNITS = (UNIT, "all-interfaces")  # `nv show maintenance` lists both; the ports' unit is never put in maintenance
SINCE = (5, 13)  # the release that brought `nv set maintenance unit` and `nv show maintenance`
EXEC = latency.LATENCY[latency.EXEC]  # an SSH exec channel, per command


def drain_and_undrain(scale: float = 1.0) -> float:
    """The least a drained wave adds to a rollout by these figures: the drain and the undrain, each NVUE's
    confirm status asked (no change while a commit awaits confirmation), the pending revision detached, the
    unit's `nv set` and its apply, with an exec channel for each change and each read of the unit's state;
    the undrain then removes the unit (`nv unset` and its apply, in the same script). The push goes on once
    NVUE has applied the unit: it does not wait for the traffic to leave or to come back (DRAIN_SETTLE,
    UNDRAIN_SETTLE; nothing NVIDIA documents shows it), so those are in the log (and the proof), not in the
    bound."""
    nv = latency.LATENCY[latency.NV_STATUS] + latency.LATENCY[latency.NV_DETACH] + LATENCY[NV_SET]
    tidy = LATENCY[NV_SET] + LATENCY[TIDY_APPLY]
    return scale * (2 * nv + 4 * EXEC + LATENCY[DRAIN_APPLY] + LATENCY[UNDRAIN_APPLY] + tidy)


def has_units(release: str) -> bool:
    """Whether `release` ("5.14.0") has NVUE's maintenance units (5.13 on)."""
    parts = [int(p) if p.isdigit() else 0 for p in release.split(".")[:2]]
    return tuple(parts + [0] * (2 - len(parts))) >= SINCE


def show_table(states: dict[str, str]) -> str:
    """`nv show maintenance` as NVIDIA's example prints it: a title, then a row a unit and its state."""
    rows = [f"{'Unit':<37}State", f"{'-' * 23:<37}{'-' * 15}"]
    rows += [f"{unit:<37}{state}" for unit, state in states.items()]
    return "Maintenance Info\n" + "=" * 14 + "\n" + "".join(f"{r}\n" for r in rows)


def unit_mode(tree: dict[str, Any]) -> str:
    """The all-protocols unit's mode in a configuration tree; a tree without the unit is in production."""
    unit = ((tree.get("maintenance") or {}).get("unit") or {}).get(UNIT) or {}
    return "enabled" if unit.get("mode") == "enabled" else "disabled"


def with_unit(tree: dict[str, Any], mode: str | None) -> dict[str, Any]:
    """`tree` with the unit's mode set (None: the unit removed, and the containers it leaves empty). Only the
    path to the unit is copied: the rest of the switch's tree is shared, never changed in place."""
    maintenance = dict(tree.get("maintenance") or {})
    units = dict(maintenance.get("unit") or {})
    if mode is None:
        units.pop(UNIT, None)
    else:
        units[UNIT] = {**(units.get(UNIT) or {}), "mode": mode}
    new = {k: v for k, v in tree.items() if k != "maintenance"}
    if units:
        maintenance["unit"] = units
    else:
        maintenance.pop("unit", None)
    if maintenance:
        new["maintenance"] = maintenance
    return new


def unit_command(args: list[str]) -> str | None:
    """The mode an `nv set|unset maintenance unit ...` command asks for: "enabled" or "disabled", "" for the
    unset, None for anything else (not simulated)."""
    words = " ".join(args)
    if words in (f"set maintenance unit {UNIT} mode enabled", f"set maintenance unit {UNIT} mode disabled"):
        return args[-1]
    if words == f"unset maintenance unit {UNIT}":
        return ""
    return None


@dataclass
class Maintenance:
    """One switch's maintenance: the mode in effect (the applied revision's unit from 5.13, the action's
    before) and how far the traffic has gone."""

    name: str
    log: Callable[[float, str, str], None]  # (loop time, switch, event)
    scale: float = 1.0
    mode: str = "disabled"  # in effect
    state: str = "production"  # production | draining | maintenance | returning

    async def pause(self, step: str) -> None:
        delay = LATENCY[step] * self.scale
        if delay > 0:
            await asyncio.sleep(delay)

    async def command(self, args: list[str], release: str) -> Result | None:
        """The `nv ...` words this switch's maintenance answers itself on `release` (None: not one of them; the
        unit's `nv set`/`nv unset` are configuration, which the switch's revisions hold)."""
        words = " ".join(args)
        if args[1:2] == ["maintenance"] and args[0] in ("set", "unset", "show") and not has_units(release):
            return Result(1, "", f"Error: nv {words}: no maintenance units before Cumulus Linux 5.13 ({release})\n")
        if words in ("action enable system maintenance mode", "action disable system maintenance mode"):
            await self.apply("enabled" if args[1] == "enable" else "disabled")
            return Result(0, "Action succeeded\n")
        if words == "show maintenance":
            mine = "maintenance" if self.mode == "enabled" else "production"
            return Result(0, show_table({unit: mine if unit == UNIT else "production" for unit in UNITS}))
        return None

    async def follow(self, mode: str, *, unit_only: bool) -> None:
        """An applied revision holds the unit in `mode`. A revision that changed only the unit costs the unit's
        own apply (the drain's, the undrain's, or the removal's when the mode stays); a full one has paid
        NVUE's apply already, and a change of mode in it is logged at once."""
        if mode != self.mode:
            await self.apply(mode) if unit_only else self.now(mode)
        elif unit_only:
            await self.pause(TIDY_APPLY)

    async def apply(self, mode: str) -> None:
        if mode == self.mode:
            return
        await self.pause(DRAIN_APPLY if mode == "enabled" else UNDRAIN_APPLY)
        self.now(mode)

    def now(self, mode: str) -> None:
        """The mode takes effect now (an apply's end, or a revert by NVUE's confirm timer)."""
        if mode == self.mode:
            return
        loop = asyncio.get_running_loop()
        if mode == "enabled":
            self.mode, self.state = mode, "draining"
            self.log(loop.time(), self.name, "drain")
            loop.call_later(LATENCY[DRAIN_SETTLE] * self.scale, self._settled, "maintenance", "drained")
        else:
            self.mode, self.state = mode, "returning"
            self.log(loop.time(), self.name, "undrain")
            loop.call_later(LATENCY[UNDRAIN_SETTLE] * self.scale, self._settled, "production", "undrained")

    def _settled(self, state: str, event: str) -> None:
        expected = "draining" if state == "maintenance" else "returning"
        if self.state == expected:
            self.state = state
            self.log(asyncio.get_running_loop().time(), self.name, event)
