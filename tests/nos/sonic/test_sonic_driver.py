"""The SONiC driver against a test double of a SONiC switch (tests/sonic_switch_double.py): the revert
is armed before the change, fires when the change is not confirmed, a confirm disarms it and saves,
a rollback (the push's answer to a failed check) and a candidate that does not apply both return the
switch to its checkpoint, and the pending change names its push."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from pathlib import Path

import pytest
from napalm.base.exceptions import CommitError

from gpufabric.drivers.registry import network_driver
from gpufabric.nos.sonic.candidate import join
from gpufabric.nos.sonic.driver import SonicDriver
from tests import revert_timer
from tests.sonic_switch_double import SonicSwitchDouble

PUSH = "gf-20261123T221500Z-a1b2c3"
BEFORE = {"DEVICE_METADATA": {"localhost": {"hostname": "leaf1", "hwsku": "ACS-MSN4700"}}, "PORT": {}}
AFTER = {
    "DEVICE_METADATA": {"localhost": {"hostname": "leaf1", "hwsku": "ACS-MSN4700"}},
    "PORT": {"Ethernet0": {"lanes": "0,1,2,3,4,5,6,7", "speed": "400000", "mtu": "9216"}},
}
FRR_BEFORE = "hostname leaf1\n"
FRR_AFTER = "hostname leaf1\nrouter bgp 65001\n neighbor 10.0.0.0 remote-as 65000\nexit\n"


def _candidate(config_db: dict[str, object], frr: str = FRR_AFTER) -> str:
    return join("leaf1", {"leaf1.config_db.json": json.dumps(config_db, indent=4), "leaf1.frr.conf": frr})


@pytest.fixture
def switch(tmp_path: Path) -> SonicSwitchDouble:
    return SonicSwitchDouble(tmp_path, BEFORE, FRR_BEFORE)


@pytest.fixture
def driver(switch: SonicSwitchDouble):
    dev = SonicDriver("192.0.2.30", "admin", "", optional_args={"transport": switch, "push_id": PUSH})
    dev.open()
    yield dev
    # A timer a failed test left behind is ended by the PID its marker names (the test's own process).
    marker = switch.root / "etc/sonic/gpufabric.pending"
    if marker.exists():
        with contextlib.suppress(ProcessLookupError, ValueError, IndexError):
            os.killpg(int(marker.read_text().split()[1]), signal.SIGKILL)


def test_the_platform_names_this_driver() -> None:
    assert network_driver("sonic") is SonicDriver


def test_the_revert_is_armed_before_the_change_and_confirm_disarms_and_saves(switch, driver) -> None:
    driver.load_replace_candidate(config=_candidate(AFTER))
    diff = driver.compare_config()
    assert '"path": "/PORT"' in diff and "+router bgp 65001" in diff
    driver.commit_config(revert_in=300)
    assert switch.journal == [f"checkpoint {PUSH}", "replace armed=True", "frr-reload gpufabric.candidate.frr.conf"]
    assert switch.running == AFTER and "router bgp 65001" in switch.frr
    assert switch.saved == BEFORE  # not saved while it awaits confirmation: a reboot comes back to BEFORE
    assert driver.has_pending_commit()
    assert driver.pending_push() == {"push_id": PUSH, "started": "2026-11-23T22:15:00Z", "controller": "unknown"}
    timer = int((switch.root / "etc/sonic/gpufabric.pending").read_text().split()[1])
    driver.confirm_commit()
    assert not driver.has_pending_commit() and driver.pending_push() is None
    assert _ends(timer)  # the timer process ended
    assert switch.saved == AFTER and switch.checkpoints() == []
    assert (switch.root / "etc/sonic/frr/frr.conf").read_text() == switch.frr
    with pytest.raises(CommitError, match="no commit is pending"):
        driver.confirm_commit()


def _ends(pid: int, within: float = 120.0) -> bool:
    """The process is gone (or a zombie) within `within` seconds: the confirm signals the timer's group, and
    on a loaded machine the signalled process may not have run yet when the confirm returns."""
    deadline = time.monotonic() + within
    while Path(f"/proc/{pid}").exists() and not _zombie(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _zombie(pid: int) -> bool:
    with contextlib.suppress(FileNotFoundError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    return True


@pytest.mark.slow
def test_an_unconfirmed_change_reverts_by_itself(switch, driver) -> None:
    """Armed for minutes and seen applied first; then the timer's sleep is ended and its own shell reverts
    (tests/revert_timer.py): a timer of a second raced the apply and the reads on a loaded machine."""
    driver.load_replace_candidate(config=_candidate(AFTER))
    driver.commit_config(revert_in=revert_timer.LONG)
    assert switch.running == AFTER and driver.has_pending_commit()
    revert_timer.fire_and_wait(switch.root / "etc/sonic/gpufabric.pending")
    assert switch.running == BEFORE and switch.frr == FRR_BEFORE
    reverted = [f"rollback {PUSH}", "frr-reload gpufabric.rollback.frr.conf", f"delete-checkpoint {PUSH}"]
    assert switch.journal[-3:] == reverted
    assert not driver.has_pending_commit() and switch.saved == BEFORE


def test_rollback_returns_to_the_checkpoint_and_disarms(switch, driver) -> None:
    driver.load_replace_candidate(config=_candidate(AFTER))
    driver.commit_config(revert_in=300)
    driver.rollback()  # what push does when the switch's checks fail after the commit
    assert switch.running == BEFORE and switch.frr == FRR_BEFORE
    assert not driver.has_pending_commit() and switch.checkpoints() == []


@pytest.mark.parametrize(
    "config_db, frr",
    [
        ({**AFTER, "PORT": {"Ethernet0": {**AFTER["PORT"]["Ethernet0"], "mtu": "9217"}}}, FRR_AFTER),
        (AFTER, "! bgp-fails\n"),
    ],
)
def test_a_candidate_that_does_not_apply_is_reverted_at_once(switch, driver, config_db, frr) -> None:
    driver.load_replace_candidate(config=_candidate(config_db, frr))
    with pytest.raises(CommitError, match="did not apply and was reverted"):
        driver.commit_config(revert_in=300)
    assert switch.running == BEFORE and switch.frr == FRR_BEFORE
    assert not driver.has_pending_commit() and switch.checkpoints() == []


def test_a_pending_change_refuses_the_next_commit(switch, driver) -> None:
    driver.load_replace_candidate(config=_candidate(AFTER))
    driver.commit_config(revert_in=300)
    other = SonicDriver("192.0.2.30", "admin", "", optional_args={"transport": switch})
    other.open()
    other.load_replace_candidate(config=_candidate(BEFORE, FRR_BEFORE))
    with pytest.raises(CommitError, match="pending confirmation"):
        other.commit_config(revert_in=300)
    assert switch.running == AFTER
    driver.rollback()


def test_without_a_timer_the_change_is_saved_at_once(switch, driver) -> None:
    driver.load_replace_candidate(config=_candidate(AFTER))
    driver.commit_config()
    assert switch.saved == AFTER and switch.checkpoints() == [] and not driver.has_pending_commit()


def test_running_config_reads_back_as_the_candidate_is_written(switch, driver) -> None:
    running = driver.get_config("running")["running"]
    assert json.loads(running.split("\n! gpufabric: frr.conf\n")[0]) == BEFORE
    assert running.endswith(FRR_BEFORE)
