"""Push through NAPALM's mock driver for the platforms whose drivers NAPALM ships (eos, nxos).

No EOS or NX-OS device runs here. The hosts keep their real platform (eos / nxos), which decides
how the push stages a change; the connection is NAPALM's `mock` driver answering from files. What
is shown: EOS and NX-OS both get a commit with a revert timer on the switch (EOS's commit timer, NX-OS's
configuration replace commit-timeout) and an explicit confirm, and a rollback when their post-change
checks fail. gpufabric's own NX-OS driver behind that interface is shown against a test double of a
switch in tests/nos/nxos/test_nxos_revert.py. Not shown: the drivers talking to a real device (README, "not
shown on real equipment").
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from napalm.base.mock import MockDriver
from nornir.core import Nornir
from nornir.core.inventory import ConnectionOptions, Defaults, Groups, Host, Hosts, Inventory
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir.plugins.runners import ThreadedRunner
from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

from gpufabric.fleet.expect import Expectation
from gpufabric.push import rollout
from gpufabric.push.targets import Batch
from nornir_tasks.push import PushOptions

PEERS = {"10.1.0.1": 65001, "10.1.0.3": 65001}
PORTS = ("Ethernet1", "Ethernet2")


def _bgp(up: bool) -> dict:
    peer = {
        "local_as": 65100,
        "remote_as": 65001,
        "remote_id": "10.0.0.1",
        "is_up": up,
        "is_enabled": True,
        "description": "",
        "uptime": 10 if up else -1,
        "address_family": {},
    }
    return {"global": {"router_id": "10.0.0.9", "peers": dict.fromkeys(PEERS, peer)}}


def _ifaces() -> dict:
    return {
        p: {
            "is_up": True,
            "is_enabled": True,
            "description": "",
            "last_flapped": -1.0,
            "mtu": 9214,
            "speed": 400000.0,
            "mac_address": "00:1C:73:00:00:01",
        }
        for p in PORTS
    }


def mock_dir(root: Path, name: str, diff: str, healthy_after: bool) -> Path:
    """The answers of one mocked switch; the N-th call of a method reads `<method>.N`."""
    folder = root / name
    folder.mkdir()
    files = {
        # .1: the diff every switch is read for before the rollout; .2: the same again when its batch goes out
        "load_replace_candidate.1": {},
        "compare_config.1": {"diff": diff},
        "discard_config.1": {},
        "load_replace_candidate.2": {},
        "compare_config.2": {"diff": diff},
        "discard_config.2": {},
        "commit_config.1": {},
        "confirm_commit.1": {},
        "get_bgp_neighbors.1": _bgp(True),  # before the change
        "get_interfaces.1": _ifaces(),
    }
    for n in range(2, 40):  # the post-change checks poll
        files[f"get_bgp_neighbors.{n}"] = _bgp(healthy_after)
        files[f"get_interfaces.{n}"] = _ifaces()
    for fname, data in files.items():
        (folder / fname).write_text(json.dumps(data))
    return folder


OPENED: dict[str, MockDriver] = {}  # each switch's driver, kept past the push: a batch done ends its session


@pytest.fixture
def rollbacks(monkeypatch):
    done: list[str] = []
    original, opening = MockDriver.rollback, MockDriver.open

    def rollback(self):
        done.append(self.hostname)
        original(self)

    def open_(self):
        OPENED[self.hostname] = self
        opening(self)

    OPENED.clear()
    monkeypatch.setattr(MockDriver, "rollback", rollback)
    monkeypatch.setattr(MockDriver, "open", open_)
    return done


def fleet(root: Path, specs: dict[str, tuple[str, str, bool]]) -> Nornir:
    if CONNECTION_NAME not in ConnectionPluginRegister.available:
        ConnectionPluginRegister.register(CONNECTION_NAME, Napalm)
    hosts = Hosts()
    for name, (platform, diff, healthy) in specs.items():
        hosts[name] = Host(name=name, hostname=name, username="u", password="p", platform=platform)
        hosts[name].connection_options["napalm"] = ConnectionOptions(
            platform="mock", extras={"optional_args": {"path": str(mock_dir(root, name, diff, healthy))}}
        )
    return Nornir(inventory=Inventory(hosts=hosts, groups=Groups(), defaults=Defaults()), runner=ThreadedRunner(4))


def push(nr: Nornir, batches: list[Batch]) -> rollout.Rollout:
    names = [n for b in batches for n in b.devices]
    return rollout.run(
        nr,
        plan_batches=batches,
        candidates=dict.fromkeys(names, "hostname x\n"),
        expects={n: Expectation(n, dict(PEERS), PORTS) for n in names},
        opts=PushOptions(confirm_timeout=300, check_timeout=0.0, settle=0.0),
    )


def driver(nr: Nornir, name: str) -> MockDriver:
    return OPENED[name]


def test_mock_eos_commits_with_a_timer_and_confirms(tmp_path, rollbacks):
    nr = fleet(tmp_path, {"eos1": ("eos", "+hostname x", True)})
    result = push(nr, [Batch(1, "canary", ("eos1",))])
    assert result.converged and result.outcomes["eos1"].status == "changed"
    assert CONNECTION_NAME not in nr.inventory.hosts["eos1"].connections  # its batch done, its session ended
    dev = driver(nr, "eos1")
    assert dev.calls["commit_config"] == 1 and dev.calls["confirm_commit"] == 1
    assert not dev.has_pending_commit() and rollbacks == []


def test_mock_nxos_commits_with_a_switch_side_timer_and_confirms(tmp_path, rollbacks, monkeypatch):
    timers: list[int | None] = []
    original = MockDriver.commit_config

    def commit(self, message="", revert_in=None):
        timers.append(revert_in)
        original(self, message, revert_in)

    monkeypatch.setattr(MockDriver, "commit_config", commit)
    nr = fleet(tmp_path, {"nxos1": ("nxos", "+hostname x", True)})
    result = push(nr, [Batch(1, "canary", ("nxos1",))])
    assert result.converged and result.outcomes["nxos1"].status == "changed"
    dev = driver(nr, "nxos1")
    # The revert is armed on the switch with the push's confirm timeout, then confirmed.
    assert timers == [300] and dev.calls["confirm_commit"] == 1
    assert not dev.has_pending_commit() and rollbacks == []


def test_mock_nxos_failing_its_checks_is_rolled_back(tmp_path, rollbacks):
    nr = fleet(tmp_path, {"nxos1": ("nxos", "+router bgp 65100", False), "eos1": ("eos", "+hostname x", True)})
    result = push(nr, [Batch(1, "canary", ("nxos1",)), Batch(2, "fd-2", ("eos1",))])
    bad = result.outcomes["nxos1"]
    assert bad.status == "rolled back" and "did not re-establish" in bad.reason
    assert rollbacks == ["nxos1"] and not result.converged
    assert result.outcomes["eos1"].status == "skipped"  # the rollout stops at the first failure


def test_mock_unchanged_device_is_not_committed(tmp_path, rollbacks):
    nr = fleet(tmp_path, {"eos1": ("eos", "", True), "nxos1": ("nxos", "", True)})
    result = push(nr, [Batch(1, "canary", ("eos1", "nxos1"))])
    assert {o.status for o in result.outcomes.values()} == {"unchanged"}
    assert all("commit_config" not in driver(nr, n).calls for n in ("eos1", "nxos1"))


def test_mock_nxos_check_that_raises_after_the_commit_is_rolled_back(tmp_path, rollbacks):
    nr = fleet(tmp_path, {"nxos1": ("nxos", "+hostname x", True)})
    # The checks after the commit: the session to the switch drops (the mock raises what the file names).
    dropped = {"exception": "ConnectionResetError", "args": ["session dropped"], "kwargs": {}}
    (tmp_path / "nxos1" / "get_bgp_neighbors.2").write_text(json.dumps(dropped))
    result = push(nr, [Batch(1, "canary", ("nxos1",))])
    outcome = result.outcomes["nxos1"]
    assert outcome.status == "rolled back" and "session dropped" in outcome.reason
    assert rollbacks == ["nxos1"] and not result.converged


def test_mock_a_failed_confirm_stops_the_rollout(tmp_path, rollbacks, monkeypatch):
    nr = fleet(tmp_path, {"eos1": ("eos", "+hostname x", True), "eos2": ("eos", "+hostname x", True)})

    def refuse(self):
        raise ConnectionError("confirm lost")

    monkeypatch.setattr(MockDriver, "confirm_commit", refuse)
    result = push(nr, [Batch(1, "canary", ("eos1",)), Batch(2, "fd-2", ("eos2",))])
    # Its batch is rolled back, the switch whose confirm failed too (a confirm can fail after the switch took it).
    assert result.outcomes["eos1"].status == "rolled back" and rollbacks == ["eos1"]
    assert result.outcomes["eos1"].reason == "confirm failed: ConnectionError: confirm lost; the batch is rolled back"
    assert result.outcomes["eos2"].status == "skipped"
    assert result.stopped_at is not None and result.stopped_at.number == 1


def test_mock_diffs_and_reasons_never_show_a_secret(tmp_path, rollbacks):
    canary = "community-canary-93f1"
    nr = fleet(tmp_path, {"eos1": ("eos", f"-snmp-server community old\n+snmp-server community {canary} ro", True)})
    result = rollout.run(
        nr,
        plan_batches=[Batch(1, "canary", ("eos1",))],
        candidates={"eos1": f"snmp-server community {canary} ro\n"},
        expects={"eos1": Expectation("eos1", dict(PEERS), PORTS)},
        opts=PushOptions(confirm_timeout=300, check_timeout=0.0, settle=0.0, dry_run=True, masked=(canary,)),
    )
    outcome = result.outcomes["eos1"]
    assert outcome.status == "would change"
    assert canary not in outcome.diff and "snmp-server community ******** ro" in outcome.diff
    assert canary not in repr(outcome.__dict__) and canary not in repr(PushOptions(masked=(canary,)))


def test_mock_a_switch_that_cannot_be_read_fails_the_push_before_anything_changes(tmp_path, rollbacks):
    nr = fleet(tmp_path, {"eos1": ("eos", "+hostname x", True), "eos2": ("eos", "+hostname x", True)})
    lost = {"exception": "ConnectionResetError", "args": ["session dropped"], "kwargs": {}}
    (tmp_path / "eos2" / "compare_config.1").write_text(json.dumps(lost))
    result = push(nr, [Batch(1, "canary", ("eos1",)), Batch(2, "fd-2", ("eos2",))])
    assert result.unreadable == ["eos2"] and not result.converged
    assert result.outcomes["eos2"].status == "failed" and "session dropped" in result.outcomes["eos2"].reason
    assert result.outcomes["eos1"].status == "skipped" and "nothing was changed" in result.outcomes["eos1"].reason
    assert "commit_config" not in driver(nr, "eos1").calls and rollbacks == []
    assert driver(nr, "eos2").calls["discard_config"] == 1  # its loaded candidate is not left behind


def test_mock_only_switches_with_a_diff_go_out_and_the_first_of_them_is_the_canary(tmp_path, rollbacks):
    nr = fleet(tmp_path, {"eos1": ("eos", "", True), "eos2": ("eos", "+hostname x", True)})
    result = push(nr, [Batch(1, "canary", ("eos1",)), Batch(2, "fd-2", ("eos2",))])
    assert result.converged and [(b.domain, b.devices) for b in result.batches] == [("canary (fd-2)", ("eos2",))]
    assert result.outcomes["eos1"].status == "unchanged" and "commit_config" not in driver(nr, "eos1").calls
    assert result.outcomes["eos2"].status == "changed" and driver(nr, "eos2").calls["confirm_commit"] == 1
