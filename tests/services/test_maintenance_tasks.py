"""The Nornir maintenance tasks: what they report from a driver's drain, undrain and status."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from gpufabric.drivers.maintenance import DrainHeldError, DrainMark, status
from nornir_tasks import maintenance as tasks

PUSH = "gf-20261125T140000Z-abc123"
OTHER = "gf-20261125T130000Z-def456"


class Switch:
    """A driver double: a marker and whether the vendor's mechanism is in effect."""

    def __init__(self, mark: DrainMark | None = None, applied: bool = False, apply: bool = True) -> None:
        self.mark, self.applied, self.apply = mark, applied, apply
        self.reads = 0  # maintenance_status calls: each a reading of the switch

    def maintenance_status(self) -> dict[str, Any]:
        self.reads += 1
        return status(self.mark, self.applied, "test mechanism")

    def drain(self, push_id: str, reason: str, by: str | None = None) -> None:
        self.mark = self.mark or DrainMark.new(push_id, reason, "test mechanism", by)
        self.applied = self.apply

    def undrain(self, push_id: str, force: bool = False) -> None:
        if self.mark is not None and self.mark.push_id != push_id and not force:
            raise DrainHeldError(f"held by {self.mark.by}")
        self.mark, self.applied = None, False


def _task(switch: Switch) -> Any:
    host = SimpleNamespace(name="sw1", get_connection=lambda *_: switch)
    return SimpleNamespace(host=host, nornir=SimpleNamespace(config=None))


def test_a_drain_changes_once_and_fails_when_the_mechanism_is_not_in_effect():
    switch = Switch()
    first = tasks.drain(_task(switch), PUSH, "psu", by="alice@ctl")
    assert first.changed and not first.failed and first.result["by"] == "alice@ctl"
    assert first.diff.startswith("+ drained: test mechanism (by alice@ctl")
    again = tasks.drain(_task(switch), OTHER, "again")
    assert not again.changed and not again.failed and again.result["push_id"] == PUSH
    broken = tasks.drain(_task(Switch(apply=False)), PUSH, "x")
    assert broken.failed  # marked, but the vendor's mechanism did not take


@pytest.mark.parametrize("force", [False, True])
def test_an_undrain_of_another_s_drain_is_held_unless_forced(force):
    switch = Switch(DrainMark.new(OTHER, "person", "test mechanism", "bob@ctl"), applied=True)
    done = tasks.undrain(_task(switch), PUSH, force=force)
    assert not done.failed
    if force:
        assert done.changed and not done.result["drained"] and done.diff.startswith("- drained")
    else:
        assert not done.changed and done.result["drained"] and done.result["held_by"] == "bob@ctl"


def test_status_changes_nothing_and_an_undrained_switch_undrains_to_nothing():
    switch = Switch()
    assert tasks.status(_task(switch)).result["drained"] is False
    done = tasks.undrain(_task(switch), PUSH)
    assert not done.changed and not done.failed


def test_a_push_drains_and_undrains_reading_the_switch_only_after_and_still_fails_what_did_not_take():
    switch = Switch()
    drained = tasks.drain(_task(switch), PUSH, "psu", read_before=False)
    assert drained.changed and not drained.failed and drained.result["drained"] and switch.reads == 1
    broken = Switch(apply=False)
    assert tasks.drain(_task(broken), PUSH, "x", read_before=False).failed and broken.reads == 1
    back = tasks.undrain(_task(switch), PUSH, read_before=False)
    assert back.changed and not back.failed and not back.result["drained"] and back.diff == "- drained"
    assert switch.reads == 2


def test_a_push_undrain_without_reading_first_still_leaves_another_holders_drain():
    switch = Switch(DrainMark.new(OTHER, "person", "test mechanism", "bob@ctl"), applied=True)
    held = tasks.undrain(_task(switch), PUSH, read_before=False)
    assert not held.failed and not held.changed and held.result["held_by"] == "bob@ctl" and held.result["drained"]
