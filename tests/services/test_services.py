"""push and validate are library calls returning typed results; the command line only calls and prints.

Every switch here is a NAPALM driver double (no root, no lab, no network): the services are called as
functions, without click, and their results' values are what is checked. Then the layering itself:
no command module imports another command's module, and the imports go down the floor plan.
"""

from __future__ import annotations

import ast
import functools
import json
import tomllib
from importlib import import_module
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import ROOT
from napalm.base import NetworkDriver
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

from gpufabric.fleet import access
from gpufabric.fleet.args import FleetArgs
from gpufabric.fleet.errors import EmptySelectionError, UnknownSwitchError
from gpufabric.fleet.status import Status
from gpufabric.push import service as push_service
from gpufabric.push.lock import fabric_lock
from gpufabric.push.service import PushRequest, PushResult, PushWatcher, push
from gpufabric.validate.service import ValidateRequest, validate
from nornir_tasks.push import PushOptions

INTENT = str(ROOT / "inventory" / "examples" / "multi-vendor.yml")
SECRETS = {
    "GPUFABRIC_SWITCH_PASSWORD": "svc-canary-Pw-5e1d",
    "GPUFABRIC_SNMP_COMMUNITY": "svc-canary-Snmp-77a0",
    "GPUFABRIC_SALT_KEY": "svc-canary-Salt-0c9b",
}
LEAVES = ("cmp-su1-leaf1", "cmp-su1-leaf2")
OLD = "hostname before-the-push\n"


class SwitchDouble(NetworkDriver):
    """A switch's NAPALM driver: its running configuration in RUNNING[hostname]; UNREACHABLE ones refuse
    the login."""

    RUNNING: ClassVar[dict[str, str]] = {}
    UNREACHABLE: ClassVar[set[str]] = set()

    def __init__(self, hostname: str, username: str, password: str, timeout: int = 60, optional_args: Any = None):
        self.hostname, self.candidate = hostname, ""
        self.before: str | None = None

    def open(self) -> None:
        if self.hostname in self.UNREACHABLE:
            raise ConnectionRefusedError(f"{self.hostname}: connection refused")

    def close(self) -> None:
        pass

    def load_replace_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        self.candidate = config or ""

    def compare_config(self) -> str:
        running = self.RUNNING.setdefault(self.hostname, OLD)
        return "" if self.candidate == running else f"-{running}+{self.candidate[:40]}"

    def discard_config(self) -> None:
        self.candidate = ""

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        self.before, self.RUNNING[self.hostname] = self.RUNNING.setdefault(self.hostname, OLD), self.candidate

    def confirm_commit(self) -> None:
        pass

    def rollback(self) -> None:
        if self.before is not None:
            self.RUNNING[self.hostname] = self.before

    def get_config(self, retrieve: str = "all", full: bool = False, sanitized: bool = False) -> dict[str, str]:
        return {"running": self.RUNNING.get(self.hostname, OLD), "startup": "", "candidate": ""}

    def get_bgp_neighbors(self) -> dict[str, Any]:
        return {"global": {"router_id": "", "peers": {}}}

    def get_lldp_neighbors(self) -> dict[str, Any]:
        return {}

    def get_interfaces(self) -> dict[str, Any]:
        return {}

    def get_route_to(self, destination: str = "", protocol: str = "", longer: bool = False) -> dict[str, Any]:
        return {}


class Heard(PushWatcher):
    """A watcher that keeps what it is told, to show the service tells it and prints nothing itself."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def starting(self, push_id: Any) -> None:
        self.events.append(f"starting {push_id.id}")


@pytest.fixture
def doubles(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> type[SwitchDouble]:
    monkeypatch.setitem(ConnectionPluginRegister.available, CONNECTION_NAME, Napalm)  # the next tests get theirs
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(access, "network_driver", lambda platform: SwitchDouble)
    monkeypatch.setattr(push_service, "fabric_lock", lambda fabric, **kw: fabric_lock(fabric, tmp_path / "locks", **kw))
    # A healthy switch is confirmed at once: the checks need not hold for the 2 s a real switch gets.
    monkeypatch.setattr(push_service, "PushOptions", functools.partial(PushOptions, settle=0.0))
    monkeypatch.setattr(SwitchDouble, "RUNNING", {})
    monkeypatch.setattr(SwitchDouble, "UNREACHABLE", set())
    return SwitchDouble


def _request(tmp_path: Path, **asked: Any) -> PushRequest:
    fleet = FleetArgs(file=INTENT, devices=LEAVES, known_hosts=tmp_path / "known_hosts")
    asked = {"wait_seconds": 0, "check_timeout": 3, "audit_log": tmp_path / "audit.jsonl", **asked}
    return PushRequest(fleet, **asked)


def test_a_dry_run_says_what_would_change_and_changes_nothing(doubles, tmp_path, capsys):
    heard = Heard()
    result = push(_request(tmp_path, dry_run=True), heard)
    assert isinstance(result, PushResult)
    assert result.target == "switches" and result.dry_run
    assert [o.device for o in result.devices] == list(LEAVES)
    assert {o.status for o in result.devices} == {Status.WOULD_CHANGE}
    assert result.changed == 2 and result.converged and result.ok
    assert all(o.diff.startswith(f"-{OLD}+") for o in result.devices)
    assert all(SECRETS["GPUFABRIC_SWITCH_PASSWORD"] not in o.diff for o in result.devices)
    assert dict.fromkeys(doubles.RUNNING, OLD) == doubles.RUNNING  # nothing committed
    assert heard.events == [f"starting {result.push.id}"]
    assert capsys.readouterr().out == ""  # the service prints nothing; the command line does
    trail = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert sorted(r["switch"] for r in trail) == sorted(LEAVES)
    assert {r["push_id"] for r in trail} == {result.push.id}
    assert result.as_dict()["devices"][0]["status"] == "would change"


def test_a_push_changes_the_switches_and_a_second_one_finds_nothing_to_do(doubles, tmp_path):
    first = push(_request(tmp_path))
    assert not first.dry_run and first.ok
    assert {o.status for o in first.devices} == {Status.CHANGED}
    assert first.changed == 2
    assert first.batches[0].devices == (LEAVES[0],)  # a canary goes first, alone
    assert all(text != OLD for text in doubles.RUNNING.values())
    second = push(_request(tmp_path))
    assert {o.status for o in second.devices} == {Status.UNCHANGED}
    assert second.changed == 0 and second.batches == () and second.ok
    assert second.push.id != first.push.id


def test_an_unreachable_switch_fails_the_push_before_any_change(doubles, tmp_path):
    hosts = _hostnames()
    doubles.UNREACHABLE.add(hosts[LEAVES[1]])
    result = push(_request(tmp_path))
    assert not result.converged and not result.ok
    assert result.by_name[LEAVES[1]].status == Status.FAILED
    assert "connection refused" in result.by_name[LEAVES[1]].reason
    # The other would change, and is skipped: nothing goes out while a switch cannot be read.
    assert result.by_name[LEAVES[0]].status == Status.SKIPPED
    assert "could not be read" in result.by_name[LEAVES[0]].reason
    assert doubles.RUNNING.get(hosts[LEAVES[0]], OLD) == OLD


def test_the_push_refuses_a_selection_with_an_unknown_switch(doubles, tmp_path):
    request = PushRequest(FleetArgs(file=INTENT, devices=("no-such-switch",)), audit_log=tmp_path / "a.jsonl")
    with pytest.raises(UnknownSwitchError, match="no-such-switch"):
        push(request)


def test_validate_returns_each_checks_result(doubles):
    hosts = _hostnames()
    doubles.RUNNING[hosts[LEAVES[0]]] = OLD
    report = validate(ValidateRequest(FleetArgs(file=INTENT, devices=(LEAVES[0],))))
    by_check: dict[str, list[Any]] = {}
    for r in report.results:
        assert r.device == LEAVES[0]
        by_check.setdefault(r.check, []).append(r)
    assert report.what == "1 switches"
    assert [r.ok for r in by_check["reachable"]] == [True]
    # Its running configuration is OLD, not the rendered one: the drift check fails.
    assert not all(r.ok for r in by_check["config-drift"])
    # The double has no BGP session up: every planned one fails, named by its key.
    assert by_check["bgp-session"] and not any(r.ok for r in by_check["bgp-session"])
    assert not report.ok and report.failed == sum(not r.ok for r in report.results) > 0


def test_validate_reports_an_unreachable_switch_as_one_failed_result(doubles):
    doubles.UNREACHABLE.add(_hostnames()[LEAVES[1]])
    report = validate(ValidateRequest(FleetArgs(file=INTENT, devices=(LEAVES[1],)), drift=False))
    assert len(report.results) == 1
    (only,) = report.results
    assert (only.check, only.device, only.ok) == ("reachable", LEAVES[1], False)
    assert "connection refused" in only.observed


def test_validate_refuses_an_empty_selection(doubles):
    with pytest.raises(EmptySelectionError):
        validate(ValidateRequest(FleetArgs(file=INTENT, plane="storage", role="superspine")))


def test_the_target_is_decided_in_one_place(tmp_path, monkeypatch):
    from gpufabric.fleet import args as fleet_args
    from gpufabric.fleet.lab.state import AUDIT_FILE, LabState
    from gpufabric.fleet.target import lab_trail

    monkeypatch.setattr(fleet_args, "DEFAULT_DIR", tmp_path / "default-lab")
    assert not FleetArgs().wants_lab
    assert FleetArgs(lab=True).wants_lab and FleetArgs(lab=True).lab_dir == tmp_path / "default-lab"
    named = FleetArgs(state_dir=tmp_path / "lab")
    assert named.wants_lab and named.lab_dir == tmp_path / "lab"
    # A lab asked for keeps the push's trail in its state folder only while it is up.
    assert lab_trail(named) is None
    LabState("lab", namespaces=["cmp-spine1"]).save(tmp_path / "lab")
    assert lab_trail(named) == tmp_path / "lab" / AUDIT_FILE
    assert lab_trail(FleetArgs()) is None  # a lab that is up decides nothing unless asked for
    assert push_service.default_trail(named) == tmp_path / "lab" / AUDIT_FILE


def _hostnames() -> dict[str, str]:
    from gpufabric.fleet.inventory import inventory_from_plan
    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan

    hosts = inventory_from_plan(build_plan(load_intent(INTENT))).hosts
    return {name: str(host.hostname) for name, host in hosts.items()}


# The layering.

CLI = ROOT / "gpufabric" / "cli"


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("path", sorted(CLI.glob("*.py")), ids=lambda p: p.name)
def test_no_command_module_imports_another_commands_module(path):
    own = f"gpufabric.cli.{path.stem}"
    others = {m for m in _imported_modules(path) if m.startswith("gpufabric.cli.") and m.endswith("_cmd")}
    assert others <= {own}, f"{path.name} imports {sorted(others - {own})}"


def test_imports_only_go_down_between_services_tasks_and_fleet():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("gpufabric", "nornir_tasks", "napalm_frr", "napalm_cumulus", cache_dir=None)
    floors = ["gpufabric.cli", "gpufabric.push", "nornir_tasks", "gpufabric.fleet"]
    for i, upper in enumerate(floors):
        for lower in floors[i + 1 :]:
            chains = graph.find_shortest_chains(importer=lower, imported=upper)
            assert not chains, f"{lower} imports {upper}: {sorted(chains)[:3]}"
    for a, b in (("gpufabric.lab", "gpufabric.push"), ("gpufabric.telemetry", "gpufabric.validate")):
        assert not graph.find_shortest_chains(importer=a, imported=b), f"{a} imports {b}"
    for lower in ("nornir_tasks", "gpufabric.fleet"):
        for service in ("gpufabric.push", "gpufabric.telemetry", "gpufabric.acceptance"):
            assert not graph.find_shortest_chains(importer=lower, imported=service), f"{lower} imports {service}"


def test_the_nornir_inventory_plugin_is_declared_where_it_lives():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    target = declared["nornir.plugins.inventory"]["GpufabricInventory"]
    module, _, name = target.partition(":")
    assert module == "gpufabric.fleet.inventory"
    plugin = getattr(import_module(module), name)
    assert plugin.__name__ == "GpufabricInventory"
    # What InitNornir does with it: the plan's switches and servers, switches with their NAPALM driver.
    hosts = plugin(intent=INTENT).load().hosts
    assert set(_hostnames()) == set(hosts)
    assert hosts["cmp-su1-leaf1"].platform == "cumulus" and hosts["gpu001"].platform == "linux"


def test_the_telemetry_collector_reads_the_selected_switches_as_the_fleet_reaches_them(doubles):
    from gpufabric.telemetry.service import collector

    heard: list[Any] = []
    made = collector(FleetArgs(file=INTENT, devices=LEAVES), 4, budget=10.0, deadline=5.0, reached=heard.append)
    assert sorted(t.device for t in made.switches) == sorted(LEAVES)
    assert [a.lab for a in heard] == [False]  # the real switches: no lab was asked for
    assert heard[0].password == SECRETS["GPUFABRIC_SWITCH_PASSWORD"]


def test_each_switchs_context_is_built_once_per_command(doubles, tmp_path, monkeypatch):
    from gpufabric.config import context, render
    from gpufabric.fleet import context as fleet_context

    built: list[str] = []
    real = context.build

    def counted(plan: Any, device: Any, index: Any) -> Any:
        built.append(device.name)
        return real(plan, device, index)

    for module in (context, render, fleet_context):  # wherever a context can be built from
        monkeypatch.setattr(module, "build", counted)
    # The candidate, the post-change checks and the sessions to wait for all read it.
    result = push(_request(tmp_path, wait_seconds=1))
    assert result.ok and result.sessions is not None
    assert sorted(built) == sorted(LEAVES)
    built.clear()
    # validate: what each switch should show, and the candidate its drift is judged against.
    validate(ValidateRequest(FleetArgs(file=INTENT, devices=LEAVES)))
    assert sorted(built) == sorted(LEAVES)
