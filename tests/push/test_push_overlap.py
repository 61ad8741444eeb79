"""What a switch's stage runs side by side on a driver whose reads may overlap (`concurrent_reads`: an SSH
session, a channel per command): the health before the commit beside the candidate's load and diff, and
a check's two readings (BGP, ports) beside each other; and a driver without it read one thing at a time."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from gpufabric.fleet.expect import Expectation
from gpufabric.fleet.status import Status
from nornir_tasks import push
from nornir_tasks.push import PushOptions, stage

PEERS = {"swp1": 65001}
UP_BGP = {"global": {"peers": {"swp1": {"is_up": True, "remote_as": 65001}}}}
UP_PORTS = {"swp1": {"is_up": True}}
WAIT = 30.0  # a generous deadline: a barrier a lone thread reaches fails the test, never a busy machine


class Switch:
    """A driver double. With `meet`, the first call of each name there waits at one barrier: they pass only if
    they run at the same time (a driver reading one thing at a time breaks the barrier, and the test)."""

    def __init__(self, concurrent: bool, meet: tuple[str, ...] = (), diff: str = "+ nv set x\n") -> None:
        self.concurrent_reads = concurrent
        self.barrier = threading.Barrier(len(meet), timeout=WAIT) if meet else None
        self.meet, self.diff = set(meet), diff
        self.calls: list[tuple[str, str]] = []  # (call, thread name)
        self.lock = threading.Lock()
        self.committed = False
        self.fail_ports = False

    def _called(self, name: str) -> None:
        with self.lock:
            self.calls.append((name, threading.current_thread().name))
            first = name in self.meet
            self.meet.discard(name)
        if first and self.barrier is not None:
            self.barrier.wait()

    def get_bgp_neighbors(self) -> dict[str, Any]:
        self._called("bgp")
        return UP_BGP

    def get_interfaces(self) -> dict[str, Any]:
        self._called("ports")
        if self.fail_ports:
            raise OSError("ports unreadable")
        return UP_PORTS

    def load_replace_candidate(self, config: str) -> None:
        self._called("load")

    def compare_config(self) -> str:
        self._called("diff")
        return self.diff

    def discard_config(self) -> None:
        self._called("discard")

    def commit_config(self, revert_in: int | None = None) -> None:
        self._called("commit")
        self.committed = True

    def rollback(self) -> None:
        self._called("rollback")
        self.committed = False


def _task(switch: Switch) -> Any:
    host = SimpleNamespace(name="leaf1", platform="cumulus", get_connection=lambda *_: switch)
    return SimpleNamespace(host=host, nornir=SimpleNamespace(config=None))


def _stage(switch: Switch, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(push, "POLL", 0.0)  # the settle's polls come back at once
    opts = PushOptions(check_timeout=WAIT, settle=0.0)
    return stage(_task(switch), "candidate", Expectation("leaf1", PEERS, ("swp1",)), opts, 1).result


def test_the_health_before_the_commit_is_read_while_the_candidate_loads(monkeypatch):
    switch = Switch(concurrent=True, meet=("load", "ports"))  # the load waits for the health read, and back
    outcome = _stage(switch, monkeypatch)
    assert outcome.status == Status.STAGED and switch.committed
    names = [c for c, _ in switch.calls]
    assert names.index("ports") < names.index("commit") and names.index("bgp") < names.index("commit")


def test_a_checks_bgp_and_ports_are_read_side_by_side():
    switch = Switch(concurrent=True, meet=("bgp", "ports"))
    found = push._health(switch, Expectation("leaf1", PEERS, ("swp1",)))
    assert found.peers_up == frozenset(PEERS) and found.ports_up == frozenset({"swp1"})
    assert {t for c, t in switch.calls if c == "ports"} == {"gpufabric-read"}


def test_a_driver_without_concurrent_reads_is_read_one_thing_at_a_time(monkeypatch):
    switch = Switch(concurrent=False)
    outcome = _stage(switch, monkeypatch)
    assert outcome.status == Status.STAGED
    assert {t for _, t in switch.calls} == {threading.current_thread().name}
    names = [c for c, _ in switch.calls]
    assert names[:4] == ["load", "diff", "bgp", "ports"]  # the health read after the diff, as before


def test_a_health_read_that_fails_beside_the_load_fails_the_switch_with_nothing_committed(monkeypatch):
    switch = Switch(concurrent=True)
    switch.fail_ports = True
    outcome = _stage(switch, monkeypatch)
    assert outcome.status == Status.FAILED and "ports unreadable" in outcome.reason
    assert not switch.committed and "commit" not in [c for c, _ in switch.calls]


def test_an_unchanged_switch_waits_for_the_read_beside_it_and_commits_nothing(monkeypatch):
    switch = Switch(concurrent=True, diff="")
    switch.fail_ports = True  # what it read is not wanted: its failure is not the switch's
    outcome = _stage(switch, monkeypatch)
    assert outcome.status == Status.UNCHANGED and not switch.committed
    assert [c for c, _ in switch.calls].count("ports") == 1  # the read ran, and ended with the task


class Preparing(Switch):
    """A driver that reads what its commit needs ahead of it (`prepare_commit`, as the Cumulus driver's)."""

    def __init__(self, *args: Any, fail_prepare: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fail_prepare = fail_prepare

    def prepare_commit(self) -> None:
        self._called("prepare")
        if self.fail_prepare:
            raise OSError("status unreadable")


def test_the_commit_s_own_reads_run_beside_the_diff_and_end_before_the_commit(monkeypatch):
    switch = Preparing(concurrent=True, meet=("prepare", "diff"))  # the diff waits for them, and back
    outcome = _stage(switch, monkeypatch)
    assert outcome.status == Status.STAGED and switch.committed
    names = [c for c, _ in switch.calls]
    assert names.index("load") < names.index("prepare") < names.index("commit")
    assert {t for c, t in switch.calls if c == "prepare"} == {"gpufabric-read"}


@pytest.mark.parametrize("diff", ["", "+ nv set x\n"])
def test_a_dry_run_or_an_unchanged_switch_reads_nothing_for_a_commit_before_its_discard(monkeypatch, diff):
    dry = bool(diff)
    switch = Preparing(concurrent=True, diff=diff)
    monkeypatch.setattr(push, "POLL", 0.0)
    opts = PushOptions(check_timeout=WAIT, settle=0.0, dry_run=dry)
    outcome = stage(_task(switch), "candidate", Expectation("leaf1", PEERS, ("swp1",)), opts, 1).result
    assert outcome.status == (Status.WOULD_CHANGE if dry else Status.UNCHANGED) and not switch.committed
    names = [c for c, _ in switch.calls]
    if dry:
        assert "prepare" not in names  # a dry run reads nothing a commit would need
    else:
        assert names.index("prepare") < names.index("discard")  # the discard drops what it read


def test_a_failed_read_ahead_leaves_the_commit_to_read_for_itself(monkeypatch):
    switch = Preparing(concurrent=True, fail_prepare=True)
    outcome = _stage(switch, monkeypatch)
    assert outcome.status == Status.STAGED and switch.committed  # the driver's commit read again, and went on


def test_a_driver_without_concurrent_reads_reads_nothing_ahead(monkeypatch):
    switch = Preparing(concurrent=False)
    outcome = _stage(switch, monkeypatch)
    assert outcome.status == Status.STAGED and "prepare" not in [c for c, _ in switch.calls]


class ReadsBoth(Switch):
    """A driver that reads its running configuration and its ports in one round trip, as the Cumulus driver."""

    def get_config(self, retrieve: str = "all") -> dict[str, str]:
        self._called("running")
        return {"running": "the running configuration"}

    def get_running_and_port_states(self) -> tuple[str, dict[str, Any]]:
        self._called("running+ports")
        return "the running configuration", UP_PORTS


class _ReadsRunning(Expectation):
    @property
    def reads_running(self) -> bool:
        return True


@pytest.mark.parametrize("peers", [PEERS, {}])
def test_a_poll_reads_the_configuration_and_the_ports_at_once_beside_the_sessions(peers):
    switch = ReadsBoth(concurrent=True, meet=("running+ports", "bgp") if peers else ())
    found = push._health(switch, _ReadsRunning("leaf1", peers, ("swp1",)))
    assert found.ports_up == frozenset({"swp1"}) and found.peers_up == frozenset(peers)
    names = [c for c, _ in switch.calls]
    assert names.count("running+ports") == 1 and "running" not in names and "ports" not in names
    if peers:  # the two readings met at the barrier: side by side
        assert {t for c, t in switch.calls if c == "running+ports"} == {"gpufabric-read"}


def test_without_the_combined_read_the_configuration_and_the_ports_are_read_apart():
    switch = Switch(concurrent=True, meet=("ports", "bgp"))
    switch.get_config = lambda retrieve="all": switch._called("running") or {"running": ""}  # type: ignore[attr-defined]
    found = push._health(switch, _ReadsRunning("leaf1", PEERS, ("swp1",)))
    assert found.ports_up == frozenset({"swp1"}) and [c for c, _ in switch.calls].count("running") == 1


def _check(task: Any, wanted: str) -> Any:
    """A stand-in pending-push check: when it ran and in which process; `busy` fails the host."""
    import os
    import time

    from nornir.core.task import Result

    task.host.data["checked_in"] = os.getpid()  # what the host's own state carries to its task
    return Result(host=task.host, result=(time.monotonic(), os.getpid()), failed=wanted == "busy")


def _read(task: Any, tag: str) -> Any:
    import os
    import time

    from nornir.core.task import Result

    return Result(host=task.host, result=(time.monotonic(), os.getpid(), task.host.data.get("checked_in"), tag))


def _fleet(count: int) -> Any:
    from nornir.core import Nornir
    from nornir.core.inventory import Defaults, Groups, Host, Hosts, Inventory
    from nornir.plugins.runners import ThreadedRunner

    hosts = Hosts()
    for i in range(count):
        hosts[f"sw{i}"] = Host(name=f"sw{i}", hostname=f"sw{i}")
    return Nornir(inventory=Inventory(hosts=hosts, groups=Groups(), defaults=Defaults()), runner=ThreadedRunner(8))


@pytest.mark.parametrize("forked", [True, False])
def test_every_check_ends_before_any_read_and_each_read_follows_its_check_in_the_same_process(forked):
    import os

    from gpufabric.fleet.runner import FORK_FROM, run_checked_forked

    nr = _fleet(FORK_FROM + 6 if forked else FORK_FROM - 1)
    names = list(nr.inventory.hosts)
    wanted = {n: "busy" if n == "sw3" else "clear" for n in names}
    heard: list[int] = []
    checks, reads = run_checked_forked(
        nr, names, _check, _read, 2, check_args={"wanted": wanted}, task_args={"tag": {n: f"t-{n}" for n in names}},
        go=lambda found: heard.append(len(found)) is None,
    )  # fmt: skip
    assert heard == [len(names)]  # the word came once, with every host's check in
    assert sorted(checks) == sorted(names) and sorted(reads) == sorted(n for n in names if n != "sw3")
    assert checks["sw3"][1] and "sw3" in nr.data.failed_hosts  # a failed check: no read of that host
    assert max(t for (t, _pid), _failed in checks.values()) <= min(t for (t, *_), _failed in reads.values())
    for name, ((_t, pid, checked_in, tag), failed) in reads.items():
        assert not failed and tag == f"t-{name}" and pid == checks[name][0][1] == checked_in
    pids = {pid for (_t, pid), _failed in checks.values()}
    assert (os.getpid() not in pids and 1 <= len(pids) <= 2) if forked else pids == {os.getpid()}


@pytest.mark.parametrize("forked", [True, False])
def test_no_read_runs_when_the_checks_say_stop(forked):
    from gpufabric.fleet.runner import FORK_FROM, run_checked_forked

    nr = _fleet(FORK_FROM + 2 if forked else 3)
    names = list(nr.inventory.hosts)
    checks, reads = run_checked_forked(
        nr, names, _check, _read, 2, check_args={"wanted": dict.fromkeys(names, "clear")},
        task_args={"tag": dict.fromkeys(names, "x")}, go=lambda _found: False,
    )  # fmt: skip
    assert sorted(checks) == sorted(names) and reads == {}
