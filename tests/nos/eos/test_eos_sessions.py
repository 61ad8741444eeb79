"""EOS config sessions a killed controller left behind do not block the next push.

No EOS device runs here: `MockEapi` is a test double of eAPI's answers. It keeps a session table in the
shape EOS publishes for `show configuration sessions detail` (`sessions: {name: {state, ...}}`, states
`pending`, `pendingCommitTimer`, `completed`; from EOS 4.32 also a top-level `commitTimerSessionName`)
and follows the session commands NAPALM's eos driver and gpufabric's subclass send. The driver code,
NAPALM's included, is real.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from napalm.base.exceptions import SessionLockedException

from gpufabric.nos.eos.driver import GpufabricEOSDriver

OLD = "gf-20200101T000000Z-0a0a0a"  # a push long gone (its controller was killed)
NOW = "gf-20260101T000000Z-c0ffee"


def live_push_id() -> str:
    from gpufabric.drivers.push_id import new_push_id

    return new_push_id()


class MockEapi(GpufabricEOSDriver):
    """gpufabric's EOS driver with eAPI replaced by a test double of its answers."""

    def __init__(self, sessions: dict[str, dict[str, Any]], push_id: str = NOW, timer_name: str | None = None) -> None:
        super().__init__("eos1", "admin", "pw", optional_args={"push_id": push_id})
        self.table = sessions
        self.timer_name = timer_name  # EOS >= 4.32 names the timed session at the top level
        self.sent: list[str] = []
        self.flash: set[str] = set()

    def _run_commands(self, commands: list[str], **kwargs: Any) -> list[Any]:
        out: list[Any] = []
        for command in commands:
            self.sent.append(command)
            out.append(self._answer(command))
        return out

    def _answer(self, command: str) -> Any:
        if command.startswith("show configuration sessions"):
            shown: dict[str, Any] = {"sessions": {k: dict(v) for k, v in self.table.items()}, "maxSavedSessions": 1}
            if self.timer_name and "detail" in command:
                shown |= {"commitTimerSessionName": self.timer_name, "commitTimerExpireTime": 500.0}
            return shown
        if command == "show version":
            return {"version": "4.33.1F", "uptime": 100.0}
        if command == "dir flash:":
            return {"output": "\n".join(f"  -rw-  100  Jan 1 00:00  {name}" for name in sorted(self.flash))}
        if m := re.fullmatch(r"copy startup-config flash:(\S+)", command):
            self.flash.add(m.group(1))
        elif m := re.fullmatch(r"delete flash:(\S+)", command):
            self.flash.discard(m.group(1))
        elif m := re.fullmatch(r"configure session (\S+) commit timer \S+", command):
            self.table[m.group(1)]["state"] = "pendingCommitTimer"
        elif m := re.fullmatch(r"configure session (\S+) commit", command):
            self.table[m.group(1)]["state"] = "completed"
        elif m := re.fullmatch(r"configure session (\S+) abort", command):
            self.table.pop(m.group(1), None)
        elif m := re.fullmatch(r"configure session (\S+)", command):
            self.table.setdefault(m.group(1), {"state": "pending", "description": "", "instances": {}})
        elif m := re.fullmatch(r"show session-config named (\S+) diffs", command):
            return {"output": "--- running\n+++ session\n+hostname eos1\n"}
        return {}


def test_a_stale_session_of_ours_is_aborted_before_the_candidate_is_loaded():
    eos = MockEapi({f"gpufabric-{OLD}-1": {"state": "pending", "description": ""}})
    eos.load_replace_candidate(config="hostname eos1\n")
    abort = eos.sent.index(f"configure session gpufabric-{OLD}-1 abort")
    assert abort < eos.sent.index(f"configure session gpufabric-{NOW}-1")
    assert set(eos.table) == {f"gpufabric-{NOW}-1"} and eos.config_session == f"gpufabric-{NOW}-1"
    assert "hostname eos1" in eos.compare_config()


def test_a_session_an_earlier_connection_of_this_push_left_is_aborted_too():
    eos = MockEapi({f"gpufabric-{NOW}-1": {"state": "pending", "description": ""}})
    eos.load_replace_candidate(config="hostname eos1\n")
    assert f"configure session gpufabric-{NOW}-1 abort" in eos.sent
    assert set(eos.table) == {f"gpufabric-{NOW}-1"}  # then loaded again, fresh


def test_a_new_session_never_reuses_the_name_of_one_the_switch_keeps():
    eos = MockEapi({f"gpufabric-{NOW}-1": {"state": "completed", "description": ""}})
    eos.load_replace_candidate(config="hostname eos1\n")
    assert eos.config_session == f"gpufabric-{NOW}-2"


def test_a_pending_commit_timer_of_another_push_refuses_naming_it():
    other = live_push_id()
    eos = MockEapi({f"gpufabric-{other}-2": {"state": "pendingCommitTimer", "description": ""}})
    with pytest.raises(SessionLockedException) as refused:
        eos.load_replace_candidate(config="hostname eos1\n")
    assert other in str(refused.value) and "pending its confirm" in str(refused.value)
    assert f"gpufabric-{other}-2" in eos.table  # never aborted
    assert not any(c.startswith(f"configure session gpufabric-{NOW}") for c in eos.sent)  # nothing loaded


def test_the_timer_session_named_at_the_top_level_counts_too():
    other = live_push_id()
    name = f"gpufabric-{other}-2"
    eos = MockEapi({name: {"state": "pending", "description": ""}}, timer_name=name)
    with pytest.raises(SessionLockedException, match=other):
        eos.load_replace_candidate(config="hostname eos1\n")
    assert eos.pending_push() == {"push_id": other, "started": eos.pending_push()["started"], "controller": ""}


def test_a_session_another_push_is_loading_right_now_is_not_aborted():
    other = live_push_id()
    eos = MockEapi({f"gpufabric-{other}-1": {"state": "pending", "description": ""}})
    with pytest.raises(SessionLockedException, match=f"push {other} .* is loading"):
        eos.load_replace_candidate(config="hostname eos1\n")
    assert f"gpufabric-{other}-1" in eos.table


def test_sessions_not_made_by_gpufabric_and_finished_ones_are_left_alone():
    table = {
        "maint-window": {"state": "completed", "description": ""},
        f"gpufabric-{OLD}-1": {"state": "completed", "description": ""},
    }
    eos = MockEapi(dict(table))
    eos.load_replace_candidate(config="hostname eos1\n")
    assert not any(c.endswith(" abort") for c in eos.sent)
    assert set(table) <= set(eos.table)


def test_pending_push_names_our_timed_session_and_nothing_else():
    assert MockEapi({"maint": {"state": "pendingCommitTimer", "description": ""}}).pending_push() is None
    assert MockEapi({f"gpufabric-{OLD}-1": {"state": "pending", "description": ""}}).pending_push() is None
    timed = MockEapi({f"gpufabric-{OLD}-3": {"state": "pendingCommitTimer", "description": ""}})
    assert timed.pending_push() == {"push_id": OLD, "started": "2020-01-01T00:00:00Z", "controller": ""}


def loaded(table: dict | None = None) -> MockEapi:
    eos = MockEapi(table or {})
    eos.load_replace_candidate(config="hostname eos1\n")
    return eos


def test_commit_arms_the_timer_on_the_named_session_and_keeps_startup_under_the_push_id():
    eos = loaded()
    eos.commit_config(revert_in=120)
    assert eos.sent[-2:] == [f"copy startup-config flash:gpufabric-{NOW}-startup.cfg",
                             f"configure session gpufabric-{NOW}-1 commit timer 00:02:00"]  # fmt: skip
    assert eos.pending_push() == {"push_id": NOW, "started": "2026-01-01T00:00:00Z", "controller": ""}
    eos.confirm_commit()
    assert eos.sent[-2:] == [f"configure session gpufabric-{NOW}-1 commit", "write memory"]
    assert eos.pending_push() is None


def test_commit_without_a_timer_is_refused_before_anything_changes():
    eos = loaded()
    with pytest.raises(Exception, match="commit timer armed"):
        eos.commit_config()
    assert not any("commit" in c or c.startswith("copy") for c in eos.sent)


def test_rollback_aborts_the_pending_session_or_replaces_back_a_confirmed_change():
    pending = loaded()
    pending.commit_config(revert_in=120)
    pending.rollback()
    assert pending.sent[-1] == f"configure session gpufabric-{NOW}-1 abort" and pending.table == {}
    confirmed = loaded()
    confirmed.commit_config(revert_in=120)
    confirmed.confirm_commit()
    confirmed.rollback()
    assert confirmed.sent[-2:] == [f"configure replace flash:gpufabric-{NOW}-startup.cfg", "write memory"]


def test_rollback_leaves_another_push_pending_commit_alone_and_says_so():
    eos = loaded()
    eos.table[f"gpufabric-{OLD}-9"] = {"state": "pendingCommitTimer", "description": ""}
    with pytest.raises(Exception, match="not this push's"):
        eos.rollback()
    assert not any(c.endswith(" abort") or c.startswith("configure replace") for c in eos.sent)


def test_startup_copies_of_old_pushes_are_removed_and_recent_ones_kept():
    recent = live_push_id()
    eos = MockEapi({})
    eos.flash = {f"gpufabric-{OLD}-startup.cfg", f"gpufabric-{recent}-startup.cfg", "startup-config"}
    eos.load_replace_candidate(config="hostname eos1\n")
    assert eos.flash == {f"gpufabric-{recent}-startup.cfg", "startup-config"}
