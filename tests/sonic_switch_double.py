"""A test double of a SONiC switch, for the SONiC driver's tests (no SONiC runs here).

`SonicSwitchDouble` stands in for the SSH session: it runs the driver's own shell in this machine's
`sh`, with the switch's /etc/sonic/ (and the bgp container's /etc/frr/) mapped into a temporary folder,
and with stand-ins for SONiC's commands first on PATH: `config` (the generic config updater's
checkpoint, replace, rollback, delete-checkpoint, save), `show runningconfiguration all`, `sonic-cfggen -d
--print-data` (CONFIG_DB as the config updater reads it), `docker exec bgp` (frr-reload.py and vtysh) and
`sudo -n`. They keep CONFIG_DB and FRR's running configuration in
files, and a journal of every change: each `config replace` notes whether a revert timer was armed
at that moment. The driver's scripts, its pending marker and its timer process are the real ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gpufabric.drivers.transport import Output

_CONFIG = r"""
import json, os, shutil, sys
from pathlib import Path
state = Path(os.environ["SONIC_DOUBLE"]) / "state"
running = state / "running.json"
checkpoints = state / "checkpoints"
checkpoints.mkdir(exist_ok=True)
def journal(line):
    with open(state / "journal", "a") as fh:
        fh.write(line + "\n")
args = sys.argv[1:]
verb = args[0] if args else ""
if verb == "checkpoint":
    shutil.copy(running, checkpoints / f"{args[1]}.json"); journal(f"checkpoint {args[1]}")
elif verb == "replace":
    dry = "--dry-run" in args
    path = Path([a for a in args[1:] if not a.startswith("-")][0])
    try:
        doc = json.loads(path.read_text())
    except ValueError as e:
        sys.exit(f"Error: {path} is not JSON: {e}")
    mtus = [int(p.get("mtu", "9100")) for p in doc.get("PORT", {}).values()]
    if "NO_SUCH_TABLE" in doc or "DEVICE_METADATA" not in doc or any(m > 9216 for m in mtus):
        # What the updater says when SONiC's YANG models refuse the result (sonic-port.yang: mtu 68..9216).
        sys.exit("Error: Given patch will produce invalid config")
    old = json.loads(running.read_text())
    if dry:
        changed = sorted(t for t in set(old) | set(doc) if old.get(t) != doc.get(t))
        print(json.dumps([{"op": "replace", "path": f"/{t}"} for t in changed]))
        sys.exit(0)
    armed = (Path(os.environ["SONIC_DOUBLE"]) / "etc/sonic/gpufabric.pending").exists()
    running.write_text(json.dumps(doc, sort_keys=True)); journal(f"replace armed={armed}")
elif verb == "rollback":
    cp = checkpoints / f"{args[1]}.json"
    if not cp.exists():
        sys.exit(f"Error: checkpoint {args[1]} does not exist")
    shutil.copy(cp, running); journal(f"rollback {args[1]}")
elif verb == "delete-checkpoint":
    (checkpoints / f"{args[1]}.json").unlink(); journal(f"delete-checkpoint {args[1]}")
elif verb == "save":
    shutil.copy(running, Path(os.environ["SONIC_DOUBLE"]) / "etc/sonic/config_db.json"); journal("save")
else:
    sys.exit(f"config: no such command {verb!r}")
"""

_SHOW = r"""
import os, sys
from pathlib import Path
if sys.argv[1:] != ["runningconfiguration", "all"]:
    sys.exit("show: not in this double")
print((Path(os.environ["SONIC_DOUBLE"]) / "state/running.json").read_text())
"""

_CFGGEN = r"""
import os, sys
from pathlib import Path
if sys.argv[1:] != ["-d", "--print-data"]:
    sys.exit("sonic-cfggen: not in this double")
print((Path(os.environ["SONIC_DOUBLE"]) / "state/running.json").read_text())
"""

_DOCKER = r"""
import os, shutil, sys
from pathlib import Path
root = Path(os.environ["SONIC_DOUBLE"])
state = root / "state"
args = [a for a in sys.argv[1:] if a != "-i"]
assert args[:2] == ["exec", "bgp"], args
cmd = args[2:]
inside = lambda p: root / "etc/sonic/frr" / Path(p).name  # the container's /etc/frr is /etc/sonic/frr
if cmd[0].endswith("frr-reload.py"):
    target = inside(cmd[-1])
    if "--test" in cmd:
        old = (state / "frr.running").read_text().splitlines()
        new = target.read_text().splitlines()
        print("\n".join(["Lines To Delete", *[f"-{l}" for l in old if l not in new],
                         "Lines To Add", *[f"+{l}" for l in new if l not in old]]))
    else:
        if "bgp-fails" in target.read_text():
            sys.exit("frr-reload: bgpd refused the configuration")
        shutil.copy(target, state / "frr.running")
        with open(state / "journal", "a") as fh:
            fh.write(f"frr-reload {target.name}\n")
elif cmd[0] == "vtysh" and cmd[-1] == "show running-config":
    print("Building configuration...\n\nCurrent configuration:\n" + (state / "frr.running").read_text(), end="")
elif cmd[0] == "vtysh" and cmd[-1] == "write memory":
    shutil.copy(state / "frr.running", root / "etc/sonic/frr/frr.conf")
else:
    sys.exit(f"docker: not in this double: {cmd}")
"""

_SUDO = """#!/bin/sh
[ "$1" = "-n" ] && shift
exec "$@"
"""


class SonicSwitchDouble:
    """Test double of a SONiC switch's SSH session (see the module's docstring)."""

    def __init__(self, root: Path, config_db: dict[str, object], frr: str) -> None:
        self.root, self.sent = root, []
        (root / "etc/sonic/frr").mkdir(parents=True)
        (root / "state").mkdir()
        self.bin = root / "bin"
        self.bin.mkdir()
        for name, body in (("config", _CONFIG), ("show", _SHOW), ("sonic-cfggen", _CFGGEN), ("docker", _DOCKER)):
            self._tool(name, f"#!{sys.executable}\n{body}")
        self._tool("sudo", _SUDO)
        self.running_path.write_text(json.dumps(config_db, sort_keys=True))
        (root / "etc/sonic/config_db.json").write_text(json.dumps(config_db, sort_keys=True))
        (root / "state/frr.running").write_text(frr)
        (root / "etc/sonic/frr/frr.conf").write_text(frr)

    def _tool(self, name: str, text: str) -> None:
        path = self.bin / name
        path.write_text(text)
        path.chmod(0o755)

    # -- what the switch holds ---------------------------------------------------------------------
    @property
    def running_path(self) -> Path:
        return self.root / "state/running.json"

    @property
    def running(self) -> dict[str, object]:
        found: dict[str, object] = json.loads(self.running_path.read_text())
        return found

    @property
    def frr(self) -> str:
        return (self.root / "state/frr.running").read_text()

    @property
    def saved(self) -> dict[str, object]:
        found: dict[str, object] = json.loads((self.root / "etc/sonic/config_db.json").read_text())
        return found

    @property
    def journal(self) -> list[str]:
        path = self.root / "state/journal"
        return path.read_text().splitlines() if path.exists() else []

    def checkpoints(self) -> list[str]:
        return sorted(p.stem for p in (self.root / "state/checkpoints").glob("*.json"))

    # -- the session -------------------------------------------------------------------------------
    def _local(self, text: str) -> str:
        return text.replace("/etc/sonic/", f"{self.root}/etc/sonic/").replace("/etc/frr/", f"{self.root}/etc/frr/")

    def run(self, command: str, stdin: str | None = None) -> Output:
        self.sent.append(command)
        env = {**os.environ, "PATH": f"{self.bin}:{os.environ['PATH']}", "SONIC_DOUBLE": str(self.root)}
        done = subprocess.run(
            ["sh", "-c", self._local(command)],
            input=None if stdin is None else self._local(stdin),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env=env,
        )
        return Output(done.returncode, done.stdout, done.stderr)

    def close(self) -> None:
        pass
