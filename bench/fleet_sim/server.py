"""Serve a simulated fleet: per switch address an SSH listener (Cumulus) or eAPI over HTTPS (EOS, with
a certificate from a CA the run makes), all in one asyncio process.

Run it where those addresses are local (`rollout_scale.py` makes a network namespace whose loopback
holds the management subnet). The login's password comes from the environment variable named by
--password-env, never from the command line. Writes the SSH host keys as a known_hosts file for the
controller, prints `ready` once every listener is up, and on SIGTERM writes its event log (JSON
lines) and its own CPU time (JSON) and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import signal
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

import asyncssh

from bench.fleet_sim import eapi, script
from bench.fleet_sim import latency as lat
from bench.fleet_sim.cumulus import CumulusSwitch, Event
from bench.fleet_sim.eapi import Ca
from bench.fleet_sim.eos import EosSwitch
from bench.fleet_sim.shell import parse
from bench.fleet_sim.upgrade import Lifecycle


def _needs_stdin(line: str) -> bool:
    """Whether the command reads its stdin: the driver sends stdin (and closes it) only for these."""
    try:
        steps = parse(line)
    except ValueError:
        return False
    for step in steps:
        argv = step.command.argv
        if argv[:2] == ["sudo", "-S"] or argv == ["cat"] or argv[:2] == ["sh", "-s"]:
            return True
    return False


class _Login(asyncssh.SSHServer):
    def __init__(self, switch: CumulusSwitch) -> None:
        self.switch = switch

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        if not self.switch.is_up():  # rebooting (bench/fleet_sim/upgrade.py): nothing answers
            conn.close()

    def begin_auth(self, username: str) -> bool:
        return True

    def password_auth_supported(self) -> bool:
        return True

    def validate_password(self, username: str, password: str) -> bool:
        up = self.switch.is_up()
        return up and username == self.switch.username and password == self.switch.password


class Fleet:
    def __init__(self, switches: dict[str, tuple[str, CumulusSwitch]]) -> None:
        self.switches = switches  # address -> (platform, switch)
        self.events: list[Event] = []
        self.commands = 0
        self.logins = 0
        self.kinds: Counter[str] = Counter()  # commands by their first words (`nv config apply`, `vtysh`, ...)
        # With --trace: every command's (start, end, switch, kind, exit code), loop clock: where the time goes.
        self.trace: list[tuple[float, float, str, str, int]] | None = None

    def log(self, event: Event) -> None:
        self.events.append(event)

    def count(self, kind: str) -> None:
        self.commands += 1
        self.kinds[kind] += 1

    async def _session(self, switch: CumulusSwitch, process: asyncssh.SSHServerProcess[str]) -> None:
        line = process.command or ""
        kind = _kind(line)
        self.count(kind)
        started = asyncio.get_running_loop().time()
        stdin = await process.stdin.read() if _needs_stdin(line) else None
        if not switch.is_up():  # a session left open across a reboot: the switch is gone
            process.exit(255)
            return
        await switch.pause(lat.EXEC)
        result = await script.run(line, stdin, switch.run, switch.write)
        if self.trace is not None:  # before the answer goes: whoever got it finds the command traced
            self.trace.append((started, asyncio.get_running_loop().time(), switch.name, kind, result.rc))
        process.stdout.write(result.stdout)
        process.stderr.write(result.stderr)
        process.exit(result.rc)

    async def serve(self, keys: dict[str, asyncssh.SSHKey], port: int = 22) -> list[asyncssh.SSHAcceptor]:
        """A listener per switch address (`port` 0: any free port, as a test takes)."""
        servers = []
        for address, (_platform, switch) in self.switches.items():

            def login(sw: CumulusSwitch = switch) -> asyncssh.SSHServer:
                self.logins += 1
                return _Login(sw)

            async def session(process: asyncssh.SSHServerProcess[str], sw: CumulusSwitch = switch) -> None:
                await self._session(sw, process)

            server = await asyncssh.create_server(
                login,
                host=address,
                port=port,
                server_host_keys=[keys[address]],
                process_factory=session,
                backlog=128,
                encoding="utf-8",
            )
            servers.append(server)
        return servers


def lifecycle(entry: dict[str, Any], scale: float) -> Lifecycle | None:
    """A switch's image slots and reboots when its entry names the release it runs (`release`; `hang_on`:
    releases it hangs booting; `corrupt`: its fetched images are damaged)."""
    if "release" not in entry:
        return None
    return Lifecycle(
        entry["name"],
        release=str(entry["release"]),
        scale=scale,
        hang_on=frozenset(entry.get("hang_on", ())),
        corrupt=bool(entry.get("corrupt", False)),
    )


def _kind(line: str) -> str:
    """A command line's kind, for counting: its first words, without file names or quoted arguments."""
    words = line.replace("sudo -S -p ''", "").split()
    keep = [w.strip("'") for w in words[:5] if re.fullmatch(r"'?-{0,2}[a-z][a-z-]*", w)]
    return " ".join(keep[:4]) or "?"


def _cpu() -> dict[str, float]:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return {"user_s": use.ru_utime, "sys_s": use.ru_stime, "peak_rss_mib": use.ru_maxrss / 1024}


async def main_async(args: argparse.Namespace) -> None:
    spec: list[dict[str, Any]] = json.loads(Path(args.switches).read_text())
    password = os.environ[args.password_env]
    fleet = Fleet({})
    if args.trace:
        fleet.trace = []
    keys: dict[str, asyncssh.SSHKey] = {}
    lines = []
    https: list[asyncio.Server] = []
    ca = Ca(Path(args.tls_dir)) if any(e["platform"] == "eos" for e in spec) else None
    for entry in spec:
        if entry["platform"] == "eos" and ca is not None:
            eos = EosSwitch(entry["name"], args.username, password, fleet.log, scale=args.latency_scale)
            context = ca.server_context(entry["name"], entry["address"])
            https.append(await eapi.serve(eos, entry["address"], 443, context, fleet.count))
            continue
        if entry["platform"] != "cumulus":
            raise SystemExit(f"{entry['name']}: platform {entry['platform']} is not simulated yet")
        switch = CumulusSwitch(entry["name"], args.username, password, fleet.log, scale=args.latency_scale)
        switch.lifecycle = lifecycle(entry, args.latency_scale)
        fleet.switches[entry["address"]] = (entry["platform"], switch)
        key = asyncssh.generate_private_key("ssh-ed25519")
        keys[entry["address"]] = key
        lines.append(f"{entry['address']} {key.export_public_key('openssh').decode().strip()}\n")
    Path(args.known_hosts).write_text("".join(lines))
    servers = await fleet.serve(keys)
    loop = asyncio.get_running_loop()
    clock0 = (time.time(), loop.time())  # wall clock and loop clock, read together
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, lambda: _snapshot(args.stats, fleet))  # counts so far, on request
    print("ready", flush=True)
    await stop.wait()
    for server in servers:
        server.close()
    for web in https:
        web.close()
    wall0, loop0 = clock0
    with open(args.events, "w", encoding="utf-8") as fh:
        for ev in fleet.events:
            fh.write(json.dumps({**asdict(ev), "time": wall0 + ev.time - loop0}) + "\n")
    if args.trace and fleet.trace is not None:
        with open(args.trace, "w", encoding="utf-8") as fh:
            for start, end, name, kind, rc in fleet.trace:
                fh.write(json.dumps({"start": wall0 + start - loop0, "end": wall0 + end - loop0, "switch": name,
                                     "kind": kind, "rc": rc}) + "\n")  # fmt: skip
    _snapshot(args.stats, fleet)


def _snapshot(path: str, fleet: Fleet) -> None:
    stats = {**_cpu(), "commands": fleet.commands, "logins": fleet.logins, "kinds": dict(fleet.kinds)}
    Path(f"{path}.tmp").write_text(json.dumps(stats))
    os.replace(f"{path}.tmp", path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="fleet_sim", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--switches", required=True, help="JSON list of {name, address, platform}")
    parser.add_argument("--username", required=True)
    parser.add_argument("--password-env", required=True, help="environment variable holding the login's password")
    parser.add_argument("--known-hosts", required=True, help="write the switches' host keys here")
    parser.add_argument("--events", required=True, help="write the event log here (JSON lines) on exit")
    parser.add_argument("--stats", required=True, help="write the simulator's own CPU time here on exit")
    parser.add_argument("--tls-dir", default=".", help="EOS switches: write the run's CA here (ca.pem, for --ca-file)")
    parser.add_argument("--latency-scale", type=float, default=1.0, help="multiply every latency (0: none)")
    parser.add_argument("--trace", help="write each command's start, end, switch, kind and exit code here (JSON lines)")
    args = parser.parse_args(argv)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
