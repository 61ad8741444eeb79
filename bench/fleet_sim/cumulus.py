"""One simulated Cumulus Linux 5.x switch: NVUE's applied and pending revisions, its confirm timer,
the login's home folder, and the reads (vtysh, iproute2) a push's checks make.

NVUE's behaviour as NVIDIA documents it for 5.x: `nv config replace FILE` makes the pending revision
the file's configuration; `nv config diff` shows how the pending revision differs from the applied one
(nothing when equal); `nv config apply --confirm Ns` applies it and rolls it back unless
`--confirm-yes` comes within N seconds (`--confirm-no` rolls it back at once); `nv config detach`
drops the pending revision; from 5.13 `nv set|unset maintenance unit all-protocols ...` changes the
pending revision (started from the applied one when there is none), as any configuration key. Time is
asyncio's loop clock, so a timer fires whether or not anyone asks; every change of state is logged
(commit, confirm, revert, abort) for the benchmark to read.
"""

from __future__ import annotations

import asyncio
import base64
import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from bench.fleet_sim import drain as dr
from bench.fleet_sim import latency as lat
from bench.fleet_sim.drain import Maintenance, has_units, unit_command, unit_mode, with_unit
from bench.fleet_sim.shell import Result
from bench.fleet_sim.upgrade import Lifecycle
from gpufabric.nos.cumulus.nvue import set_tree as _nvue_set_tree

HOME = "/home/cumulus"
STARTUP = "/etc/nvue.d/startup.yaml"
LSB_RELEASE = "/etc/lsb-release"
RELEASE = "5.14.0"  # what a switch runs unless its entry names a release (bench/fleet_sim/upgrade.py)


def lsb_release(release: str) -> str:
    """/etc/lsb-release as Cumulus Linux writes it (the release the drivers read)."""
    return f'DISTRIB_ID="Cumulus Linux"\nDISTRIB_RELEASE={release}\nDISTRIB_DESCRIPTION="Cumulus Linux {release}"\n'


def factory_config(username: str) -> str:
    """What a switch holds before its first push: the login account and nothing else planned."""
    return yaml.safe_dump([{"header": {"model": "SN5600", "version": "5.9"}},
                           {"set": {"system": {"aaa": {"user": {username: {"role": "system-admin"}}}}}}])  # fmt: skip


def revision_text(tree: dict[str, Any]) -> str:
    """A revision made by `nv set`/`nv unset` as `nv config show -o yaml` prints it (written when first read)."""
    return yaml.safe_dump([{"set": tree}], sort_keys=False)


def set_tree(text: str) -> dict[str, Any]:
    """The configuration an NVUE document list sets (its `set` trees merged in order), read as the
    controller reads it: the simulator parses every candidate the fleet is sent, on the controller's cores
    (on real switches, on theirs), so it takes the same fast reader (PyYAML for what that leaves aside)."""
    return _nvue_set_tree(text)


def diff_commands(old: dict[str, Any], new: dict[str, Any], path: tuple[str, ...] = ()) -> list[str]:
    """`nv config diff -o commands`: the `nv set` / `nv unset` lines taking `old` to `new`."""
    lines: list[str] = []
    for key in sorted(set(old) | set(new), key=str):
        here = (*path, str(key))
        if key not in new:
            lines.append("nv unset " + " ".join(here))
        elif isinstance(new[key], dict) and isinstance(old.get(key), dict):
            lines += diff_commands(old[key], new[key], here)
        elif key not in old or old[key] != new[key]:
            value = new[key]
            if isinstance(value, dict):
                lines += diff_commands({}, value, here) or ["nv set " + " ".join(here)]
            else:
                lines.append("nv set " + " ".join(here) + f" {value}")
    return lines


@dataclass
class Event:
    time: float  # the loop clock (seconds)
    switch: str
    event: str  # commit (a timer armed), confirm, revert (the timer fired), abort (--confirm-no), apply;
    # drain, drained, undrain, undrained (drain.py)


@dataclass
class CumulusSwitch:
    name: str
    username: str
    password: str
    log: Callable[[Event], None]
    scale: float = 1.0
    applied: str = ""  # "" after a revision made by `nv set`: written from the tree when read (applied_text)
    applied_tree: dict[str, Any] = field(default_factory=dict)
    pending: str | None = None  # None: no pending revision; "": one made by `nv set`, not written out
    pending_tree: dict[str, Any] = field(default_factory=dict)  # the pending revision, parsed once at replace
    pending_unit_only: bool = False  # the pending revision is the applied one with only the maintenance unit changed
    previous: tuple[str, dict[str, Any]] | None = None  # what a revert returns to
    timer: asyncio.TimerHandle | None = None
    deadline: float = 0.0
    files: dict[str, str] = field(default_factory=dict)
    lifecycle: Lifecycle | None = None  # its image slots and reboots (bench/fleet_sim/upgrade.py), when simulated
    maintenance: Maintenance | None = None  # drain and undrain (drain.py)
    release: str = RELEASE  # the release it runs (its lifecycle's, when one is simulated)

    def __post_init__(self) -> None:
        if not self.applied:
            self.applied = factory_config(self.username)
        self.applied_tree = set_tree(self.applied)
        self.maintenance = Maintenance(self.name, lambda t, sw, ev: self.log(Event(t, sw, ev)), self.scale)

    # -- the shell's view -------------------------------------------------------------------
    def path(self, name: str) -> str:
        return posixpath.normpath(name if name.startswith("/") else posixpath.join(HOME, name))

    def read(self, name: str) -> str | None:
        path = self.path(name)
        shown = self.lifecycle.read(path) if self.lifecycle is not None else None
        if shown is not None:
            return shown
        if path == LSB_RELEASE:
            return lsb_release(self.running_release())
        return self.applied_text() if path == STARTUP else self.files.get(path)

    def applied_text(self) -> str:
        if not self.applied:
            self.applied = revision_text(self.applied_tree)
        return self.applied

    def running_release(self) -> str:
        return self.lifecycle.running if self.lifecycle is not None else self.release

    def write(self, name: str, text: str) -> None:
        self.files[self.path(name)] = text

    def is_up(self) -> bool:
        """Accepting logins: always, unless its simulated reboot is under way."""
        return self.lifecycle is None or self.lifecycle.is_up()

    async def pause(self, op: str) -> None:
        delay = lat.LATENCY[op] * self.scale
        if delay > 0:
            await asyncio.sleep(delay)

    async def run(self, argv: list[str], stdin: str | None) -> Result:
        """One simple command (the exec channel's own latency is paid once per command line)."""
        name, args = argv[0], argv[1:]
        if self.lifecycle is not None and (stepped := await self.lifecycle.run(argv)) is not None:
            return stepped
        handler = _BUILTINS.get(name)
        if handler is not None:
            return handler(self, args, stdin)
        if name == "nv":
            return await self._nv(args)
        if name == "sudo":
            return await self._sudo(args, stdin)
        if name == "vtysh":
            return await self._vtysh(args)
        if name == "lldpcli" and args == ["show", "neighbors", "-f", "json"]:
            await self.pause(lat.VTYSH)
            return Result(0, '{"lldp": {}}\n')  # no cable is simulated: no neighbor is seen
        if name == "ip" and args[:1] == ["-j"]:
            return self._ip(args[1:])
        if name == "ip" and args[:3] == ["-s", "-s", "-j"]:  # the counters and carrier changes telemetry reads
            return self._ip(args[3:], stats=True)
        return Result(127, "", f"sh: {name}: command not found\n")

    # -- NVUE ---------------------------------------------------------------------------------
    async def _nv(self, args: list[str]) -> Result:
        words = " ".join(args)
        if self.maintenance is not None:
            answer = await self.maintenance.command(args, self.running_release())
            if answer is not None:
                return answer
        if args[1:3] == ["maintenance", "unit"] and (mode := unit_command(args)) is not None:
            return await self._unit(mode or None)
        if args[:2] == ["config", "detach"]:
            await self.pause(lat.NV_DETACH)
            self.pending, self.pending_unit_only = None, False
            return Result()
        if args[:2] == ["config", "replace"] and len(args) == 3:
            await self.pause(lat.NV_REPLACE)
            text = self.read(args[2])
            if text is None:
                return Result(1, "", f"Error: {args[2]}: no such file\n")
            try:
                tree = set_tree(text)
            except yaml.YAMLError as exc:
                return Result(1, "", f"Error: invalid YAML: {exc}\n")
            self.pending, self.pending_tree, self.pending_unit_only = text, tree, False
            return Result()
        if words == "config diff -o commands":
            await self.pause(lat.NV_DIFF)
            if self.pending is None:
                return Result()
            return Result(0, "".join(f"{ln}\n" for ln in diff_commands(self.applied_tree, self.pending_tree)))
        if words == "config show -r applied -o yaml":
            await self.pause(lat.NV_SHOW)
            return Result(0, self.applied_text())
        if args[:2] == ["config", "apply"]:
            return await self._apply(args[2:])
        return Result(1, "", f"Error: nv {words}: not simulated\n")

    async def _unit(self, mode: str | None) -> Result:
        """`nv set maintenance unit all-protocols mode <mode>` (None: `nv unset maintenance unit all-protocols`)
        into the pending revision, made from the applied one when there is none."""
        delay = dr.LATENCY[dr.NV_SET] * self.scale
        if delay > 0:
            await asyncio.sleep(delay)
        if self.pending is None:
            self.pending_tree, self.pending_unit_only = self.applied_tree, True
        self.pending_tree, self.pending = with_unit(self.pending_tree, mode), ""
        return Result()

    async def _apply(self, opts: list[str]) -> Result:
        if opts == ["--confirm-status"]:
            await self.pause(lat.NV_STATUS)
            if self.timer is None:
                return Result(0, "No apply is awaiting confirmation\n")
            left = max(1, round(self.deadline - asyncio.get_running_loop().time()))
            return Result(0, f"Confirm timer: {left} seconds left before the apply is rolled back\n")
        if opts in (["--confirm-yes"], ["--confirm-no"]):
            await self.pause(lat.NV_CONFIRM)
            if self.timer is None:
                return Result(1, "", "Error: no apply is awaiting confirmation\n")
            self._end_trial("confirm" if opts == ["--confirm-yes"] else "abort")
            return Result()
        timer: int | None = None
        if len(opts) == 3 and opts[0] == "--confirm" and opts[1].endswith("s") and opts[2] == "-y":
            timer = int(opts[1][:-1])
        elif opts != ["-y"]:
            return Result(1, "", f"Error: nv config apply {' '.join(opts)}: not simulated\n")
        if self.timer is not None:
            return Result(1, "", "Error: an apply is awaiting confirmation\n")
        if self.pending is None:
            return Result(1, "", "Error: no pending revision to apply\n")
        unit_only = self.pending_unit_only
        if not unit_only:
            await self.pause(lat.NV_APPLY)
        pending, self.pending, self.pending_unit_only = self.pending, None, False
        self.previous = (self.applied, self.applied_tree)
        self.applied, self.applied_tree = pending, self.pending_tree
        if self.maintenance is not None and has_units(self.running_release()):
            await self.maintenance.follow(unit_mode(self.applied_tree), unit_only=unit_only)
        loop = asyncio.get_running_loop()
        if timer:
            self.deadline = loop.time() + timer
            self.timer = loop.call_at(self.deadline, self._end_trial, "revert")
            self.log(Event(loop.time(), self.name, "commit"))
        elif not unit_only:  # a drain's or undrain's own apply is logged as the drain or undrain it is
            self.log(Event(loop.time(), self.name, "apply"))
        return Result()

    def _end_trial(self, how: str) -> None:
        """The trial apply ends: confirmed (kept), or rolled back by `--confirm-no` or by the timer."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if how != "confirm" and self.previous is not None:
            self.applied, self.applied_tree = self.previous
            if self.maintenance is not None and has_units(self.running_release()):
                self.maintenance.now(unit_mode(self.applied_tree))
        self.log(Event(asyncio.get_running_loop().time(), self.name, how))

    # -- reads ---------------------------------------------------------------------------------
    async def _sudo(self, args: list[str], stdin: str | None) -> Result:
        if args[:3] != ["-S", "-p", ""]:
            return Result(1, "", "sudo: a password is required\n")
        given = (stdin or "").split("\n", 1)[0]
        if given != self.password:
            return Result(1, "", "sudo: 1 incorrect password attempt\n")
        return await self.run(args[3:], None)

    async def _vtysh(self, args: list[str]) -> Result:
        if args[:1] != ["-c"] or len(args) != 2:
            return Result(1, "", "vtysh: one -c command simulated\n")
        await self.pause(lat.VTYSH)
        command = args[1]
        if command == "show version":
            return Result(0, "FRRouting 8.4.3 (simulated) on Linux(5.10.0-cl-1-amd64).\n")
        if command in ("show bgp vrf all summary json", "show bgp vrf all neighbors json", "show interface json",
                       "show ip route json"):  # fmt: skip
            # No FRR runs here: no BGP session is up before or after, so the checks hold nothing against a change.
            return Result(0, "{}\n")
        return Result(1, "", f"% Unknown command: {command}\n")

    def _ip(self, args: list[str], stats: bool = False) -> Result:
        if args[:2] != ["link", "show"]:
            return Result(1, "", f"ip {' '.join(args)}: not simulated\n")
        ports = sorted((self.applied_tree.get("interface") or {}).keys(), key=str)
        links = [_link("lo", "LOOPBACK", 65536)] + [_link(str(p), "BROADCAST", 9216) for p in ports]
        if stats:  # no traffic is simulated: every counter 0, no carrier ever lost
            zero = {"bytes": 0, "packets": 0, "errors": 0, "dropped": 0}
            for link in links:
                link["stats64"] = {"rx": dict(zero), "tx": {**zero, "carrier_changes": 0}}
        return Result(0, json.dumps(links) + "\n")


def _link(name: str, kind: str, mtu: int) -> dict[str, Any]:
    """A port as `ip -j link show` prints it: every configured port up (no cable is simulated)."""
    return {"ifname": name, "flags": [kind, "UP", "LOWER_UP"], "mtu": mtu, "address": "02:00:00:00:00:01"}


def _mkdir(sw: CumulusSwitch, args: list[str], stdin: str | None) -> Result:
    return Result()


def _cat(sw: CumulusSwitch, args: list[str], stdin: str | None) -> Result:
    if not args:
        return Result(0, stdin or "")
    text = sw.read(args[0])
    if text is None:
        return Result(1, "", f"cat: {args[0]}: No such file or directory\n")
    return Result(0, text)


def _mv(sw: CumulusSwitch, args: list[str], stdin: str | None) -> Result:
    src, dst = [a for a in args if not a.startswith("-")][-2:]
    text = sw.files.pop(sw.path(src), None)
    if text is None:
        return Result(1, "", f"mv: cannot stat '{src}'\n")
    sw.write(dst, text)
    return Result()


def _rm(sw: CumulusSwitch, args: list[str], stdin: str | None) -> Result:
    for a in args:
        if not a.startswith("-"):
            sw.files.pop(sw.path(a), None)
    return Result()


def _test(sw: CumulusSwitch, args: list[str], stdin: str | None) -> Result:
    if len(args) == 2 and args[0] == "-s":
        return Result(0 if sw.read(args[1]) else 1)
    return Result(2, "", "test: only -s simulated\n")


def _printf(sw: CumulusSwitch, args: list[str], stdin: str | None) -> Result:
    if args[:1] == ["%s\\n"]:
        return Result(0, "".join(f"{a}\n" for a in args[1:]))
    return Result(1, "", "printf: only '%s\\n' simulated\n")


def _hostname(sw: CumulusSwitch, args: list[str], stdin: str | None) -> Result:
    return Result(0, f"{sw.name}\n")


def _true(sw: CumulusSwitch, args: list[str], stdin: str | None) -> Result:
    return Result()


def _base64(sw: CumulusSwitch, args: list[str], stdin: str | None) -> Result:
    """`base64 -d` of its stdin (put_files sends each file so)."""
    if args != ["-d"]:
        return Result(1, "", "base64: only -d simulated\n")
    try:
        return Result(0, base64.b64decode((stdin or "").encode(), validate=False).decode())
    except (ValueError, UnicodeDecodeError) as exc:
        return Result(1, "", f"base64: invalid input: {exc}\n")


Builtin = Callable[[CumulusSwitch, list[str], str | None], Result]
_BUILTINS: dict[str, Builtin] = {
    "mkdir": _mkdir,
    "chmod": _mkdir,
    "cat": _cat,
    "mv": _mv,
    "rm": _rm,
    "test": _test,
    "printf": _printf,
    "hostname": _hostname,
    "true": _true,
    "umask": _true,  # file modes are not simulated
    "base64": _base64,
}
