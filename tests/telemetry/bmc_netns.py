"""Run inside a network namespace of its own (`unshare --net python -m tests.telemetry.bmc_netns SPEC`):
bring its loopback up with the plan's BMC addresses on it, start a Redfish service at each (sushy-tools'
emulator or the DMTF-layout fake), run the `gpufabric` commands the spec lists, print their outcomes as
JSON, and stop what it started. The namespace dies with this process: nothing is left on the machine.

SPEC (JSON): {"folder": str, "bmcs": [{"address", "port", "kind": "sushy"|"older"|"newer"|"healthy"}],
"runs": [{"argv": [...], "env": {...}}]}.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.telemetry.redfish_doubles import Service, newer_model, older_model, sushy_emulator

MODELS = {"older": older_model, "newer": newer_model, "healthy": lambda: older_model(psu2="OK")}


def main() -> None:
    spec = json.loads(sys.argv[1])
    folder = Path(spec["folder"])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for bmc in spec["bmcs"]:
        subprocess.run(["ip", "addr", "add", f"{bmc['address']}/32", "dev", "lo"], check=True)
    results = []
    with contextlib.ExitStack() as stack:
        for i, bmc in enumerate(spec["bmcs"]):
            if bmc["kind"] == "sushy":
                stack.enter_context(sushy_emulator(folder / f"emu{i}", bmc["address"], bmc["port"]))
            else:
                stack.enter_context(Service(MODELS[bmc["kind"]](), bmc["address"], bmc["port"]))
        for run in spec["runs"]:
            env = {**os.environ, **run.get("env", {})}
            for name in run.get("unset", []):
                env.pop(name, None)
            done = subprocess.run(
                [sys.executable, "-m", "gpufabric", *run["argv"]],
                capture_output=True, text=True, env=env, timeout=120, check=False,
            )  # fmt: skip
            results.append({"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
