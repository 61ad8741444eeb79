"""FRR's "reboot", as a method of its NAPALM driver (a mixin of FrrDriver): its daemons restarted.

In the lab a switch is a network namespace running FRR, so a switch's reboot is a restart of its FRR
daemons: `frrinit.sh restart <pathspace>` (FRR's own init script, as the lab started them), which returns
once they run again; its daemons get back the priority the lab gives them (gpufabric/lab/frr_node.py). On an FRR
host without a pathspace it is `systemctl restart frr`. FRR comes from the host's packages: there is no
image to stage, install or fall back to.
"""

from __future__ import annotations

import shlex

from gpufabric.drivers.linux_switch import LinuxSwitchDriver
from gpufabric.drivers.transport import slow_commands
from gpufabric.nos.frr.files import DeviceFiles

FRRINIT = "/usr/lib/frr/frrinit.sh"
RUN_DIR = "/var/run/frr"
CONTROL_PLANE_NICENESS = -15  # as gpufabric.lab.frr_node: the lab's stand-in for a control-plane CPU
# A restart of every daemon returns in seconds on a quiet machine; on a loaded one it has taken over a
# minute. Cut off earlier, a switch whose daemons were coming back would be reported unanswering (and left
# drained); waiting longer than this, a restart that hangs is still reported, never waited on forever.
RESTART_SECONDS = 300.0


def restart_script(pathspace: str | None) -> str:
    """The shell that restarts the switch's FRR daemons and returns once they run again."""
    if not pathspace:
        return "systemctl restart frr"
    ns = shlex.quote(pathspace)
    return (
        f"{FRRINIT} restart {ns} </dev/null >/dev/null 2>&1 || exit 1; "
        f'for f in {RUN_DIR}/{ns}/*.pid; do pid=$(cat "$f" 2>/dev/null) && '
        f'renice -n {CONTROL_PLANE_NICENESS} -p "$pid" >/dev/null 2>&1; done; '
        "exit 0"
    )


class FrrRestart(LinuxSwitchDriver):
    """`reboot` for `nornir restart`; FRR has no image steps (`nornir upgrade` refuses it)."""

    files: DeviceFiles

    def reboot(self, mode: str = "daemons") -> bool:
        """Restart the routing daemons; True: they run again when this returns (nothing to wait for)."""
        if mode != "daemons":
            raise ValueError(f"the FRR driver restarts FRR's daemons only (mode daemons), not {mode!r}")
        assert self.transport is not None, "call open() first"
        with slow_commands(self.transport, RESTART_SECONDS):
            self._run(restart_script(self.files.pathspace))
        return True
