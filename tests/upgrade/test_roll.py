"""The rolling reboot and upgrade (gpufabric/upgrade/roll.py) against test doubles of the switches' steps
and of the drain: the order of the steps in a batch, one failure domain at a time, and where it stops."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from gpufabric.drivers.images import Installed
from gpufabric.fleet.expect import Health
from gpufabric.platforms import platform
from gpufabric.push.targets import Batch
from gpufabric.upgrade.roll import Job, State, roll
from nornir_tasks.lifecycle import Back, Before, Image, Rebooted

IMAGE = Image("4.33", "EOS64-4.33.2F.swi", "http://192.0.2.1/EOS64-4.33.2F.swi", "ab" * 64)


class Switches:
    """A test double of the steps on EOS switches: each runs `version`; `hang` never come back, `sick` come
    back failing a check they passed, `stale` come back on their old release; every step is journaled."""

    def __init__(self, names: Sequence[str], version: str = "4.32.1F") -> None:
        self.version = dict.fromkeys(names, version)
        self.previous: dict[str, str] = {}
        self.next: dict[str, str] = {}
        self.hang: set[str] = set()
        self.sick: set[str] = set()
        self.stale: set[str] = set()
        self.self_rebooting = False
        self.said: dict[str, tuple[str, ...]] = {}  # what a switch's reboot reports on the way
        self.journal: list[tuple[str, str]] = []
        self.drained: set[str] = set()

    def _log(self, step: str, names: Sequence[str]) -> None:
        self.journal += [(step, n) for n in names]

    def snapshot(self, names: list[str]) -> Mapping[str, Before | str]:
        self._log("snapshot", names)
        return {n: Before(Health(frozenset({"swp1"}), frozenset()), frozenset({("bgp-session", "x")}),
                          self.version[n]) for n in names}  # fmt: skip

    def stage(self, names: list[str], image: Image) -> Mapping[str, str | None]:
        self._log("stage", names)
        return dict.fromkeys(names)

    def install(self, names: list[str], image: Image) -> Mapping[str, Installed | str]:
        self._log("install", names)
        for n in names:
            self.next[n] = "4.33.2F"
        return {n: Installed(f"EOS64-{self.version[n]}.swi", reboots=self.self_rebooting) for n in names}

    def reboot(self, names: list[str], modes: Mapping[str, str]) -> Mapping[str, Rebooted | str]:
        self._log("reboot", names)
        assert all(n not in self.drained or True for n in names)
        return {n: self._boot(n) for n in names}

    def _boot(self, n: str) -> Rebooted:
        if n in self.next and n not in self.stale:
            self.previous[n], self.version[n] = self.version[n], self.next.pop(n)
        return Rebooted(0.0, False, self.said.get(n, ()))

    def wait_back(self, names, before, rebooted, timeout) -> Mapping[str, Back]:
        self._log("wait", names)
        if self.self_rebooting:
            for n in names:
                self._boot(n)
        return {n: Back(n not in self.hang, "not reachable" if n in self.hang else "", self.version[n], 1.0)
                for n in names}  # fmt: skip

    def findings(self, names: list[str]) -> Mapping[str, frozenset[tuple[str, str]] | str]:
        self._log("findings", names)
        extra = {("ecmp-width", "10.0.0.1/32")}
        return {n: frozenset({("bgp-session", "x")} | (extra if n in self.sick else set())) for n in names}

    def keep(self, names: list[str], image: Image) -> Mapping[str, str | None]:
        self._log("keep", names)
        return dict.fromkeys(names)

    def boot_previous(self, names, previous) -> Mapping[str, Rebooted | str]:
        self._log("boot previous", names)
        for n in names:
            self.version[n] = self.previous.get(n, self.version[n])
            self.sick.discard(n)
        return {n: Rebooted(0.0, False) for n in names}

    def release_of(self, name: str, os_version: str) -> str | None:
        return platform("eos").running_release(os_version)


class Drainer:
    def __init__(self, switches: Switches, refuse: set[str] | None = None) -> None:
        self.switches, self.refuse = switches, refuse or set()
        self.most_at_once = 0

    def drain(self, devices: Sequence[str], push_id: str, reason: str) -> dict[str, str | None]:
        self.switches._log("drain", devices)
        ok = [d for d in devices if d not in self.refuse]
        self.switches.drained |= set(ok)
        self.most_at_once = max(self.most_at_once, len(self.switches.drained))
        return {d: ("drain refused" if d in self.refuse else None) for d in devices}

    def undrain(self, devices: Sequence[str], push_id: str) -> dict[str, str | None]:
        self.switches._log("undrain", devices)
        self.switches.drained -= set(devices)
        return dict.fromkeys(devices)


NAMES = ("leaf1", "leaf2", "spine1", "spine2")
BATCHES = [Batch(1, "canary (rail 1)", ("leaf1",)), Batch(2, "rail 2", ("leaf2",)),
           Batch(3, "spines 1", ("spine1",)), Batch(4, "spines 2", ("spine2",))]  # fmt: skip


def _job(image: Image | None = None) -> Job:
    return Job("gf-20260101T000000Z-abcdef", "gpufabric test", dict.fromkeys(NAMES, "fast"), 600.0, 600.0, image)


def test_a_restart_drains_reboots_waits_checks_and_undrains_one_domain_at_a_time() -> None:
    sw = Switches(NAMES)
    drainer = Drainer(sw)
    rolled = roll(BATCHES, sw, drainer, _job(), None)
    assert rolled.ok and [rolled.outcomes[n].state for n in NAMES] == [State.DONE] * 4
    steps = [s for s, n in sw.journal if n == "leaf2"]
    assert steps == ["snapshot", "drain", "reboot", "wait", "findings", "undrain"]
    assert [n for s, n in sw.journal if s == "drain"] == list(NAMES)  # in batch order
    assert drainer.most_at_once == 1 and sw.drained == set()
    assert [t.batch for t in rolled.timings] == [1, 2, 3, 4]


def test_a_switch_that_does_not_come_back_stops_the_restart_and_stays_drained() -> None:
    sw = Switches(NAMES)
    sw.hang.add("leaf2")
    rolled = roll(BATCHES, sw, Drainer(sw), _job(), None)
    out = rolled.outcomes
    assert [out[n].state for n in NAMES] == [State.DONE, State.FAILED, State.SKIPPED, State.SKIPPED]
    assert rolled.stopped_at == 2 and out["leaf2"].drained and sw.drained == {"leaf2"}
    assert out["leaf2"].reason == "did not come back as it was: not reachable; left drained"
    assert not [s for s, n in sw.journal if n in ("spine1", "spine2")]  # later batches untouched


def test_what_a_reboot_reported_on_the_way_is_in_the_switchs_record_whether_it_held_or_not() -> None:
    """A switch whose restart needed a repair (FRR started again) is seen in the record, done or failed."""
    sw = Switches(NAMES)
    sw.said = {
        "leaf1": ("FRR started again", "FRR started again", "config loaded again"),
        "leaf2": ("FRR started again",),
    }
    sw.hang.add("leaf2")
    rolled = roll(BATCHES, sw, Drainer(sw), _job(), None)
    out = rolled.outcomes
    assert out["leaf1"].state == State.DONE and out["leaf1"].reason == "FRR started again; config loaded again"
    assert out["leaf1"].as_dict()["notes"] == ["FRR started again", "FRR started again", "config loaded again"]
    assert out["leaf2"].state == State.FAILED and out["leaf2"].reason == (
        "did not come back as it was: not reachable; left drained (the reboot said: FRR started again)"
    )
    assert out["spine1"].reason == "not attempted: the rollout stopped at batch 2" and out["spine1"].notes == ()


def test_a_switch_failing_a_check_it_passed_before_stops_the_restart() -> None:
    sw = Switches(NAMES)
    sw.sick.add("leaf1")
    rolled = roll(BATCHES, sw, Drainer(sw), _job(), None)
    assert rolled.outcomes["leaf1"].state == State.FAILED and rolled.stopped_at == 1
    assert "fails 1 check(s) it passed before: ecmp-width 10.0.0.1/32" in rolled.outcomes["leaf1"].reason


def test_a_refused_drain_reboots_nothing() -> None:
    sw = Switches(NAMES)
    rolled = roll(BATCHES, sw, Drainer(sw, refuse={"leaf1"}), _job(), None)
    assert rolled.outcomes["leaf1"].state == State.FAILED and "drain refused; nothing was rebooted" in (
        rolled.outcomes["leaf1"].reason
    )
    assert not [s for s, _n in sw.journal if s in ("reboot", "install")]


def test_an_upgrade_installs_reboots_checks_the_release_and_keeps_the_image() -> None:
    sw = Switches(NAMES)
    sw.version["spine2"] = "4.33.1F"  # already on the release: left alone
    rolled = roll(BATCHES, sw, Drainer(sw), _job(IMAGE), None)
    out = rolled.outcomes
    assert rolled.ok and [out[n].state for n in NAMES] == [State.DONE] * 3 + [State.UNCHANGED]
    assert [s for s, n in sw.journal if n == "leaf1"] == [
        "snapshot", "stage", "drain", "install", "reboot", "wait", "findings", "keep", "undrain",
    ]  # fmt: skip
    assert [s for s, n in sw.journal if n == "spine2"] == ["snapshot"]
    assert out["leaf1"].reason == "runs release 4.33 (4.33.2F)" and out["leaf1"].before == "4.32.1F"


def test_nxos_install_reboots_by_itself_and_is_not_rebooted_again() -> None:
    sw = Switches(NAMES)
    sw.self_rebooting = True
    rolled = roll(BATCHES, sw, Drainer(sw), _job(IMAGE), None)
    assert rolled.ok and not [s for s, _n in sw.journal if s == "reboot"]


@pytest.mark.parametrize("fault", ["sick", "stale"])
def test_an_upgraded_switch_that_does_not_hold_boots_its_previous_image_and_the_rollout_stops(fault: str) -> None:
    sw = Switches(NAMES)
    getattr(sw, fault).add("leaf2")
    drainer = Drainer(sw)
    rolled = roll(BATCHES, sw, drainer, _job(IMAGE), None)
    out = rolled.outcomes
    assert [out[n].state for n in NAMES] == [State.DONE, State.FELL_BACK, State.SKIPPED, State.SKIPPED]
    assert sw.version["leaf2"] == "4.32.1F" and sw.version["leaf1"] == "4.33.2F"
    if fault == "sick":  # on the new image but failing a check: booted back into the previous one
        assert ("boot previous", "leaf2") in sw.journal
        assert out["leaf2"].reason.endswith("booted its previous image (EOS64-4.32.1F.swi) again")
    else:  # it never left the previous image: nothing to boot back
        assert ("boot previous", "leaf2") not in sw.journal
        assert out["leaf2"].reason == "came back on 4.32.1F, not release 4.33; it still runs its previous image"
    assert out["leaf2"].drained and sw.drained == {"leaf2"}
    assert not [s for s, n in sw.journal if n.startswith("spine")]
