"""gpufabric's NX-OS driver arms the switch's own revert before it changes anything.

No NX-OS device runs here: `MockNexus` is a test double of a Nexus switch behind NX-API. It keeps
bootflash files, running, startup and a pending configuration replace with its commit timeout, follows
the commands the driver sends (as Cisco documents them: `configure replace bootflash:F commit-timeout S`,
`configure replace commit`, `rollback running-config file`, `checkpoint file`, `copy run startup-config`)
and reverts a pending replace when its timer lapses. A command it refuses comes back as NX-API's JSON-RPC
error does (NXAPICommandError). Its `show config-replace status` answers JSON in the shape the driver
assumes (`operation_status`, `last_operation`): that shape is gpufabric's assumption, not a capture from
a switch (see STATUS_KEY in the driver and docs/push-trust.md). The push itself (gpufabric.push.rollout
and nornir_tasks.push) is the real code; only the device is the double.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Any

import pytest
from napalm.nxapi_plumbing.errors import NXAPICommandError
from nornir.core import Nornir
from nornir.core.inventory import ConnectionOptions, Defaults, Groups, Host, Hosts, Inventory
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir.plugins.runners import ThreadedRunner

from gpufabric.fleet.expect import Expectation
from gpufabric.nos.nxos.driver import GpufabricNXOSDriver, Phase, ReplaceStatusError, parse_replace_status
from gpufabric.push import rollout
from gpufabric.push.rollout import OtherPushPendingError
from gpufabric.push.targets import Batch
from nornir_tasks.push import PushOptions

PEERS = {"10.1.0.1": 65001}
PORTS = ("Ethernet1/1",)
BEFORE = "hostname sw1\nrouter bgp 65100\n"
PUSH_A = "gf-20260101T000000Z-aaaaaa"
PUSH_B = "gf-20260101T000100Z-bbbbbb"


@dataclass
class Pending:
    file: str
    before: str
    lapses_at: float


@dataclass
class MockNexus:
    """Test double of a Nexus switch: state and the commands that change it."""

    running: str = BEFORE
    startup: str = BEFORE
    files: dict[str, str] = field(default_factory=dict)
    pending: Pending | None = None
    clock: float = 0.0
    commands: list[str] = field(default_factory=list)
    drop_on: set[str] = field(default_factory=set)  # command prefixes whose session is cut before they run
    refuse_on: dict[str, str] = field(default_factory=dict)  # command prefix -> NX-API's error for it
    ignore_on: set[str] = field(default_factory=set)  # command prefixes answered as done that change nothing
    status: str | None = None  # `operation_status` of the last replace (None: no replace recorded)
    operation: str = ""
    status_answer: Any = "as the double's state says"  # anything else: what `show config-replace status` gives
    commit_fails: bool = False  # `configure replace commit` is taken, but the switch reports the replace failed

    # the NX-API device interface NAPALM's driver calls
    def show(self, command: str, raw_text: bool = False) -> Any:
        return self._run(command)

    def show_list(self, commands: list[str], raw_text: bool = False) -> list[Any]:
        return [{"command": c, "result": self._run(c)} for c in commands]

    def config_list(self, commands: list[str]) -> list[Any]:
        return [{"msg": self._run(c)} for c in commands]

    def save(self, filename: str = "startup-config") -> bool:
        self._run(f"copy run {filename}")
        return True

    def upload(self, name: str, text: str) -> None:
        self.files[name] = text

    def lapse(self, seconds: float) -> None:
        """Time passes on the switch: a replace not committed in time is rolled back by the switch."""
        self.clock += seconds
        if self.pending is not None and self.clock >= self.pending.lapses_at:
            self.running, self.pending = self.pending.before, None
            self.status, self.operation = "Success", "rollback after the commit timeout"

    def _run(self, command: str) -> Any:
        self.commands.append(command)
        if any(command.startswith(p) for p in self.drop_on):
            raise ConnectionResetError(f"session dropped during `{command}`")
        for prefix, message in self.refuse_on.items():
            if command.startswith(prefix):
                raise NXAPICommandError(command, message)
        if any(command.startswith(p) for p in self.ignore_on):
            return "Done."
        return self._answer(command)

    def _answer(self, command: str) -> Any:
        if m := re.fullmatch(r"checkpoint file bootflash:(\S+)", command):
            self.files[m.group(1)] = self.running
        elif m := re.fullmatch(r"delete bootflash:(\S+)", command):
            self.files.pop(m.group(1), None)
        elif m := re.fullmatch(r"show file bootflash:(\S+) md5sum", command):
            return hashlib.md5(self.files[m.group(1)].encode()).hexdigest()
        elif m := re.fullmatch(r"show file bootflash:(\S+)", command):
            if m.group(1) not in self.files:  # NX-API answers a failed command with its JSON-RPC error
                raise NXAPICommandError(command, "No such file or directory")
            return self.files[m.group(1)]
        elif m := re.fullmatch(r"show diff rollback-patch file bootflash:(\S+) file bootflash:(\S+)", command):
            old, new = (_body(self.files[m.group(i)]).splitlines() for i in (1, 2))
            patch = [f"no {line}" for line in old if line not in new] + [line for line in new if line not in old]
            return "#Generating Rollback Patch\n" + ("\n".join(patch) or "Rollback Patch is Empty")
        elif m := re.fullmatch(r"configure replace bootflash:(\S+) commit-timeout (\d+)", command):
            if self.pending is not None:
                raise NXAPICommandError(command, "a configuration replace is already pending")
            self.pending = Pending(m.group(1), self.running, self.clock + int(m.group(2)))
            self.running = _body(self.files[m.group(1)])
            self.status, self.operation = "Waiting for commit", command
            return "Configure replace completed successfully"
        elif command == "configure replace commit":
            if self.commit_fails:
                self.status = "Failed"  # the change stays pending: the switch's timer reverts it
                return ""
            self.pending = None
            self.status = "Success"
        elif command == "show config-replace status":
            if self.status_answer != "as the double's state says":
                return self.status_answer
            if self.status is None:
                return None  # NX-API's body for a command with no output
            return {"operation_status": self.status, "last_operation": self.operation}
        elif m := re.fullmatch(r"rollback running-config file bootflash:(\S+)", command):
            self.running = _body(self.files[m.group(1)])
            return "Rollback completed successfully"
        elif command.startswith("copy run"):
            self.startup = self.running
        elif command == "dir bootflash:":
            return "\n".join(f"  100  Jan 01 00:00:00 2026  {name}" for name in sorted(self.files))
        return ""


def _body(text: str) -> str:
    """A configuration file's lines without its comments (as NX-OS reads `!` lines)."""
    return "".join(line + "\n" for line in text.splitlines() if not line.startswith("!"))


class MockNexusDriver(GpufabricNXOSDriver):
    """gpufabric's NX-OS driver wired to a MockNexus instead of NX-API and SCP (a test double's plumbing;
    every decision is the real driver's). BGP and interface state come from the double's `healthy`."""

    switches: dict[str, MockNexus] = {}  # noqa: RUF012 (the test's registry of doubles, by host)
    healthy: dict[str, list[bool]] = {}  # noqa: RUF012

    def open(self) -> None:
        self.device = self.switches[self.hostname]  # type: ignore[assignment]
        self._check_release({"nxos_ver_str": "10.4(2)"})

    def _upload(self, name: str, text: str) -> None:
        self.switches[self.hostname].upload(name, text)

    def _health(self) -> bool:
        states = self.healthy[self.hostname]
        return states.pop(0) if len(states) > 1 else states[0]

    def get_bgp_neighbors(self) -> dict:
        self.switches[self.hostname]._run("show bgp sessions")
        up = self._health()
        peer = {"local_as": 65100, "remote_as": 65001, "remote_id": "10.0.0.1", "is_up": up, "is_enabled": True,
                "description": "", "uptime": 10, "address_family": {}}  # fmt: skip
        return {"global": {"router_id": "10.0.0.9", "peers": dict.fromkeys(PEERS, peer)}}

    def get_interfaces(self) -> dict:
        return {p: {"is_up": True, "is_enabled": True, "description": "", "last_flapped": -1.0, "mtu": 9216,
                    "speed": 400000.0, "mac_address": "00:00:00:00:00:01"} for p in PORTS}  # fmt: skip


class MockNexusConnection:
    """nornir_napalm's connection shape, opening the double's driver."""

    def open(self, hostname: Any, username: Any, password: Any, port: Any, platform: Any,
             extras: Any = None, configuration: Any = None) -> None:  # fmt: skip
        self.connection = MockNexusDriver(hostname, username, password, **(extras or {}))
        self.connection.open()

    def close(self) -> None:
        pass


@pytest.fixture
def switch(monkeypatch) -> MockNexus:
    monkeypatch.setitem(ConnectionPluginRegister.available, "napalm", MockNexusConnection)
    sw = MockNexus()
    monkeypatch.setattr(MockNexusDriver, "switches", {"sw1": sw})
    monkeypatch.setattr(MockNexusDriver, "healthy", {"sw1": [True]})
    return sw


def push(candidate: str, *, push_id: str = PUSH_A, dry_run: bool = False) -> rollout.Rollout:
    host = Host(name="sw1", hostname="sw1", username="admin", password="pw", platform="nxos")
    host.connection_options["napalm"] = ConnectionOptions(extras={"optional_args": {"push_id": push_id}})
    nr = Nornir(inventory=Inventory(hosts=Hosts({"sw1": host}), groups=Groups(), defaults=Defaults()),
                runner=ThreadedRunner(1))  # fmt: skip
    try:
        return rollout.run(
            nr,
            plan_batches=[Batch(1, "canary", ("sw1",))],
            candidates={"sw1": candidate},
            expects={"sw1": Expectation("sw1", dict(PEERS), PORTS)},
            opts=PushOptions(confirm_timeout=120, check_timeout=0.0, settle=0.0, dry_run=dry_run),
        )
    finally:
        nr.close_connections()


NEW = "hostname sw1\nrouter bgp 65100\nsnmp-server community s3cret-c0mm ro\n"


def test_a_confirmed_change_arms_the_timer_first_and_saves_startup_only_at_the_confirm(switch):
    result = push(NEW)
    assert result.converged and result.outcomes["sw1"].status == "changed"
    replace = next(i for i, c in enumerate(switch.commands) if c.startswith("configure replace bootflash:"))
    assert switch.commands[replace] == f"configure replace bootflash:gpufabric-{PUSH_A}.cfg commit-timeout 120"
    commit = switch.commands.index("configure replace commit")
    save = next(i for i, c in enumerate(switch.commands) if c.startswith("copy run"))
    assert replace < commit < save  # startup is written only after the confirm
    assert not any(c.startswith("copy run") for c in switch.commands[:commit])
    assert switch.running == NEW and switch.startup == NEW and switch.pending is None
    # Its candidate is removed; the pre-change checkpoint stays for a batch that fails after this confirm.
    assert {n for n in switch.files if n.startswith("gpufabric-")} == {f"gpufabric-{PUSH_A}-before.cfg"}


def test_a_confirmed_change_rolled_back_later_restores_running_and_startup(switch):
    driver = MockNexusDriver("sw1", "admin", "pw", optional_args={"push_id": PUSH_A})
    driver.open()
    driver.load_replace_candidate(config=NEW)
    driver.commit_config(revert_in=120)
    driver.confirm_commit()
    assert switch.running == NEW and switch.startup == NEW
    driver.rollback()  # its batch failed after this switch was confirmed
    assert switch.running == BEFORE and switch.startup == BEFORE and switch.pending is None


def test_checkpoints_of_old_pushes_are_removed_at_the_next_push(switch):
    from gpufabric.drivers.push_id import new_push_id

    live = new_push_id()
    switch.files |= {f"gpufabric-{PUSH_A}-before.cfg": BEFORE, f"gpufabric-{live}-before.cfg": BEFORE}
    driver = MockNexusDriver("sw1", "admin", "pw", optional_args={"push_id": PUSH_B})
    driver.open()
    driver.load_replace_candidate(config=NEW)
    assert f"gpufabric-{PUSH_A}-before.cfg" not in switch.files  # from 2026-01-01: long done
    assert f"gpufabric-{live}-before.cfg" in switch.files  # a push of the last hour may still roll back


def test_a_session_dropped_after_the_commit_leaves_the_revert_armed_on_the_switch(switch):
    # After the commit the controller loses the switch: the checks and the rollback both fail.
    switch.drop_on = {"show bgp sessions", "rollback running-config", "terminal dont-ask"}
    dropped_after = switch.drop_on
    switch.drop_on = set()
    original = switch._answer

    def answer(command: str) -> Any:
        out = original(command)
        if command.startswith("configure replace bootflash:"):
            switch.drop_on = dropped_after  # the session goes away right after the replace
        return out

    switch._answer = answer  # type: ignore[method-assign]
    result = push(NEW)
    outcome = result.outcomes["sw1"]
    assert outcome.status == "failed" and "rollback failed" in outcome.reason and not result.converged
    # The switch carries the change with its own revert armed, and startup was never touched.
    assert switch.running == NEW and switch.startup == BEFORE
    assert switch.pending is not None and switch.pending.file == f"gpufabric-{PUSH_A}.cfg"
    assert switch.pending.lapses_at - switch.clock == 120
    switch.lapse(119)
    assert switch.running == NEW  # not yet
    switch.lapse(1)
    assert switch.running == BEFORE and switch.pending is None and switch.startup == BEFORE


def test_failing_checks_roll_back_at_once_and_close_the_replace(switch):
    MockNexusDriver.healthy["sw1"] = [True, False]
    result = push(NEW)
    assert result.outcomes["sw1"].status == "rolled back" and not result.converged
    assert switch.running == BEFORE and switch.startup == BEFORE and switch.pending is None
    assert f"rollback running-config file bootflash:gpufabric-{PUSH_A}-before.cfg" in switch.commands


def test_a_rollback_the_switch_refuses_is_a_failure_not_a_success(switch):
    MockNexusDriver.healthy["sw1"] = [True, False]
    switch.refuse_on = {"rollback running-config": "Rollback failed.\nCLI error: checkpoint not applied"}
    result = push(NEW)
    outcome = result.outcomes["sw1"]
    assert outcome.status == "failed" and "rollback failed" in outcome.reason and "Rollback failed" in outcome.reason
    assert switch.pending is not None  # the switch's timer still reverts it
    switch.lapse(120)
    assert switch.running == BEFORE and switch.startup == BEFORE


def test_a_session_lost_during_the_replace_is_not_counted_as_a_change(switch):
    switch.drop_on = {"configure replace bootflash:"}
    outcome = push(NEW).outcomes["sw1"]
    assert outcome.status == "rolled back" and "session dropped" in outcome.reason
    assert switch.running == BEFORE and switch.startup == BEFORE


def test_a_connection_lost_during_the_rollback_is_a_failure(switch):
    MockNexusDriver.healthy["sw1"] = [True, False]
    switch.drop_on = {"rollback running-config"}
    outcome = push(NEW).outcomes["sw1"]
    assert outcome.status == "failed" and "session dropped" in outcome.reason


def test_a_second_push_finds_the_first_ones_pending_replace_and_refuses(switch):
    switch.files[f"gpufabric-{PUSH_A}.cfg"] = f"!gpufabric push {PUSH_A} controller ctl-a\n{NEW}"
    switch._answer(f"configure replace bootflash:gpufabric-{PUSH_A}.cfg commit-timeout 300")
    driver = MockNexusDriver("sw1", "admin", "pw", optional_args={"push_id": PUSH_B})
    driver.open()
    assert driver.pending_push() == {"push_id": PUSH_A, "started": "2026-01-01T00:00:00Z", "controller": "ctl-a"}
    # The rollout asks every switch for a pending push first and refuses before anything is read or loaded.
    with pytest.raises(OtherPushPendingError) as refused:
        push(NEW + "ntp server 10.0.0.5\n", push_id=PUSH_B)
    assert PUSH_A in str(refused.value) and "ctl-a" in str(refused.value)
    assert not any(c.startswith("rollback running-config") for c in switch.commands)
    assert switch.pending is not None and switch.pending.file == f"gpufabric-{PUSH_A}.cfg"  # untouched
    assert f"gpufabric-{PUSH_A}.cfg" in switch.files


def test_files_on_bootflash_carry_the_push_id(switch, tmp_path, monkeypatch):
    # (The upload itself is the double's here; tests/nos/nxos/test_nxos_scp_keys.py shows the real one writes
    # nothing locally.)
    local = tmp_path / "tmp"
    local.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(local))
    driver = MockNexusDriver("sw1", "admin", "pw", optional_args={"push_id": PUSH_B, "controller": "ctl-b"})
    driver.open()
    driver.load_replace_candidate(config=NEW)
    assert switch.files[f"gpufabric-{PUSH_B}.cfg"] == f"!gpufabric push {PUSH_B} controller ctl-b\n{NEW}"
    assert "snmp-server community s3cret-c0mm" in driver.compare_config()
    driver.commit_config(revert_in=60)
    assert {n for n in switch.files if n.startswith("gpufabric-")} == {
        f"gpufabric-{PUSH_B}.cfg", f"gpufabric-{PUSH_B}-before.cfg"}  # fmt: skip
    assert os.listdir(local) == []
    driver.confirm_commit()


def test_commit_without_a_revert_timer_is_refused(switch):
    driver = MockNexusDriver("sw1", "admin", "pw", optional_args={"push_id": PUSH_A})
    driver.open()
    driver.load_replace_candidate(config=NEW)
    with pytest.raises(Exception, match="revert armed"):
        driver.commit_config()
    with pytest.raises(Exception, match="30-3600"):
        driver.commit_config(revert_in=10)
    assert switch.running == BEFORE and switch.pending is None


def test_a_release_without_a_rendered_commit_timeout_is_refused():
    driver = GpufabricNXOSDriver("127.0.0.9", "admin", "pw", optional_args={"push_id": PUSH_A})
    with pytest.raises(Exception, match=r"runs NX-OS 9\.3\(8\).*10\.3"):
        driver._check_release({"nxos_ver_str": "9.3(8)"})
    driver._check_release({"nxos_ver_str": "10.4(2)"})


def test_the_cli_refuses_a_confirm_timeout_nxos_cannot_arm_before_any_connection():
    from conftest import run_in_process

    done = run_in_process(
        "nornir", "push", "inventory/examples/multi-vendor.yml", "--device", "biz-border1",
        "--confirm-timeout", "25", "--check-timeout", "1", "--timeout", "1",
        GPUFABRIC_SWITCH_PASSWORD="unused", GPUFABRIC_SALT_KEY="unused", GPUFABRIC_SNMP_COMMUNITY="unused",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--confirm-timeout 25 s: Cisco NX-OS (Nexus 9000) takes a revert timer of 30-3600 s" in done.stderr


def test_the_controller_the_push_names_is_the_one_marked_on_bootflash(switch):
    # The push gives its controller as `push_controller` (gpufabric.fleet.push_id.tag); a marker naming
    # this machine instead would send an operator to the wrong controller.
    driver = MockNexusDriver("sw1", "admin", "pw", optional_args={"push_id": PUSH_B, "push_controller": "ctl c;x"})
    driver.open()
    driver.load_replace_candidate(config=NEW)
    assert switch.files[f"gpufabric-{PUSH_B}.cfg"].splitlines()[0] == f"!gpufabric push {PUSH_B} controller ctl_c_x"


# -- the replace's state, read as structure ------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "phase"),
    [
        (None, Phase.NONE),
        ({}, Phase.NONE),
        ({"operation_status": "Success", "last_operation": "configure replace commit"}, Phase.DONE),
        ({"operation_status": "  waiting   FOR commit "}, Phase.PENDING),
        ({"operation_status": "In Progress"}, Phase.RUNNING),
        ({"operation_status": "Failed."}, Phase.FAILED),
    ],
)
def test_the_replace_status_is_read_from_its_json(body, phase):
    assert parse_replace_status(body).phase is phase


WRONG = [
    pytest.param("Last operation: configure replace\nStatus: committed", "not a JSON object", id="text"),
    pytest.param([{"operation_status": "Success"}], "list, not a JSON object", id="list"),
    pytest.param(7, "int, not a JSON object", id="number"),
    pytest.param(
        {"TABLE_status": {"ROW_status": {"operation_status": "Success"}}}, "no text 'operation_status'", id="table"
    ),
    pytest.param({"status": "Success"}, "no text 'operation_status' in its answer (keys: status)", id="other-key"),
    pytest.param({"operation_status": 1}, "no text 'operation_status'", id="not-text"),
    pytest.param({"operation_status": None}, "no text 'operation_status'", id="null"),
    pytest.param({"operation_status": "Success", "last_operation": ["x"]}, "'last_operation' is list", id="op-list"),
    pytest.param({"operation_status": ""}, "unknown operation_status ''", id="empty"),
    pytest.param({"operation_status": "Rolled back"}, "unknown operation_status 'Rolled back'", id="unknown"),
    pytest.param({"operation_status": "success, waiting"}, "unknown operation_status", id="two-words"),
    pytest.param({"operation_status": "Success\x1b[2J"}, r"unknown operation_status 'Success\x1b[2J'", id="escape"),
]


@pytest.mark.parametrize(("body", "why"), WRONG)
def test_a_replace_status_of_another_shape_or_value_is_refused(body, why):
    with pytest.raises(ReplaceStatusError) as refused:
        parse_replace_status(body, "sw1")
    assert why in str(refused.value) and "\x1b" not in str(refused.value)


@pytest.mark.parametrize(("body", "why"), WRONG)
def test_a_switch_whose_replace_state_is_unknown_is_never_changed(switch, body, why):
    """The pending-push check cannot read the replace's state: the push fails on that switch, sends no
    replace, and says why; never `changed`."""
    switch.status_answer = body
    outcome = push(NEW).outcomes["sw1"]
    assert outcome.status == "failed" and why in outcome.reason
    assert not any(c.startswith("configure replace") for c in switch.commands)
    assert switch.running == BEFORE and switch.pending is None


def test_a_commit_the_switch_reports_failed_is_not_a_change(switch):
    """`configure replace commit` goes through NX-API, but the switch reports the replace failed: the push
    does not call the switch changed; it rolls it back (running and startup as before)."""
    switch.commit_fails = True
    result = push(NEW)
    outcome = result.outcomes["sw1"]
    assert outcome.status == "rolled back" and not result.converged
    assert "after `configure replace commit` the switch reports the replace failed ('Failed')" in outcome.reason
    assert switch.running == BEFORE and switch.startup == BEFORE


def test_a_rollback_the_switch_answers_but_does_not_do_is_a_failure(switch):
    """`rollback running-config` comes back without an error, but the running configuration is still the
    pushed one: the rollback failed, whatever the switch's words."""
    MockNexusDriver.healthy["sw1"] = [True, False]
    switch.ignore_on = {"rollback running-config"}
    outcome = push(NEW).outcomes["sw1"]
    assert outcome.status == "failed" and "rollback failed" in outcome.reason
    assert "the running configuration still differs from bootflash:" in outcome.reason
    assert switch.running == NEW and switch.pending is not None  # the switch's timer is what reverts it now
    switch.lapse(120)
    assert switch.running == BEFORE


def test_a_replace_reported_in_progress_is_waited_for(switch, monkeypatch):
    from gpufabric.nos.nxos import driver as nxos_driver

    monkeypatch.setattr(nxos_driver, "POLL", 0.0)
    answers = iter([{"operation_status": "In Progress"}, {"operation_status": "In Progress"}])
    original = switch._answer

    def answer(command: str) -> Any:
        if command == "show config-replace status" and switch.pending is not None:
            return next(answers, None) or original(command)
        return original(command)

    switch._answer = answer  # type: ignore[method-assign]
    assert push(NEW).outcomes["sw1"].status == "changed" and switch.running == NEW and switch.pending is None
