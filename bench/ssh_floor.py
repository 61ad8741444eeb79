"""The least a read of every switch can cost on this machine: one SSH login and one command per switch,
through the transport the drivers use (gpufabric.drivers.transport.SSHTransport, paramiko, host keys
from known_hosts), from a bounded pool of threads, each session closed once its command answered.

    python -m bench.ssh_floor --addresses FILE --known-hosts FILE [--workers 64] [--command hostname]

`rollout_scale.py` runs it in its namespace against the simulator before each dry run, so its table
shows a dry run's and a validate's wall time beside what logging in to every switch once costs there.
Prints one JSON object: the wall time, this process's CPU, and the switches it reached.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpufabric.drivers.transport import SSHTransport, check


def one(address: str, username: str, password: str, known_hosts: str, command: str) -> None:
    session = SSHTransport(address, username, password, known_hosts=known_hosts, timeout=60.0)
    try:
        check(session, command)
    finally:
        session.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--addresses", required=True, type=Path, help="one switch address a line")
    parser.add_argument("--known-hosts", required=True)
    parser.add_argument("--username", default="cumulus")
    parser.add_argument("--password-env", default="GPUFABRIC_SWITCH_PASSWORD")
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--command", default="hostname", help="the one command each switch runs")
    args = parser.parse_args()
    addresses = [a.strip() for a in args.addresses.read_text().splitlines() if a.strip()]
    password = os.environ[args.password_env]
    start = time.perf_counter()
    with ThreadPoolExecutor(args.workers) as pool:
        list(pool.map(lambda a: one(a, args.username, password, args.known_hosts, args.command), addresses))
    wall = time.perf_counter() - start
    use = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"switches": len(addresses), "wall_s": wall, "cpu_s": use.ru_utime + use.ru_stime}))


if __name__ == "__main__":
    main()
