"""One simulated Arista EOS switch behind eAPI: running and startup configurations, config sessions
with EOS's commit timer, and flash files, as the NAPALM `eos` driver (and gpufabric's on top of it)
drive them.

EOS's behaviour as Arista documents it: `configure session NAME` opens (or re-enters) a session
whose configuration starts as the running one; `rollback clean-config` empties it; the lines that
follow, to `end`, go into it; `show session-config named NAME diffs` shows it against the running
configuration; `configure session NAME commit timer HH:MM:SS` makes it running and reverts unless
`configure session NAME commit` comes in time; `abort` drops it; `write memory` saves running as
startup; `copy startup-config flash:X` and `configure replace flash:X` keep and restore one.

Maintenance mode (EOS User Manual, "Maintenance Mode"), as gpufabric's driver drains: `configure`, then
`maintenance` / `unit System` / `quiesce` (or `no quiesce`) to `end`, merged into the running configuration;
`show running-config section maintenance` prints the block. `no quiesce` is the unit's default, and the
running configuration shows no default (assumed: no switch showed it here), so it leaves no line. The drain
marker is a flash file written and read through `bash timeout N` (cat, `echo B64 | base64 -d >`, rm -f).
The configuration is kept as a list of lines without their indentation, as the sessions are.
"""

from __future__ import annotations

import asyncio
import difflib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.fleet_sim import latency as lat
from bench.fleet_sim.cumulus import Event

VERSION = "4.30.1F"


class EapiError(Exception):
    """A command EOS refuses: eAPI answers the whole request with an error (code 1002)."""


@dataclass
class Session:
    lines: list[str]
    state: str = "pending"  # pending, pendingCommitTimer, completed, aborted
    commit_by: float = -1.0  # uptime seconds


@dataclass
class EosSwitch:
    name: str
    username: str
    password: str
    log: Callable[[Event], None]
    scale: float = 1.0
    running: list[str] = field(default_factory=list)
    startup: list[str] = field(default_factory=list)
    sessions: dict[str, Session] = field(default_factory=dict)
    flash: dict[str, list[str]] = field(default_factory=dict)
    before_timer: list[str] | None = None
    timer: asyncio.TimerHandle | None = None
    booted: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        if not self.running:
            self.running = [f"hostname {self.name}", f"username {self.username} privilege 15 role network-admin"]
            self.startup = list(self.running)

    def uptime(self) -> float:
        return time.monotonic() - self.booted

    async def pause(self, op: str) -> None:
        delay = lat.LATENCY[op] * self.scale
        if delay > 0:
            await asyncio.sleep(delay)

    async def run_cmds(self, cmds: list[Any], fmt: str) -> list[Any]:
        """One eAPI request: the commands in order, config-mode state lasting to its end."""
        out: list[Any] = []
        session: str | None = None
        merged: list[str] | None = None  # `configure` (no session): lines merged into running at `end`
        for entry in cmds:
            cmd = entry["cmd"] if isinstance(entry, dict) else str(entry)
            cmd = cmd.strip()
            if cmd == "configure" and session is None and merged is None:
                merged = []
                out.append({})
                continue
            if merged is not None:
                if cmd == "end":
                    self._merge(merged)
                    merged = None
                else:
                    merged.append(cmd)
                out.append({})
                continue
            if session is not None and cmd not in ("end", "exit") and not cmd.startswith("configure session"):
                if cmd == "rollback clean-config":
                    self.sessions[session].lines = []
                elif cmd:
                    self.sessions[session].lines.append(cmd)
                out.append({})
                continue
            if cmd in ("end", "exit"):
                session = None
                out.append({})
                continue
            words = cmd.split()
            if words[:2] == ["configure", "session"] and len(words) == 3:
                session = words[2]
                self.sessions.setdefault(session, Session(list(self.running)))
                out.append({})
                continue
            out.append(await self._command(cmd, words, fmt))
        return out

    async def _command(self, cmd: str, words: list[str], fmt: str) -> Any:
        if cmd == "enable":
            return {}
        if cmd == "show version":
            return {
                "version": VERSION,
                "internalVersion": VERSION,
                "modelName": "DCS-7060X5-64S",
                "serialNumber": "SIM",
                "uptime": self.uptime(),
                "bootupTimestamp": time.time() - self.uptime(),
            }
        if cmd in ("show configuration sessions detail", "show configuration sessions"):
            await self.pause(lat.EOS_SHOW)
            sessions = {
                n: {"state": s.state, "commitBy": s.commit_by, "description": ""} for n, s in self.sessions.items()
            }
            return {"sessions": sessions, "maxSavedSessions": 1, "maxOpenSessions": 5}
        if cmd == "dir flash:":
            return {"output": "".join(f"  -rw-  1024  Jan 1 00:00  {n}\n" for n in sorted(self.flash))}
        if words[:3] == ["show", "session-config", "named"] and words[-1] == "diffs":
            await self.pause(lat.EOS_DIFF)
            return {"output": self._diff(self._session(words[3]).lines)}
        if words[:2] == ["configure", "session"] and len(words) >= 4:
            return await self._session_op(words[2], words[3:])
        if words[:1] == ["copy"] and words[1] == "startup-config" and words[2].startswith("flash:"):
            self.flash[words[2][6:]] = list(self.startup)
            return {"output": ""}
        if cmd == "write memory":
            self.startup = list(self.running)
            return {"output": "Copy completed successfully.\n"}
        if words[:2] == ["configure", "replace"] and words[2].startswith("flash:"):
            await self.pause(lat.EOS_COMMIT)
            self.running = list(self.flash[words[2][6:]])
            self.log(Event(asyncio.get_running_loop().time(), self.name, "apply"))
            return {"output": ""}
        if words[:1] == ["delete"] and words[1].startswith("flash:"):
            self.flash.pop(words[1][6:], None)
            return {"output": ""}
        if words[:2] == ["bash", "timeout"] and len(words) > 3:
            return {"output": self._bash(words[3:])}
        if cmd == "show running-config section maintenance":
            block = _maintenance(self.running)
            indent = {"maintenance": "", "unit System": "   "}
            return {"output": "".join(f"{indent.get(line, '      ')}{line}\n" for line in block)}
        if cmd == "show interfaces":
            await self.pause(lat.EOS_SHOW)
            ports = sorted({ln.split()[1] for ln in self.running if ln.startswith("interface Ethernet")})
            return {"interfaces": {p: _port() for p in ports}}
        if cmd in ("show ip bgp summary vrf all", "show ipv6 bgp summary vrf all"):
            await self.pause(lat.EOS_SHOW)
            return {"vrfs": {"default": {"routerId": "0.0.0.0", "peers": {}}}}  # no session is simulated
        if cmd in ("show ip bgp neighbors vrf all", "show ipv6 bgp peers vrf all"):
            await self.pause(lat.EOS_SHOW)
            return {"vrfs": {"default": {"peerList": []}}}
        raise EapiError(f"CLI command '{cmd}' is not simulated")

    def _merge(self, lines: list[str]) -> None:
        """`configure` ... `end`: the drain's and undrain's maintenance lines (nothing else is simulated)."""
        if lines == list(QUIESCE):
            if not _maintenance(self.running):
                self.running = [*self.running, *QUIESCE]
        elif lines == ["maintenance", "unit System", "no quiesce"]:
            block = _maintenance(self.running)
            if block:
                at = self.running.index("maintenance")
                self.running = self.running[:at] + self.running[at + len(block) :]
        else:
            raise EapiError(f"configure: {lines!r} is not simulated")

    def _bash(self, words: list[str]) -> str:
        """`bash timeout N ...`: the drain marker's cat, write and removal on flash (/mnt/flash/NAME)."""
        text = " ".join(words)
        if words[0] == "cat" and words[1].startswith(FLASH):
            return "".join(f"{line}\n" for line in self.flash.get(words[1][len(FLASH) :], []))
        if words[0] == "echo" and words[2:5] == ["|", "base64", "-d"] and words[5] == ">":
            import base64

            self.flash[words[6][len(FLASH) :]] = base64.b64decode(words[1]).decode().splitlines()
            return ""
        if words[:2] == ["rm", "-f"] and words[2].startswith(FLASH):
            self.flash.pop(words[2][len(FLASH) :], None)
            return ""
        raise EapiError(f"bash: `{text}` is not simulated")

    def _session(self, name: str) -> Session:
        if name not in self.sessions:
            raise EapiError(f"% Session {name} not found")
        return self.sessions[name]

    def _diff(self, lines: list[str]) -> str:
        if lines == self.running:
            return ""
        body = difflib.unified_diff(
            self.running, lines, "system:/running-config", "session:/session-config", lineterm=""
        )
        return "\n".join(body) + "\n"

    async def _session_op(self, name: str, op: list[str]) -> dict[str, Any]:
        session = self._session(name)
        loop = asyncio.get_running_loop()
        if op == ["abort"]:
            if session.state == "pendingCommitTimer":
                self._end_timer(name, "abort")
            self.sessions.pop(name)
            return {"output": ""}
        if op[:2] == ["commit", "timer"] and len(op) == 3:
            if self.timer is not None:
                raise EapiError("% Cannot commit: another session has a commit timer pending")
            await self.pause(lat.EOS_COMMIT)
            hours, minutes, seconds = (int(x) for x in op[2].split(":"))
            secs = hours * 3600 + minutes * 60 + seconds
            self.before_timer, self.running = self.running, list(session.lines)
            session.state, session.commit_by = "pendingCommitTimer", self.uptime() + secs
            self.timer = loop.call_later(secs, self._end_timer, name, "revert")
            self.log(Event(loop.time(), self.name, "commit"))
            return {"output": ""}
        if op == ["commit"]:
            await self.pause(lat.EOS_CONFIRM)
            if session.state == "pendingCommitTimer":
                self._end_timer(name, "confirm")
            else:
                self.running = list(session.lines)
                self.log(Event(loop.time(), self.name, "apply"))
            session.state = "completed"
            return {"output": ""}
        raise EapiError(f"configure session {name} {' '.join(op)}: not simulated")

    def _end_timer(self, name: str, how: str) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        session = self.sessions.get(name)
        if how != "confirm" and self.before_timer is not None:
            self.running = self.before_timer
            if session is not None:
                session.state = "aborted"
        self.before_timer = None
        self.log(Event(asyncio.get_running_loop().time(), self.name, how))


FLASH = "/mnt/flash/"
QUIESCE = ("maintenance", "unit System", "quiesce")


def _maintenance(lines: list[str]) -> list[str]:
    """The maintenance block in a configuration (its lines, unindented), or none."""
    if "maintenance" not in lines:
        return []
    at = lines.index("maintenance")
    block = lines[at : at + len(QUIESCE)]
    return block if tuple(block) == QUIESCE else []


def _port() -> dict[str, Any]:
    """An Ethernet port as `show interfaces` gives it: every configured port up (no cable is simulated)."""
    return {
        "lineProtocolStatus": "up",
        "interfaceStatus": "connected",
        "description": "",
        "mtu": 9214,
        "bandwidth": 400_000_000_000,
        "physicalAddress": "02:00:00:00:00:01",
        "hardware": "ethernet",
    }
