"""A switch an earlier task of the same fleet failed on is still drained and undrained.

A push runs its stage, confirm and rollback on one Nornir; Nornir remembers each host a task failed on
(`nr.data.failed_hosts`) and skips it in later runs unless told otherwise. A leaf whose change was rolled
back is such a host, and it is drained: its undrain must still run, or it stays out of service (and its
servers' paths with it) after the push has ended. The maintenance task is replaced by a recorder: what is
tested is which switches the service runs it on.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from nornir.core import Nornir
from nornir.core.inventory import Defaults, Groups, Host, Inventory
from nornir.core.task import Result, Task
from nornir.plugins.runners import ThreadedRunner

from gpufabric.fleet.push_id import new_push_id
from gpufabric.maintenance import service
from gpufabric.maintenance.service import Settle, drain_switches, undrain_switches

NAMES = ["cmp-su1-leaf1", "cmp-su1-leaf2"]


def _fleet() -> Any:
    hosts = {n: Host(name=n) for n in NAMES}
    nr = Nornir(inventory=Inventory(hosts=hosts, groups=Groups(), defaults=Defaults()), runner=ThreadedRunner(2))
    return SimpleNamespace(nr=nr, names=NAMES, access=SimpleNamespace(lab=True))


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []

    def recorded(drained: bool):
        def task(task: Task, **_: Any) -> Result:
            seen.append(task.host.name)
            return Result(host=task.host, changed=True, result={"drained": drained})

        return task

    monkeypatch.setattr(service.tasks, "drain", recorded(True))
    monkeypatch.setattr(service.tasks, "undrain", recorded(False))
    return seen


def test_a_switch_whose_change_failed_is_undrained_all_the_same(ran: list[str]) -> None:
    fleet = _fleet()
    fleet.nr.data.failed_hosts.add("cmp-su1-leaf2")  # its stage failed and was rolled back
    found = undrain_switches(fleet, NAMES, new_push_id(), settle=Settle(wait=False), read_before=False)
    assert sorted(ran) == NAMES
    assert [(s.device, s.failed, s.state) for s in found.switches] == [
        ("cmp-su1-leaf1", False, {"drained": False}),
        ("cmp-su1-leaf2", False, {"drained": False}),
    ]


def test_a_switch_an_earlier_task_failed_on_is_drained_all_the_same(ran: list[str]) -> None:
    fleet = _fleet()
    fleet.nr.data.failed_hosts.add("cmp-su1-leaf1")
    found = drain_switches(fleet, NAMES, new_push_id(), reason="test", settle=Settle(wait=False))
    assert sorted(ran) == NAMES and not any(s.failed for s in found.switches)
