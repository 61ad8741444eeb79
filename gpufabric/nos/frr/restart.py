"""FRR's "reboot", as a method of its NAPALM driver (a mixin of FrrDriver): its daemons restarted.

In the lab a switch is a network namespace running FRR, so a switch's reboot is a restart of its FRR
daemons: `frrinit.sh restart <pathspace>` (FRR's own init script, as the lab started them), which returns
once they run again; its daemons get back the priority the lab gives them (gpufabric/lab/frr_node.py). On an FRR
host without a pathspace it is `systemctl restart frr`. FRR comes from the host's packages: there is no
image to stage, install or fall back to.

FRR's init script hands each daemon its part of the saved frr.conf as watchfrr starts it (`vtysh -b -d
<daemon>`), once, and nothing tries again. On a loaded machine a whole switch's daemons have come back with
none of it: running, answering, and routing nothing, which the restart could only report after its wait ran
out. So the script compares FRR's running configuration after the restart with the one before it, and where
they differ it loads the saved file once more (`vtysh -b`: the configuration a daemon already holds is applied
again and changes nothing). Where the first load worked, nothing is loaded twice.
"""

from __future__ import annotations

import shlex

from gpufabric.drivers.linux_switch import PATHSPACE, LinuxSwitchDriver
from gpufabric.drivers.transport import slow_commands
from gpufabric.nos.frr.files import DeviceFiles

FRRINIT = "/usr/lib/frr/frrinit.sh"
RUN_DIR = "/var/run/frr"
CONTROL_PLANE_NICENESS = -15  # as gpufabric.lab.frr_node: the lab's stand-in for a control-plane CPU
# A restart of every daemon returns in seconds on a quiet machine; on a loaded one it has taken over a
# minute. Cut off earlier, a switch whose daemons were coming back would be reported unanswering (and left
# drained); waiting longer than this, a restart that hangs is still reported, never waited on forever.
RESTART_SECONDS = 300.0
LOAD_WAIT_SECONDS = 120  # within RESTART_SECONDS
RELOADED = "FRR came back without all of its saved configuration: loaded it again (vtysh -b)"


def restart_script(pathspace: str | None, init: str = FRRINIT) -> str:
    """The shell that restarts the switch's FRR daemons and returns once they run again with their saved
    configuration. `init`: FRR's init script (a test gives its own)."""
    if not pathspace:
        return "systemctl restart frr"
    if not PATHSPACE.fullmatch(pathspace):
        raise ValueError(f"an FRR pathspace is letters, digits, '-' and '_', not {pathspace!r}")
    ns = shlex.quote(pathspace)
    vtysh = f"env VTYSH_HISTFILE=/dev/null vtysh -N {ns}"
    running = f"{vtysh} -c 'show running-config' 2>/dev/null | sed '1,/^Current configuration:/d' | sha256sum"
    # A per-daemon load still running when the init script returns (watchfrr's jobs run `/usr/bin/vtysh -N
    # <pathspace> -b -d <daemon>`): waited for, bounded. Anchored at the command's first word, so that this
    # script's own command line (`sh -c ...`), which holds the same words, is not taken for one.
    loading = shlex.quote(f"^[^ ]*vtysh -N {pathspace} -b( |$)")
    return (
        f"before=$({running}); "
        f"{init} restart {ns} </dev/null >/dev/null 2>&1 || exit 1; "
        f"n=0; while pgrep -f -- {loading} >/dev/null && [ $n -lt {LOAD_WAIT_SECONDS} ]; do sleep 1; n=$((n+1)); done; "
        f'if [ "$({running})" != "$before" ]; then '
        f"{vtysh} -b </dev/null >/dev/null 2>&1; "
        f"echo {shlex.quote(RELOADED)} >&2; fi; "
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
