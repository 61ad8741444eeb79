"""Record a switch's answers to the commands gpufabric's driver sends, for replay tests.

    python scripts/record_switch.py --platform cumulus --host 10.0.0.1 --user cumulus \
        --password-env SWITCH_PASSWORD --source "SN5600 Cumulus 5.14" --out tests/recorded/cumulus/leaf.yml

Read-only: it runs the getters, and with --candidate FILE also stages the candidate for `compare_config`
and then discards it (NVUE: a pending revision, detached again; nothing is applied).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gpufabric.drivers.recording import RecordingTransport, save
from gpufabric.drivers.transport import SSHTransport
from gpufabric.nos.cumulus.driver import CumulusDriver
from gpufabric.nos.frr.driver import FrrDriver

DRIVERS = {"cumulus": CumulusDriver, "frr": FrrDriver}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--platform", choices=sorted(DRIVERS), required=True)
    ap.add_argument("--host", required=True)
    ap.add_argument("--user", required=True)
    ap.add_argument("--password-env", required=True, help="environment variable holding the password")
    ap.add_argument("--known-hosts", help="known_hosts file (host keys are checked when given)")
    ap.add_argument("--source", required=True, help="what answered: model and release")
    ap.add_argument("--candidate", type=Path, help="also record compare_config against this candidate")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    password = os.environ.get(args.password_env)
    if password is None:
        print(f"error: ${args.password_env} is not set", file=sys.stderr)
        return 2
    inner = SSHTransport(args.host, args.user, password, known_hosts=args.known_hosts)
    recorder = RecordingTransport(inner, args.source)
    driver = DRIVERS[args.platform](args.host, args.user, password, optional_args={"transport": recorder})
    driver.open()
    try:
        driver.get_facts()
        driver.get_interfaces()
        driver.get_interfaces_ip()
        driver.get_bgp_neighbors()
        driver.get_lldp_neighbors()
        driver.get_route_to()
        driver.get_config(retrieve="running")
        if args.candidate:
            driver.load_replace_candidate(config=args.candidate.read_text())
            driver.compare_config()
            driver.discard_config()
    finally:
        driver.close()
    save(recorder.exchanges, args.out)
    print(f"{len(recorder.exchanges)} answers recorded in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
