"""Exit codes per command (docs/exit-codes.md): every command of the program has its row, and each
command's findings end with 4 (diff's disruptive changes with 5), never with 1, which stays a bug's.

Commands whose findings need switches are run in this process with their service replaced by one that
returns a failed result: what is tested is the command's choice of code, the service's own tests judge
the result. Where another test already drives a command to its findings through the command line, it
is named in FOUND_ELSEWHERE (and that test asserts the code).
"""

from __future__ import annotations

import copy
import gc
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
import pytest
import yaml
from conftest import ROOT, default_doc, run_in_process

from gpufabric.cli import cli, main
from gpufabric.cli.errors import (
    EXIT_DISRUPTIVE,
    EXIT_FINDINGS,
    EXIT_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_WARNINGS,
    outcome,
)
from gpufabric.verify.running.results import CheckResult

PAGE = ROOT / "docs" / "exit-codes.md"
ENV = {"GPUFABRIC_SWITCH_PASSWORD": "not-used-exit", "GPUFABRIC_SALT_KEY": "not-used-exit"}
INTENT = str(ROOT / "inventory" / "fabric.yml")

# A command driven to its findings (4, or diff's 5) through the command line by another test.
FOUND_ELSEWHERE = {
    "push": "tests/push/test_push_audit.py (a switch refusing its commit, rolled back)",
    "verify": "tests/verify/test_verify.py (a planted wrong MTU)",
    "acceptance report": "tests/acceptance/test_acceptance.py (a job without output)",
    "acceptance screen report": "tests/acceptance/test_acceptance_screen.py (a slow NIC)",
    "scheduler drain": "tests/scheduler/test_scheduler_cli.py (a job wait that runs out)",
    "ib diff": "tests/ib/test_ib_cli.py (a missing cable)",
    "ib validate": "tests/ib/test_ib_cli.py (a port at the wrong rate)",
    "docs commands": "tests/docs/test_docs_site.py (a stale command page)",
    "demo": "tests/lab/test_demo_e2e.py (every fact: 0; the lab tier)",
    "triage nccl": "tests/jobs/test_triage.py (a 512-rank job's log naming one cable)",
}


def _leaves(command: click.Command, path: tuple[str, ...] = ()) -> Iterator[str]:
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            yield from _leaves(sub, (*path, name))
    else:
        yield " ".join(path)


def _rows() -> dict[str, list[str]]:
    """The per-command table: each command named in a row's first cell -> that row's cells."""
    _, _, table = PAGE.read_text().partition("## Per command")
    rows: dict[str, list[str]] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| `"):
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = cells[1:]
    return rows


def test_the_codes_are_the_documented_ones():
    assert (EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_WARNINGS, EXIT_FINDINGS, EXIT_DISRUPTIVE, EXIT_INTERRUPTED) == (
        0, 1, 2, 3, 4, 5, 130
    )  # fmt: skip
    assert (outcome(True), outcome(False)) == (0, 4)
    text = PAGE.read_text()
    for code in ("`0`", "`1`", "`2`", "`3`", "`4`", "`5`", "`130`"):
        assert f"| {code} |" in text


def test_every_command_has_its_row_and_every_row_a_command():
    rows = _rows()
    commands = set(_leaves(cli))
    assert commands - rows.keys() == set(), "commands without a row in docs/exit-codes.md"
    # `docs` runs without a subcommand too (the intent reference): a row of its own.
    assert rows.keys() - commands == {"docs"}, "rows naming no command"
    with_findings = {name for name, cells in rows.items() if cells[2]}
    assert with_findings >= {"validate", "push", "restart", "upgrade", "maintenance on", "lab status", "ib diff"}


def _code(argv: list[str]) -> int:
    """`gpufabric ARGV` run in this process: its exit code."""
    try:
        with pytest.raises(SystemExit) as done:
            main(argv)
    finally:
        gc.enable()  # the batch commands switch the collector off for their process
    code = done.value.code
    assert isinstance(code, int)
    return code


# -- what needs switches: the command with its service replaced -------------------------------------------


@pytest.fixture
def env(monkeypatch):
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)


def test_validate_exits_4_on_a_failed_check_and_0_when_all_pass(env, monkeypatch, capsys):
    from gpufabric.cli import validate_cmd
    from gpufabric.validate.service import ValidateReport

    passed = CheckResult("interface", "cmp-spine1", "swp1", "up", "up", True)
    failed = CheckResult("interface", "cmp-spine1", "swp2", "up", "down", False)
    for results, code in (((passed,), EXIT_OK), ((passed, failed), EXIT_FINDINGS)):
        monkeypatch.setattr(validate_cmd, "validate", lambda _r, _w, res=results: ValidateReport(res, 0.1, "1 switch"))
        assert _code(["validate", INTENT, "--format", "json"]) == code
        assert json.loads(capsys.readouterr().out)["failed"] == (code == EXIT_FINDINGS)


@dataclass
class _Maintenance:
    ok: bool
    action: str = "drain"
    target: str = "the real switches"
    switches: list[Any] = field(default_factory=list)
    wait: Any = None
    trail_error: Any = None
    push_id: str = "gf-x"
    seconds: float = 0.1

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok}


@pytest.mark.parametrize("action", ["on", "off", "status"])
@pytest.mark.parametrize("as_json", [True, False], ids=["json", "table"])
def test_maintenance_exits_4_when_a_switch_failed(env, monkeypatch, capsys, action, as_json):
    from gpufabric.maintenance import service

    name = {"on": "drain", "off": "undrain", "status": "status"}[action]
    for ok, code in ((True, EXIT_OK), (False, EXIT_FINDINGS)):
        monkeypatch.setattr(service, name, lambda _r, _w, ok=ok: _Maintenance(ok))
        argv = ["maintenance", action, INTENT, "--device", "cmp-spine1", *(["--json"] if as_json else [])]
        assert _code(argv) == code
    capsys.readouterr()


@pytest.mark.parametrize("kind", ["restart", "upgrade"])
def test_restart_and_upgrade_exit_4_when_the_rollout_stopped(env, monkeypatch, capsys, kind):
    import importlib

    module = importlib.import_module(f"gpufabric.cli.{kind}_cmd")
    extra = [] if kind == "restart" else [
        "--release", "5.14", "--sha512", "0" * 128, "--image", "http://192.0.2.1/cumulus-linux-5.14.0-mlx-amd64.bin",
    ]  # fmt: skip
    for ok, code in ((True, EXIT_OK), (False, EXIT_FINDINGS)):
        result = SimpleNamespace(ok=ok, as_dict=lambda ok=ok: {"ok": ok})
        monkeypatch.setattr(module, kind, lambda _r, _w, result=result: result)
        multi = str(ROOT / "inventory" / "examples" / "multi-vendor.yml")
        assert _code([kind, multi, "--plane", "compute", *extra, "--json"]) == code
    capsys.readouterr()


def test_acceptance_run_and_counters_exit_4_when_not_all_was_read(env, monkeypatch, capsys, tmp_path):
    from gpufabric.acceptance import counters
    from gpufabric.acceptance import run as run_mod
    from gpufabric.acceptance.suite import build_suite
    from gpufabric.fleet import connect, target
    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan

    plan = build_plan(load_intent(INTENT))
    access = SimpleNamespace(notes=(), lab=False)
    monkeypatch.setattr(target, "reach", lambda _args: (plan, access))
    monkeypatch.setattr(connect, "host_shell", lambda *_a: object())
    suite = build_suite(plan)
    for done, code in ((len(suite.perf), EXIT_OK), (len(suite.perf) - 1, EXIT_FINDINGS)):
        monkeypatch.setattr(run_mod, "run_suite", lambda *_a, done=done: done)
        assert _code(["acceptance", "run", INTENT, "--results", str(tmp_path / "r"), "--json"]) == code
    job = suite.incast[0]
    monkeypatch.setattr(connect, "switch_connector", lambda _access: lambda _target: None)
    for snapshot, code in (({"x": {}}, EXIT_OK), ({"x": {"error": "timed out"}}, EXIT_FINDINGS)):
        monkeypatch.setattr(counters, "snapshot_switches", lambda *_a, s=snapshot: s)
        argv = ["acceptance", "counters", INTENT, "--job", job.id, "--phase", "before", "--results", str(tmp_path)]
        assert _code(argv) == code
    capsys.readouterr()


def test_lab_down_exits_4_when_something_could_not_be_removed(monkeypatch, capsys, tmp_path):
    from gpufabric.cli import lab_cmd

    monkeypatch.setattr(lab_cmd, "require_root", lambda _why: None)
    for problems, code in (([], EXIT_OK), (["namespace cmp-spine1: busy"], EXIT_FINDINGS)):
        done = SimpleNamespace(
            problems=problems, state=SimpleNamespace(fabric="lab", name="default"), summary=lambda: "all"
        )
        monkeypatch.setattr(lab_cmd, "down", lambda _dir, done=done: done)
        assert _code(["lab", "down", "--state-dir", str(tmp_path)]) == code
    assert "could not remove" in capsys.readouterr().err


def test_lab_ztp_exits_4_when_the_switch_was_not_provisioned_and_2_when_refused(monkeypatch, capsys, tmp_path):
    from gpufabric.cli import lab_ztp_cmd
    from gpufabric.lab import ztp

    monkeypatch.setattr(lab_ztp_cmd, "require_root", lambda _why: None)
    for error, code in ((ztp.NotProvisionedError("cmp-spine1 was not provisioned"), EXIT_FINDINGS),
                        (ztp.LabZtpError("the lab's ZTP run needs kea"), EXIT_INPUT)):  # fmt: skip

        def refuse(*_a: Any, error: Exception = error, **_k: Any) -> None:
            raise error

        monkeypatch.setattr(ztp, "provision", refuse)
        argv = ["lab", "ztp", INTENT, "--device", "cmp-spine1", "--from", str(tmp_path), "--state-dir", str(tmp_path)]
        assert _code(argv) == code
    capsys.readouterr()


def test_render_exits_4_when_a_switch_could_not_be_rendered(monkeypatch, capsys, tmp_path):
    from gpufabric.cli import render_cmd
    from gpufabric.config.batch import BatchResult

    def half(*_a: Any, **_k: Any) -> BatchResult:
        return BatchResult(switches=15, files=15, errors={"cmp-spine1": "TemplateError: boom"})

    monkeypatch.setattr(render_cmd, "render_all", half)
    assert _code(["render", INTENT, "-o", str(tmp_path / "configs")]) == EXIT_FINDINGS
    assert "error: cmp-spine1: TemplateError: boom" in capsys.readouterr().err


# -- offline: through the command line -----------------------------------------------------------------


def test_diff_exits_0_same_4_additions_5_disruptive(tmp_path):
    doc = default_doc()
    small, grown = copy.deepcopy(doc), copy.deepcopy(doc)
    small["server_groups"][0]["count"], grown["server_groups"][0]["count"] = 4, 6
    files = {}
    for name, d in (("small", small), ("grown", grown)):
        files[name] = tmp_path / f"{name}.yml"
        files[name].write_text(yaml.safe_dump(d))
        d["server_groups"][0]["build_out"] = 8
        files[f"{name}-built"] = tmp_path / f"{name}-built.yml"
        files[f"{name}-built"].write_text(yaml.safe_dump(d))
    same = run_in_process("gpufabric", "diff", str(files["small"]), str(files["small"]))
    assert same.returncode == EXIT_OK and "no change" in same.stdout, same.stderr
    added = run_in_process("gpufabric", "diff", str(files["small-built"]), str(files["grown-built"]))
    assert added.returncode == EXIT_FINDINGS and "switches added" in added.stdout, added.stderr
    moved = run_in_process("gpufabric", "diff", str(files["small"]), str(files["grown"]), "--json")
    assert moved.returncode == EXIT_DISRUPTIVE and json.loads(moved.stdout)["disruptive"], moved.stderr


def test_docs_check_exits_4_when_out_of_date(tmp_path):
    stale = tmp_path / "intent.md"
    stale.write_text("# old\n")
    done = run_in_process("gpufabric", "docs", "-o", str(stale), "--check")
    assert done.returncode == EXIT_FINDINGS and "out of date" in done.stderr
    assert run_in_process("gpufabric", "docs", "-o", str(stale)).returncode == EXIT_OK
    assert run_in_process("gpufabric", "docs", "-o", str(stale), "--check").returncode == EXIT_OK


def test_lab_and_ib_lab_status_exit_4_when_nothing_is_up(tmp_path):
    lab = run_in_process("gpufabric", "lab", "status", "--state-dir", str(tmp_path / "none"), "--json")
    assert lab.returncode == EXIT_FINDINGS and not any(s["up"] for s in json.loads(lab.stdout)["switches"])
    ib = run_in_process("gpufabric", "ib", "lab", "status", "--state-dir", str(tmp_path / "none"))
    assert ib.returncode == EXIT_FINDINGS, ib.stderr


def test_findings_win_over_warnings_under_strict():
    """3 only when there is nothing else to say (tests/intent/test_intent_warnings.py runs --strict on each
    command that reads an intent)."""
    from gpufabric.cli.options import warnings_exit

    warned, clean = SimpleNamespace(warnings=["w"]), SimpleNamespace(warnings=[])
    assert warnings_exit(warned, True, outcome(True)) == EXIT_WARNINGS  # type: ignore[arg-type]
    assert warnings_exit(warned, True, outcome(False)) == EXIT_FINDINGS  # type: ignore[arg-type]
    assert warnings_exit(warned, False, outcome(True)) == EXIT_OK  # type: ignore[arg-type]
    assert warnings_exit(clean, True, outcome(True)) == EXIT_OK  # type: ignore[arg-type]


def test_a_bug_is_1_and_never_a_finding(monkeypatch, capsys):
    from gpufabric.cli import validate_cmd

    def crash(*_a: Any) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(validate_cmd, "validate", crash)
    monkeypatch.setenv("GPUFABRIC_SWITCH_PASSWORD", "x")
    assert _code(["validate", INTENT]) == EXIT_INTERNAL
    assert "internal error: KeyError" in capsys.readouterr().err


def test_the_commands_found_elsewhere_are_commands_with_findings():
    rows = _rows()
    for name, where in FOUND_ELSEWHERE.items():
        assert name in rows, name
        assert (ROOT / where.split(" ")[0]).is_file(), where
    assert all(rows[name][2] or name == "demo" for name in FOUND_ELSEWHERE)


def test_devices_are_never_reached_with_the_example_fabric(tmp_path):
    """From a folder without inventory/fabric.yml, what reaches switches or schedulers is refused (2), naming
    what to do; what only reads the intent still uses the shipped example."""
    reaching = (
        ["nornir", "push", "--dry-run"],
        ["nornir", "validate"],
        ["gpufabric", "maintenance", "status"],
        ["gpufabric", "scheduler", "drain", "--device", "x"],
        ["gpufabric", "telemetry", "scrape"],
    )
    for argv in reaching:
        done = run_in_process(*argv, cwd=tmp_path, **ENV)
        assert done.returncode == EXIT_INPUT, (argv, done.stderr)
        assert "no intent file named, and none here" in done.stderr and "inventory/fabric.yml" in done.stderr
    assert run_in_process("gpufabric", "plan", cwd=tmp_path).returncode == EXIT_OK
    (tmp_path / "inventory").mkdir()
    (tmp_path / "inventory" / "fabric.yml").write_text(Path(INTENT).read_text())
    done = run_in_process("nornir", "validate", "--state-dir", str(tmp_path / "nolab"), cwd=tmp_path, **ENV)
    assert done.returncode == EXIT_INPUT and "no lab" in done.stderr  # the local intent was read


def test_verbose_works_after_the_subcommand_too(monkeypatch, capsys):
    """-v before or after the command's name (or both, counted together) turns gpufabric's log on;
    --log-level still decides when given."""
    import logging

    from gpufabric.cli import logs

    levels: list[int] = []
    monkeypatch.setattr(logs, "configure", levels.append)
    cases = {
        ("-v", "check", INTENT): logging.INFO,
        ("check", INTENT, "-v"): logging.INFO,
        ("check", "-vv", INTENT): logging.DEBUG,
        ("-v", "check", INTENT, "-v"): logging.DEBUG,
        ("maintenance", "status", "-v", "--help"): logging.INFO,
        ("--log-level", "error", "check", INTENT, "-vv"): logging.ERROR,
    }
    for argv, level in cases.items():
        levels.clear()
        assert _code(list(argv)) == EXIT_OK, argv
        assert levels and levels[-1] == level, (argv, levels)
    levels.clear()
    assert _code(["check", INTENT]) == EXIT_OK and levels == []
    capsys.readouterr()
    help_text = run_in_process("gpufabric", "--help").stdout
    assert "also after the subcommand" in help_text
