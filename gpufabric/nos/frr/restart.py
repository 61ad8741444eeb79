"""FRR's "reboot", as a method of its NAPALM driver (a mixin of FrrDriver): its daemons restarted.

In the lab a switch is a network namespace running FRR, so a switch's reboot is a restart of its FRR
daemons: `frrinit.sh restart <pathspace>` (FRR's own init script, as the lab started them), which returns
once they run again; its daemons get back the priority the lab gives them (gpufabric/lab/frr_node.py). On an FRR
host without a pathspace it is `systemctl restart frr`. FRR comes from the host's packages: there is no
image to stage, install or fall back to.

FRR's init script loads the saved frr.conf once, in the job watchfrr starts the daemons with (`watchfrr.sh
restart all`: the daemons, then `vtysh -b`), and nothing tries again. On a loaded machine a whole switch's
daemons have come back with none of it: running, answering, and routing nothing, which the restart could only
report after its wait ran out. So the script compares FRR's running configuration after the restart with the
one before it, and where they differ it loads the saved file once more (`vtysh -b`: the configuration a daemon
already holds is applied again and changes nothing). Where the first load worked, nothing is loaded twice.

On a loaded machine two lab switches restarted side by side have also come back with nothing running at all:
the init script returned, and watchfrr, which starts and watches the daemons, was gone a moment later, so no
daemon came back and the rolling restart waited out its bound. On an FRR host its service manager starts FRR
again when watchfrr ends (FRR's unit restarts it always); a lab switch has none. So the script looks for
watchfrr once the restart has settled and, when it is not running, starts FRR again (twice at most, and says
so); still not running, the restart fails at once, naming it, instead of the rollout waiting for a switch that
cannot come back. Either repair is reported: the rollout's record of the switch carries it (Restarted's notes),
so a switch that needed one is seen, not only one that failed.
"""

from __future__ import annotations

import shlex

from gpufabric.drivers.images import Restarted
from gpufabric.drivers.linux_switch import LinuxSwitchDriver
from gpufabric.drivers.switch_paths import PATHSPACE
from gpufabric.drivers.transport import checked, slow_commands
from gpufabric.nos.frr.files import DeviceFiles, boot_loading

FRRINIT = "/usr/lib/frr/frrinit.sh"
RUN_DIR = "/var/run/frr"
CONTROL_PLANE_NICENESS = -15  # as gpufabric.lab.frr_node: the lab's stand-in for a control-plane CPU
# A restart of every daemon returns in seconds on a quiet machine; on a loaded one it has taken over a
# minute. Cut off earlier, a switch whose daemons were coming back would be reported unanswering (and left
# drained); waiting longer than this, a restart that hangs is still reported, never waited on forever.
RESTART_SECONDS = 600.0
LOAD_WAIT_SECONDS = 120  # per start of FRR, within RESTART_SECONDS
START_AGAIN = 2  # times FRR is started again when watchfrr is gone after the restart
RELOADED = "FRR came back without all of its saved configuration: loaded it again (vtysh -b)"
STARTED_AGAIN = "FRR's watchfrr was not running after the restart: started FRR again"
NOT_RUNNING = "FRR's watchfrr is not running after the restart, nor after starting FRR again"
SETTLE_SECONDS = 2  # after a start's loads: a watchfrr that ends at once has ended by then
REPAIRS = (STARTED_AGAIN, RELOADED)  # what a restart that worked may report


def starts_wait(pathspace: str, run_dir: str = RUN_DIR, seconds: int = LOAD_WAIT_SECONDS) -> str:
    """Shell that returns once no daemon of the pathspace is being started or loaded, or after `seconds`.

    watchfrr starts the daemons through a job of its own (`watchfrr.sh restart all`, FRR's frrcommon.sh: each
    daemon, then `vtysh -N <pathspace> -b`, the whole frr.conf; a daemon it starts again later, `watchfrr.sh
    start <daemon>`, loads its own part, `-b -d <daemon>`). The init script returns once every daemon answers, or
    after watchfrr's startup timeout (55 s), so the job may still run then. The wait lasts while a load runs or
    this pathspace's watchfrr has a job running: a job between its daemons' start and its load runs no vtysh yet,
    and a wait for the load alone would end there (the comparison after it would find a daemon empty and load
    frr.conf a second time). The load's pattern does not match this script's own command line (`sh -c ...`)."""
    ns = shlex.quote(pathspace)
    watchfrr = f'"$(cat {shlex.quote(run_dir)}/{ns}/watchfrr.pid 2>/dev/null)"'
    starting = f"pgrep -f -- {boot_loading(pathspace)} >/dev/null || pgrep -P {watchfrr} >/dev/null 2>&1"
    return f"n=0; while {{ {starting}; }} && [ $n -lt {seconds} ]; do sleep 1; n=$((n+1)); done"


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
    # A daemon's start or load still running when the init script returns: waited for, bounded (starts_wait).
    settled = f"{starts_wait(pathspace)}; sleep {SETTLE_SECONDS}"
    watching = f'kill -0 "$(cat {RUN_DIR}/{ns}/watchfrr.pid 2>/dev/null)" 2>/dev/null'
    # FRR starts at the lab's control-plane niceness, as the lab starts it (gpufabric/lab/frr_node.py): beside
    # other switches' daemons at that niceness, a start at the default priority is starved past watchfrr's
    # startup timeout. `nice` adds to the login shell's niceness (0); each daemon is reniced to it after.
    niced = f"nice -n {CONTROL_PLANE_NICENESS}"
    return (
        f"before=$({running}); "
        f"{niced} {init} restart {ns} </dev/null >/dev/null 2>&1 || exit 1; "
        f"{settled}; "
        f"tries=0; while ! {watching} && [ $tries -lt {START_AGAIN} ]; do "
        f"echo {shlex.quote(STARTED_AGAIN)} >&2; "
        f"{init} stop {ns} </dev/null >/dev/null 2>&1; {niced} {init} start {ns} </dev/null >/dev/null 2>&1; "
        f"{settled}; tries=$((tries+1)); done; "
        f"{watching} || {{ echo {shlex.quote(NOT_RUNNING)} >&2; exit 1; }}; "
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

    def reboot(self, mode: str = "daemons") -> Restarted:
        """Restart the routing daemons; they run again when this returns (nothing to wait for), and the
        repairs the restart needed are its notes."""
        if mode != "daemons":
            raise ValueError(f"the FRR driver restarts FRR's daemons only (mode daemons), not {mode!r}")
        assert self.transport is not None, "call open() first"
        with slow_commands(self.transport, RESTART_SECONDS):
            done = checked(self.transport, restart_script(self.files.pathspace))
        return Restarted(repairs_in(done.stderr))


def repairs_in(said: str) -> tuple[str, ...]:
    """The repairs a restart's stderr reports, in order: only the script's own sentences, whole lines; any
    other line (a switch's, whatever it holds) is not taken."""
    return tuple(line for line in said.splitlines() if line in REPAIRS)
