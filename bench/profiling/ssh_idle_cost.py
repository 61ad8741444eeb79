"""What an open but idle SSH session costs the controller: `nornir push` keeps one per switch open from
the first read to the end of the rollout, each with paramiko's transport thread.

    python -m bench.profiling.ssh_idle_cost --sessions 16,64,256

Opens N sessions (the real transport gpufabric's Linux drivers use) to N simulated switches on
127.0.0.1 (bench/fleet_sim, a test double), leaves them idle for --seconds, and prints this
process's CPU time over that interval, per session and in all; and the round trip of one command
(an exec channel opened, run, closed) with the simulator answering at once, and one login (key
exchange, host key check, password), its wall and CPU time (both ends: the simulator runs in this
process).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import asyncssh

from bench.fleet_sim.cumulus import CumulusSwitch
from bench.fleet_sim.server import Fleet
from gpufabric.drivers.transport import SSHTransport

PASSWORD = "bench-not-a-secret"


def _cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_THREAD)
    return use.ru_utime + use.ru_stime


def measure(count: int, seconds: float, folder: Path) -> dict[str, float]:
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    ports: list[int] = []
    lines: list[str] = []
    for i in range(count):
        fleet = Fleet({})
        fleet.switches["127.0.0.1"] = ("cumulus", CumulusSwitch(f"sw{i}", "cumulus", PASSWORD, fleet.log, scale=0))
        key = asyncssh.generate_private_key("ssh-ed25519")
        server = asyncio.run_coroutine_threadsafe(fleet.serve({"127.0.0.1": key}, port=0), loop).result(10)[0]
        ports.append(server.sockets[0].getsockname()[1])
        lines.append(f"[127.0.0.1]:{ports[-1]} {key.export_public_key('openssh').decode().strip()}\n")
    known_hosts = folder / f"known_hosts.{count}"
    known_hosts.write_text("".join(lines))
    before_login = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    sessions = [SSHTransport("127.0.0.1", "cumulus", PASSWORD, port=p, known_hosts=str(known_hosts)) for p in ports]
    login = (time.perf_counter() - started) / count
    after_login = resource.getrusage(resource.RUSAGE_SELF)
    login_cpu = (after_login.ru_utime - before_login.ru_utime + after_login.ru_stime - before_login.ru_stime) / count
    started = time.perf_counter()
    for _ in range(50):
        sessions[0].run("true")  # an exec channel's round trip, the simulator answering at once
    rtt = (time.perf_counter() - started) / 50
    time.sleep(1.0)  # the logins' own work done
    before = resource.getrusage(resource.RUSAGE_SELF)
    time.sleep(seconds)
    after = resource.getrusage(resource.RUSAGE_SELF)
    for s in sessions:
        s.close()
    loop.call_soon_threadsafe(loop.stop)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "sessions": count,
        "cpu_s_per_s": cpu / seconds,
        "cpu_ms_per_session_s": 1000 * cpu / seconds / count,
        "rtt_ms": 1000 * rtt,
        "login_ms": 1000 * login,
        "login_cpu_ms": 1000 * login_cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", default="16,64,256")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--switch-interval", type=float, help="sys.setswitchinterval (Python's default: 0.005 s)")
    args = parser.parse_args()
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    print("sessions  idle cpu s/s  cpu ms per session-second  one command's round trip ms  login ms (cpu ms)")
    with tempfile.TemporaryDirectory() as folder:
        for count in (int(n) for n in args.sessions.split(",")):
            row = measure(count, args.seconds, Path(folder))
            print(
                f"{row['sessions']:8d}  {row['cpu_s_per_s']:12.3f}  {row['cpu_ms_per_session_s']:25.3f}  "
                f"{row['rtt_ms']:27.1f}  {row['login_ms']:8.1f} ({row['login_cpu_ms']:.1f})"
            )


if __name__ == "__main__":
    main()
