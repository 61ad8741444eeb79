"""The push as Nornir means it: each task's Result sets `failed`, `changed` and `diff`; Nornir's failed
hosts are the switches that failed; processors see the push's tasks by name; statuses are one enum.
The progress bar and batch lines are such a processor. The library raises no click exception.

The switches are `SwitchDouble`, the test double of a NAPALM driver with commit-confirm from
tests/push/test_push_batch_atomic.py; the Nornir runner, the tasks and the rollout are the real ones.
"""

from __future__ import annotations

import ast
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import test_push_batch_atomic as atomic
from conftest import ROOT
from napalm.base import NetworkDriver
from nornir.core.inventory import Host
from nornir.core.task import AggregatedResult, MultiResult, Task
from test_push_batch_atomic import NEW, fleet, push

from gpufabric.fleet.expect import Expectation
from gpufabric.fleet.runner import run_per_host_results
from gpufabric.fleet.status import Status
from gpufabric.push.targets import Batch
from nornir_tasks.push import DeviceOutcome, PushOptions, confirm, preview, rollback, stage

switches = atomic.switches  # the test doubles' fixture
OPTS = PushOptions(confirm_timeout=300, check_timeout=0.0, settle=0.0, masked=("new",))


def _flags(results: AggregatedResult) -> dict[str, tuple[bool, bool, str]]:
    return {name: (multi[0].failed, multi[0].changed, multi[0].diff) for name, multi in results.items()}


def test_each_task_sets_failed_changed_and_the_masked_diff(switches):
    nr = fleet(["s1", "s2"])
    switches["s2"].running = NEW  # already runs the candidate
    names = ["s1", "s2"]
    read = run_per_host_results(
        nr, names, preview, candidate=dict.fromkeys(names, NEW), opts=dict.fromkeys(names, OPTS)
    )
    # A diff found is a change the push would make (nornir_napalm's dry run says changed too); masked.
    assert _flags(read) == {"s1": (False, True, "-hostname old\n+hostname ********\n"), "s2": (False, False, "")}
    assert read["s1"][0].result.status == Status.WOULD_CHANGE and read.failed_hosts == {}
    staged = run_per_host_results(
        nr, ["s1"], stage, candidate={"s1": NEW}, expect={"s1": Expectation("s1")}, opts={"s1": OPTS}, batch={"s1": 1}
    )
    assert _flags(staged)["s1"][:2] == (False, True) and staged["s1"][0].result.status == Status.STAGED
    switches["s1"].fail_confirm = True
    refused = run_per_host_results(nr, ["s1"], confirm, outcome={"s1": staged["s1"][0].result})
    # A confirm that fails leaves the change pending on the switch: failed, and changed.
    assert _flags(refused)["s1"][:2] == (True, True) and refused["s1"][0].result.status == Status.FAILED
    assert "s1" in nr.data.failed_hosts
    undone = run_per_host_results(nr, ["s1"], rollback, outcome={"s1": refused["s1"][0].result}, why={"s1": "test"})
    assert _flags(undone)["s1"][:2] == (False, False) and switches["s1"].running == "hostname old\n"


def test_a_stage_whose_rollback_fails_keeps_the_change_and_says_so(switches):
    nr = fleet(["s1"])
    switches["s1"].fail_rollback = True
    kept = run_per_host_results(nr, ["s1"], rollback, outcome={"s1": _outcome("s1")}, why={"s1": "batch failed"})
    assert _flags(kept)["s1"][:2] == (True, True) and kept["s1"][0].result.status == Status.FAILED


def _outcome(name: str) -> DeviceOutcome:
    return DeviceOutcome(name, Status.STAGED)


def test_nornirs_failed_hosts_are_the_switches_the_push_failed_on(switches):
    """s2's confirm fails: its batch (s1, s2, s3) is rolled back; s3's rollback fails too. Nornir's failed
    hosts name s2 and s3, and no other; the canary s0, confirmed before, is not among them."""
    nr = fleet(["s0", "s1", "s2", "s3"])
    switches["s2"].fail_confirm = True
    switches["s3"].fail_rollback = True
    result = push(nr, [Batch(1, "canary", ("s0",)), Batch(2, "fd-1", ("s1", "s2", "s3"))])
    assert set(nr.data.failed_hosts) == {"s2", "s3"}
    assert {n: o.status for n, o in result.outcomes.items()} == {
        "s0": Status.CHANGED,
        "s1": Status.ROLLED_BACK,
        "s2": Status.ROLLED_BACK,
        "s3": Status.FAILED,
    }


def test_an_unreadable_switch_is_a_failed_host_and_changes_nothing(switches, monkeypatch):
    from test_push_batch_atomic import SwitchDouble

    def lost(self):
        if self.hostname == "s2":
            raise ConnectionResetError("session dropped")
        return "" if self.candidate == self.state.running else "+x"

    monkeypatch.setattr(SwitchDouble, "compare_config", lost)
    nr = fleet(["s1", "s2"])
    result = push(nr, [Batch(1, "canary", ("s1",)), Batch(2, "fd-1", ("s2",))])
    assert result.unreadable == ["s2"] and set(nr.data.failed_hosts) == {"s2"}
    assert result.outcomes["s1"].status == Status.SKIPPED and "commit" not in switches["s1"].calls


class Recorder:
    """A Nornir processor that notes every hook it gets."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def task_started(self, task: Task) -> None:
        self.seen.append(("started", task.name, ""))

    def task_completed(self, task: Task, result: AggregatedResult) -> None:
        self.seen.append(("completed", task.name, ",".join(sorted(result.failed_hosts))))

    def task_instance_started(self, task: Task, host: Host) -> None:
        pass

    def task_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        self.seen.append(("host", task.name, f"{host.name} {result[0].result.status} failed={result[0].failed}"))

    def subtask_instance_started(self, task: Task, host: Host) -> None:
        pass

    def subtask_instance_completed(self, task: Task, host: Host, result: MultiResult) -> None:
        pass


def test_processors_see_the_push_tasks_by_name(switches):
    nr = fleet(["s1"])
    recorder = Recorder()
    push(nr.with_processors([recorder]), [Batch(1, "canary", ("s1",))])
    assert recorder.seen == [
        ("started", "check_pending", ""),
        ("host", "check_pending", "s1 clear failed=False"),
        ("completed", "check_pending", ""),
        ("started", "preview", ""),
        ("host", "preview", "s1 would change failed=False"),
        ("completed", "preview", ""),
        ("started", "stage", ""),
        ("host", "stage", "s1 staged failed=False"),
        ("completed", "stage", ""),
        ("started", "confirm", ""),
        ("host", "confirm", "s1 changed failed=False"),
        ("completed", "confirm", ""),
    ]


def test_statuses_are_one_enum_that_serialises_as_before(switches):
    nr = fleet(["s1"])
    outcome = push(nr, [Batch(1, "canary", ("s1",))]).outcomes["s1"]
    assert isinstance(outcome.status, Status) and outcome.status is Status.CHANGED
    assert json.loads(json.dumps(asdict(outcome)))["status"] == "changed" and f"{outcome.status}" == "changed"


def test_the_progress_processor_counts_switches_and_prints_the_batch_lines(switches, capsys):
    """The push's bar and lines, as a Nornir processor: the bar ends with every switch done, and the
    lines read as the push has always printed them."""
    from gpufabric.cli.push_progress import PushProgress
    from gpufabric.push import rollout

    nr = fleet(["s0", "s1", "s2", "s3"])
    switches["s3"].running = NEW
    switches["s2"].fail_confirm = True
    plan = [Batch(1, "canary", ("s0",)), Batch(2, "fd-1", ("s1", "s2")), Batch(3, "fd-2", ("s3",))]
    with PushProgress("the switches", 4, show_diff=True, dry_run=False) as progress:
        rollout.run(
            nr.with_processors([progress]),
            plan_batches=plan,
            candidates=dict.fromkeys(["s0", "s1", "s2", "s3"], NEW),
            expects={n: Expectation(n) for n in ("s0", "s1", "s2", "s3")},
            opts=PushOptions(confirm_timeout=300, check_timeout=0.0, settle=0.0),
            on_preview=progress.on_preview,
            on_batch=progress.on_batch,
        )
        bar = progress.progress.tasks[0]
        assert (bar.completed, bar.total) == (4, 4)
        assert bar.description == "push to the switches: batch 3/2"
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert "batch 1/2 (canary): committed, checked and confirmed: s0" in err
    assert "batch 2 (fd-1): s1 rolled back: confirmed, then the batch was rolled back: s2's confirm failed" in err
    assert (
        "batch 2 (fd-1): s2 rolled back: confirm failed: ConnectionError: confirm lost; the batch is rolled back" in err
    )
    assert "--- s0 (batch 1, canary)" in captured.out and "+hostname new" in captured.out


def _imports_click(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "click" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "click":
            return True
    return False


def test_only_the_command_line_imports_click():
    """Library code raises domain errors; gpufabric/cli alone turns them into messages and exit codes."""
    library = [
        p
        for folder in ("gpufabric", "nornir_tasks", "napalm_frr", "napalm_cumulus")
        for p in sorted((ROOT / folder).rglob("*.py"))
        if "cli" not in p.relative_to(ROOT).parts[:2]
    ]
    assert len(library) > 50
    assert [str(p.relative_to(ROOT)) for p in library if _imports_click(p)] == []


def test_the_library_refusals_keep_their_messages_and_exit_code_on_the_command_line(tmp_path, capsys, monkeypatch):
    from nornir.core.plugins.connections import ConnectionPluginRegister
    from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

    from gpufabric.cli import main

    monkeypatch.setitem(ConnectionPluginRegister.available, CONNECTION_NAME, Napalm)  # restored after

    def run(*args: str) -> tuple[int, str]:
        try:
            main(list(args))
        except SystemExit as done:
            return int(done.code or 0), " ".join(capsys.readouterr().err.split())
        raise AssertionError("no exit")

    code, err = run("push", "--device", "no-such-switch", "--dry-run")
    assert code == 2 and "Error: Invalid value for --device: no switch named no-such-switch in the plan" in err
    assert "Usage: " in err
    code, err = run("validate", "--state-dir", str(tmp_path / "nowhere"))
    assert code == 2 and f"Error: no lab of fabric 'lab' is up (state dir {tmp_path / 'nowhere'})" in err
    code, err = run("push", "--role", "superspine", "--dry-run")
    assert code == 2 and "Error: no switch matches the selection (--plane/--device/--role)" in err
    code, err = run("push", "--device", "cmp-spine1", "--dry-run", "--from", str(tmp_path))
    assert code == 2 and f"Error: Invalid value: {tmp_path} has no rendered file for cmp-spine1" in err


class ReadOnlyDouble(NetworkDriver):
    """Test double of a switch `validate` reads: its running configuration differs from the rendered one
    in the SNMP community, and `broken` switches refuse the session with the secret in the error."""

    SECRET = "validate-canary-community-5e1f"

    def __init__(self, hostname: str, username: str, password: str, timeout: int = 60, optional_args: Any = None):
        self.hostname = hostname

    def open(self) -> None:
        if self.hostname == "broken":
            raise ConnectionRefusedError(f"refused, community {self.SECRET}")

    def close(self) -> None:
        pass

    def compare_running(self, candidate: str) -> str:
        return f"-snmp-server community old-{self.SECRET}\n+snmp-server community {self.SECRET}\n"

    def get_route_to(self, destination: str = "", protocol: str = "", longer: bool = False) -> dict[str, Any]:
        return {}

    def get_interfaces(self) -> dict[str, Any]:
        return {}


def test_validate_sets_failed_and_the_masked_drift_as_nornirs_diff(monkeypatch):
    from nornir.core import Nornir
    from nornir.core.inventory import ConnectionOptions, Defaults, Groups, Hosts, Inventory
    from nornir.core.plugins.connections import ConnectionPluginRegister
    from nornir.plugins.runners import ThreadedRunner
    from nornir_napalm.plugins import connections as napalm_connections
    from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

    from gpufabric.verify.running.checks import Planned
    from nornir_tasks.validate import validate_device

    monkeypatch.setattr(napalm_connections, "get_network_driver", lambda platform: ReadOnlyDouble)
    monkeypatch.setitem(ConnectionPluginRegister.available, CONNECTION_NAME, Napalm)
    hosts = Hosts()
    for name in ("drifted", "broken"):
        hosts[name] = Host(name=name, hostname=name, username="u", password="p", platform="readonly")
        hosts[name].connection_options["napalm"] = ConnectionOptions(extras={"optional_args": {}})
    nr = Nornir(inventory=Inventory(hosts=hosts, groups=Groups(), defaults=Defaults()), runner=ThreadedRunner(2))
    names = ["drifted", "broken"]
    secret = ReadOnlyDouble.SECRET
    results = run_per_host_results(
        nr,
        names,
        validate_device,
        planned={n: Planned(n, "frr") for n in names},
        candidate=dict.fromkeys(names, "rendered"),
        limits=dict.fromkeys(names, None),
        masked=dict.fromkeys(names, (secret,)),
    )
    drifted, broken = results["drifted"][0], results["broken"][0]
    assert (drifted.failed, drifted.changed) == (True, False)
    assert drifted.diff == "-snmp-server community old-********\n+snmp-server community ********\n"
    assert [(r.check, r.ok) for r in drifted.result] == [("reachable", True), ("config-drift", False)]
    assert secret not in drifted.result[1].observed and "community ********" in drifted.result[1].observed
    assert broken.failed and broken.result[0].observed == "ConnectionRefusedError: refused, community ********"
    assert set(results.failed_hosts) == {"drifted", "broken"}


def test_confirm_and_rollback_reasons_are_masked_too(switches, monkeypatch):
    """A driver that echoes what it holds into its errors: the reasons of a failed confirm and of a failed
    rollback (the report, the audit trail, the log) show no secret."""
    from test_push_batch_atomic import SwitchDouble

    secret = "confirm-canary-3b7e"

    def confirm_commit(self):
        raise ConnectionError(f"confirm lost ({secret})")

    def rollback(self):
        raise ConnectionError(f"rollback refused ({secret})")

    monkeypatch.setattr(SwitchDouble, "confirm_commit", confirm_commit)
    monkeypatch.setattr(SwitchDouble, "rollback", rollback)
    nr = fleet(["s1"])
    from gpufabric.push import rollout

    result = rollout.run(
        nr,
        plan_batches=[Batch(1, "canary", ("s1",))],
        candidates={"s1": NEW},
        expects={"s1": Expectation("s1")},
        opts=PushOptions(confirm_timeout=300, check_timeout=0.0, settle=0.0, masked=(secret,)),
    )
    outcome = result.outcomes["s1"]
    assert outcome.status == Status.FAILED and secret not in outcome.reason
    assert outcome.reason == (
        "confirm failed: ConnectionError: confirm lost (********); the batch is rolled back; "
        "rollback failed: ConnectionError: rollback refused (********)"
    )


def _whose(task: Task, tag: str) -> Any:
    """A stand-in read-only task: which process read which host, with the host's own argument."""
    import os

    from nornir.core.task import Result

    return Result(host=task.host, result=(task.host.name, tag, os.getpid()))


def test_a_large_read_is_dealt_out_to_forked_processes_and_every_result_comes_back():
    """run_per_host_forked (validate over a whole fabric): each host read once, in one of the processes,
    with its own arguments, and the results as run_per_host gives them; below FORK_FROM, in-process."""
    import os

    from nornir.core import Nornir
    from nornir.core.inventory import Defaults, Groups, Hosts, Inventory
    from nornir.plugins.runners import ThreadedRunner

    from gpufabric.fleet.runner import FORK_FROM, run_per_host, run_per_host_forked

    hosts = Hosts()
    names = [f"sw{i}" for i in range(FORK_FROM + 6)]
    for name in names:
        hosts[name] = Host(name=name, hostname=name)
    nr = Nornir(inventory=Inventory(hosts=hosts, groups=Groups(), defaults=Defaults()), runner=ThreadedRunner(8))
    tags = {n: f"tag-{n}" for n in names}
    found = run_per_host_forked(nr, names, _whose, 2, tag=tags)
    assert sorted(found) == sorted(names)
    assert all(found[n][:2] == (n, tags[n]) for n in names)
    pids = {found[n][2] for n in names}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2  # forked processes read them all, the parent none
    few = names[: FORK_FROM - 1]
    in_process = run_per_host_forked(nr, few, _whose, 2, tag=tags)
    assert {v[2] for v in in_process.values()} == {os.getpid()}
    assert {n: v[:2] for n, v in in_process.items()} == {
        n: v[:2] for n, v in run_per_host(nr, few, _whose, tag=tags).items()
    }
