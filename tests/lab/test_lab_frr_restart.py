"""The FRR driver's restart against real FRR (root only): its daemons come back with their saved
configuration, also when FRR's own init script failed to hand it to them.

FRR's init script loads each daemon's part of frr.conf once, as watchfrr starts it. On a loaded machine a
lab spine's daemons all came back empty, and the rolling restart could only wait for sessions that never
came. Here the same comeback is made on purpose: an init script of the test's own runs FRR's real one with
frr.conf out of its sight (FRR then skips the load and says so), which leaves the daemons running and empty.
The driver's restart script must notice and load the file; a restart whose load worked must not load it twice.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpufabric.lab import frr_node
from gpufabric.nos.frr.restart import NOT_RUNNING, RELOADED, START_AGAIN, STARTED_AGAIN, restart_script

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="real FRR in a network namespace needs root"),
    pytest.mark.own_lab,  # no lab: a namespace and FRR pathspace of its own (NODE), beside any lab
]

NODE = "gf-restart-load"  # a namespace and FRR pathspace of this test's own
CONFIG = f"""\
frr defaults datacenter
hostname {NODE}
service integrated-vtysh-config
!
interface lo
 ip address 10.99.0.1/32
exit
!
router bgp 65001
 bgp router-id 10.99.0.1
 neighbor 10.99.9.9 remote-as 65002
 neighbor 10.99.9.9 description a peer that never answers
exit
!
"""
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "VTYSH_HISTFILE": "/dev/null"}
# The test's own starts of FRR run at the daemons' niceness, as the lab's and the driver's do (frr_node.start).
NICED = f"nice -n {frr_node.CONTROL_PLANE_NICENESS}"
# watchfrr's start job (watchfrr.sh: the daemons, then their load) still running, waited for before frr.conf is
# put back: bounded.
HIDING_INIT = """\
#!/bin/sh
# FRR's init script with the saved frr.conf out of its sight while it runs (and until watchfrr's jobs end).
conf=/etc/frr/$2/frr.conf
mv "$conf" "$conf.hidden"
/usr/lib/frr/frrinit.sh "$@"; rc=$?
n=0; while pgrep -f '/usr/lib/frr/watchfrr[.]sh' >/dev/null && [ $n -lt 300 ]; do sleep 1; n=$((n+1)); done
mv "$conf.hidden" "$conf"
exit $rc
"""
# FRR's init script, whose restart returns with nothing of FRR left running, as two lab switches restarted side by
# side on a loaded machine came back: watchfrr gone, and with it every daemon.
LOSING_INIT = """\
#!/bin/sh
/usr/lib/frr/frrinit.sh "$@"; rc=$?
if [ "$1" = restart ]; then /usr/lib/frr/frrinit.sh stop "$2" >/dev/null 2>&1; fi
exit $rc
"""


@pytest.fixture
def frr() -> Iterator[Path]:
    """FRR in a namespace of its own, started from CONFIG saved as its frr.conf."""
    if subprocess.run(["which", "vtysh"], capture_output=True, check=False).returncode != 0:
        pytest.skip("FRR is not installed (scripts/test.sh installs it)")
    subprocess.run(["ip", "netns", "add", NODE], check=True)
    try:
        folder = frr_node.write_pathspace(NODE)
        (folder / "frr.conf").write_text(CONFIG)
        frr_node.start(NODE, Path(f"/proc/{os.getpid()}/ns/uts"))
        yield folder
    finally:
        subprocess.run([frr_node.FRRINIT, "stop", NODE], capture_output=True, check=False, env=ENV)
        subprocess.run(["ip", "netns", "del", NODE], capture_output=True, check=False)
        for leftover in (frr_node.etc_dir(NODE), frr_node.run_dir(NODE)):
            subprocess.run(["rm", "-rf", str(leftover)], check=False)


def _running() -> str:
    done = subprocess.run(["vtysh", "-N", NODE, "-c", "show running-config"], capture_output=True, text=True,
                          check=False, env=ENV)  # fmt: skip
    assert done.returncode == 0, f"vtysh: {done.stderr}"
    return done.stdout


def _sh(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=600, check=False, env=ENV)


def _holds_config(running: str) -> bool:
    return "router bgp 65001" in running and "ip address 10.99.0.1/32" in running


def test_daemons_that_came_back_empty_get_their_saved_configuration(frr, tmp_path):
    assert _holds_config(_running())
    init = tmp_path / "frrinit-hiding.sh"
    init.write_text(HIDING_INIT)
    init.chmod(0o755)
    # The failure itself, on FRR's own init script: the daemons run again and hold nothing of frr.conf.
    assert _sh(f"{NICED} {init} restart {NODE} </dev/null >/dev/null 2>&1").returncode == 0
    assert frr_node.running(NODE) and not _holds_config(_running())
    assert _sh(f"vtysh -N {NODE} -b").returncode == 0 and _holds_config(_running())  # as it was
    # The driver's restart through the same init script: FRR is back with its configuration, and says how.
    done = _sh(restart_script(NODE, init=str(init)))
    assert done.returncode == 0, done.stderr
    assert _holds_config(_running()), _running()
    assert RELOADED in done.stderr
    assert (frr / "frr.conf").read_text() == CONFIG  # the saved file is as it was


def test_a_restart_whose_load_worked_loads_nothing_twice(frr):
    # The lab's start returned once FRR's own load had ended: what the restart compares with is the whole file.
    assert _holds_config(_running())
    pids = frr_node.pids(NODE)
    done = _sh(restart_script(NODE))
    assert done.returncode == 0, done.stderr
    assert _holds_config(_running())
    assert RELOADED not in done.stderr, done.stderr  # FRR's own load held: the running configuration is unchanged
    after = frr_node.pids(NODE)
    assert set(after) == set(pids) and all(after[d] != pids[d] for d in ("zebra", "bgpd")), (pids, after)  # restarted
    for pid in after.values():
        assert os.getpriority(os.PRIO_PROCESS, pid) == frr_node.CONTROL_PLANE_NICENESS


def test_a_restart_after_which_nothing_of_frr_runs_starts_frr_again(frr, tmp_path):
    init = tmp_path / "frrinit-losing.sh"
    init.write_text(LOSING_INIT)
    init.chmod(0o755)
    # The failure itself, on FRR's own init script: it returns 0, and nothing of FRR runs.
    assert _sh(f"{NICED} {init} restart {NODE} </dev/null >/dev/null 2>&1").returncode == 0
    assert not frr_node.running(NODE) and frr_node.pids(NODE) == {}
    assert _sh(f"{NICED} {frr_node.FRRINIT} start {NODE} </dev/null >/dev/null 2>&1").returncode == 0  # as it was
    # The driver's restart through the same init script: FRR runs again, with its configuration, and says how.
    done = _sh(restart_script(NODE, init=str(init)))
    assert done.returncode == 0, done.stderr
    assert done.stderr.count(STARTED_AGAIN) == 1, done.stderr
    assert frr_node.running(NODE) and _holds_config(_running()), _running()
    for pid in frr_node.pids(NODE).values():
        assert os.getpriority(os.PRIO_PROCESS, pid) == frr_node.CONTROL_PLANE_NICENESS


def test_a_restart_after_which_frr_never_runs_fails_at_once_naming_it(frr, tmp_path):
    init = tmp_path / "frrinit-never.sh"
    init.write_text(LOSING_INIT.replace('[ "$1" = restart ]', '[ "$1" = restart ] || [ "$1" = start ]'))
    init.chmod(0o755)
    done = _sh(restart_script(NODE, init=str(init)))
    assert done.returncode == 1
    assert done.stderr.count(STARTED_AGAIN) == START_AGAIN and NOT_RUNNING in done.stderr, done.stderr
    assert not frr_node.running(NODE)
