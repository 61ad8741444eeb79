"""The push's audit trail and logs, end to end through `nornir push`: one JSON line per switch touched,
with the right outcome, and never a secret in it or in the DEBUG log.

No switch runs here: every platform's driver is replaced by `AuditSwitchDouble`, a test double of a
NAPALM driver with commit-confirm (a running configuration, a pending commit, a rollback), whose
diff is the whole candidate against the running text, so the rendered SNMP community is in every
diff it gives. Everything else is the real push: the intent (inventory/examples/multi-vendor.yml,
four platforms), rendering with the secrets resolved, the Nornir runner and tasks, the rollout,
the command line.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import ROOT
from napalm.base import NetworkDriver
from napalm.base.exceptions import CommitError
from nornir.core.plugins.connections import ConnectionPluginRegister
from nornir_napalm.plugins.connections import CONNECTION_NAME, Napalm

from gpufabric.cli import main
from gpufabric.fleet import access
from gpufabric.push import service as cmd  # the push service: where the CLI's push runs
from gpufabric.push.audit import AuditError, AuditLog, parse_time, read
from gpufabric.push.lock import fabric_lock

INTENT = str(ROOT / "inventory" / "examples" / "multi-vendor.yml")
CANARIES = {
    "GPUFABRIC_SWITCH_PASSWORD": "canary-audit-Pw-61c2e0",
    "GPUFABRIC_SNMP_COMMUNITY": "canary-audit-Snmp-9d4b71",
    "GPUFABRIC_SALT_KEY": "canary-audit-Salt-3fa80e",
}
OLD = "hostname old\n"
# A switch's error holding Rich markup (one that does not parse among it), a screen clear and a title change.
HOSTILE = "rejected [/] [bold red]loud[/bold red] \x1b[2J\x1b]0;pwned\x07 end"


class AuditSwitchDouble(NetworkDriver):
    """Test double of a switch's NAPALM driver; its behaviour per switch comes from BEHAVE[hostname]."""

    # hostname -> "change" | "in sync" | "refuse commit" | "refuse commit, hostile words" | "refuse rollback"
    BEHAVE: ClassVar[dict[str, str]] = {}
    RUNNING: ClassVar[dict[str, str]] = {}
    OPENED: ClassVar[list[str]] = []

    def __init__(self, hostname: str, username: str, password: str, timeout: int = 60, optional_args: Any = None):
        self.hostname, self.password, self.candidate = hostname, password, ""
        self.before: str | None = None
        AuditSwitchDouble.OPENED.append(hostname)

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def load_replace_candidate(self, filename: str | None = None, config: str | None = None) -> None:
        self.candidate = config or ""
        if self.BEHAVE[self.hostname] == "in sync":
            self.RUNNING[self.hostname] = self.candidate

    def compare_config(self) -> str:
        running = self.RUNNING.setdefault(self.hostname, OLD)
        return "" if self.candidate == running else f"-{running}+{self.candidate}"

    def discard_config(self) -> None:
        self.candidate = ""

    def commit_config(self, message: str = "", revert_in: int | None = None) -> None:
        if self.BEHAVE[self.hostname] == "refuse commit":
            # A driver that echoes what it was given into its error: the reason must still show no secret.
            raise CommitError(f"rejected for {self.password}: {self.candidate[-400:]}")
        if self.BEHAVE[self.hostname] == "refuse commit, hostile words":
            raise CommitError(HOSTILE)
        self.before, self.RUNNING[self.hostname] = self.RUNNING[self.hostname], self.candidate

    def confirm_commit(self) -> None:
        pass

    def rollback(self) -> None:
        if self.BEHAVE[self.hostname] == "refuse rollback":
            raise ConnectionError("session dropped")
        if self.before is not None:
            self.RUNNING[self.hostname] = self.before

    def get_bgp_neighbors(self) -> dict[str, Any]:
        return {}

    def get_config(self, retrieve: str = "all", full: bool = False, sanitized: bool = False) -> dict[str, str]:
        """The running configuration push's proof holds to the switch's expectation: what was committed."""
        return {"running": self.RUNNING.get(self.hostname, ""), "startup": "", "candidate": ""}

    def get_interfaces(self) -> dict[str, Any]:
        return {}


@pytest.fixture
def switches(monkeypatch, tmp_path):
    """Every platform's driver is the double; the canary secrets are set; the lock and the trail live in tmp."""
    from gpufabric.fleet.inventory import inventory_from_plan
    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan

    # `nornir push` registers its connection plugin for the process: the next tests get theirs back.
    monkeypatch.setitem(ConnectionPluginRegister.available, CONNECTION_NAME, Napalm)
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GPUFABRIC_AUDIT_LOG", str(tmp_path / "trail" / "audit.jsonl"))
    monkeypatch.setattr(access, "network_driver", lambda platform: AuditSwitchDouble)
    monkeypatch.setattr(cmd, "fabric_lock", lambda fabric, **kw: fabric_lock(fabric, tmp_path / "locks", **kw))
    hosts = inventory_from_plan(build_plan(load_intent(INTENT))).hosts
    behave: dict[str, str] = {}
    monkeypatch.setattr(AuditSwitchDouble, "BEHAVE", behave)
    monkeypatch.setattr(AuditSwitchDouble, "RUNNING", {})
    monkeypatch.setattr(AuditSwitchDouble, "OPENED", [])

    def set_up(**by_switch: str) -> Path:
        for switch, how in by_switch.items():
            behave[str(hosts[switch.replace("_", "-")].hostname)] = how
        return tmp_path / "trail" / "audit.jsonl"

    return set_up


def push(*args: str) -> int:
    # The double's diffs are no platform's form (every one would need a drain): the trail is the subject here.
    with pytest.raises(SystemExit) as done:
        main(["push", INTENT, "--wait", "0", "--check-timeout", "3", "--json", "--drain", "never", *args])
    return int(done.value.code or 0)


def records(path: Path) -> list[dict[str, Any]]:
    return [r for _, r in read(path) if r is not None]


SELECTION = ("cmp-su1-leaf1", "sto-leaf1a", "biz-leaf1", "cmp-su2-leaf1", "oob-mgmt1")


def _select() -> list[str]:
    return [arg for name in SELECTION for arg in ("--device", name)]


@pytest.mark.slow
def test_one_record_per_switch_touched_with_its_outcome(switches, capsys):
    """Canary cmp-su1-leaf1 changes; sto-leaf1a already runs its configuration; in the next batch
    biz-leaf1 refuses its commit, so cmp-su2-leaf1 is rolled back with it; oob-mgmt1's batch never
    goes out. Each gets one record saying so, with the push's id and who ran it from where."""
    path = switches(
        cmp_su1_leaf1="change", sto_leaf1a="in sync", biz_leaf1="refuse commit", cmp_su2_leaf1="change",
        oob_mgmt1="change",
    )  # fmt: skip
    code = push(*_select())
    report = json.loads(capsys.readouterr().out)
    assert code == 4
    found = records(path)
    assert sorted(r["switch"] for r in found) == sorted(SELECTION)  # one each, none twice
    by = {r["switch"]: r for r in found}
    assert {name: r["status"] for name, r in by.items()} == {
        "cmp-su1-leaf1": "changed",
        "sto-leaf1a": "unchanged",
        "biz-leaf1": "rolled back",
        "cmp-su2-leaf1": "rolled back",
        "oob-mgmt1": "skipped",
    }
    assert by["cmp-su2-leaf1"]["reason"] == "rolled back with its batch: biz-leaf1 rolled back"
    assert {name: r["status"] for name, r in by.items()} == {d["device"]: d["status"] for d in report["devices"]}
    assert {(r["platform"], r["plane"]) for r in found} >= {("cumulus", "compute"), ("eos", "storage")}
    assert by["biz-leaf1"]["platform"] == "nxos" and by["oob-mgmt1"]["platform"] == "frr"
    assert {r["push_id"] for r in found} == {report["push_id"]}
    assert {r["controller"] for r in found} == {report["controller"]}
    assert {r["fabric"] for r in found} == {"multi-vendor"}
    import pwd

    assert {r["os_user"] for r in found} == {pwd.getpwuid(os.getuid()).pw_name}
    assert {r["login_user"] for r in found} == {"admin"}
    assert {r["dry_run"] for r in found} == {False} and {r["target"] for r in found} == {"switches"}
    assert by["sto-leaf1a"]["diff_sha256"] is None
    changed = by["cmp-su1-leaf1"]["diff_sha256"]
    assert changed.startswith("sha256:") and len(changed) == 7 + 64
    from nornir_tasks.push import digest

    masked = next(d for d in report["devices"] if d["device"] == "cmp-su1-leaf1")["diff"]
    assert changed == digest(masked)  # the digest of the masked diff the report shows
    for r in found:
        assert r["time"].endswith("Z") and parse_time(r["time"]) >= parse_time(r["push_started"])


@pytest.fixture
def quiet_again():
    """`--log-level` configures gpufabric's loggers for the process: put them back for the next tests."""
    yield
    from gpufabric.cli import logs

    for package in logs.PACKAGES:
        logger = logging.getLogger(package)
        logger.handlers = [h for h in logger.handlers if not isinstance(h, logs._Stderr)]
        logger.setLevel(logging.NOTSET)


@pytest.mark.slow
def test_no_secret_in_the_trail_or_the_debug_log(switches, capsys, caplog, quiet_again):
    """The switch password, the SNMP community and the salt key are canaries: the community is in every
    diff the double gives, and biz-leaf1's refusal echoes the password and the candidate. None of them
    is in the audit file, in gpufabric's DEBUG log, or in anything any library logged at DEBUG."""
    caplog.set_level(logging.DEBUG)  # the root logger: Nornir's and NAPALM's records too
    path = switches(
        cmp_su1_leaf1="change", sto_leaf1a="in sync", biz_leaf1="refuse commit", cmp_su2_leaf1="change",
        oob_mgmt1="change",
    )  # fmt: skip
    with pytest.raises(SystemExit):
        main(["--log-level", "debug", "push", INTENT, "--wait", "0", "--check-timeout", "3", "--drain", "never",
              *_select()])  # fmt: skip
    captured = capsys.readouterr()
    trail = path.read_text()
    logged = captured.err + "\n".join(r.getMessage() for r in caplog.records)
    # What was checked holds what it should: the diffs were there (masked), the log has the push's steps.
    assert "********" in captured.out
    for step in ("connect ", "preview would change", "commit sha256:", "confirm changed", "rolled back"):
        assert step in logged, step
    assert "Running task 'preview'" in logged  # Nornir's own INFO line, with its arguments
    for name, value in CANARIES.items():
        assert value not in trail, name
        assert value not in logged, name
        assert value not in captured.out + captured.err, name
    assert len(records(path)) == len(SELECTION)


def test_a_dry_run_is_recorded_too(switches, capsys):
    path = switches(cmp_su1_leaf1="change", sto_leaf1a="in sync")
    assert push("--dry-run", "--device", "cmp-su1-leaf1", "--device", "sto-leaf1a") == 0
    found = {r["switch"]: r for r in records(path)}
    assert {n: (r["status"], r["dry_run"]) for n, r in found.items()} == {
        "cmp-su1-leaf1": ("would change", True),
        "sto-leaf1a": ("unchanged", True),
    }
    assert found["cmp-su1-leaf1"]["diff_sha256"].startswith("sha256:")


def test_a_refused_push_is_recorded_for_every_targeted_switch(switches, capsys, tmp_path):
    """Another push of the fabric holds the lock: nothing is read or changed, and each switch's record says why."""
    path = switches(cmp_su1_leaf1="change", sto_leaf1a="change")
    with fabric_lock("multi-vendor", tmp_path / "locks"):
        code = push("--device", "cmp-su1-leaf1", "--device", "sto-leaf1a")
    assert code == 2 and "another push of fabric" in capsys.readouterr().err
    found = records(path)
    assert [(r["switch"], r["status"]) for r in found] == [("cmp-su1-leaf1", "refused"), ("sto-leaf1a", "refused")]
    assert all(r["reason"].startswith("another push of fabric 'multi-vendor' is running") for r in found)
    assert AuditSwitchDouble.OPENED == []


def test_a_trail_that_cannot_be_written_stops_the_push_before_any_switch_is_reached(switches, tmp_path, capsys):
    switches(cmp_su1_leaf1="change")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    code = push("--audit-log", str(blocker / "audit.jsonl"), "--device", "cmp-su1-leaf1")
    err = capsys.readouterr().err
    assert code == 2 and f"cannot open the audit log {blocker / 'audit.jsonl'}" in " ".join(err.split())
    assert AuditSwitchDouble.OPENED == [] and AuditSwitchDouble.RUNNING == {}


def test_the_trail_is_private_and_others_writable_one_is_refused(tmp_path):
    path = tmp_path / "state" / "gpufabric" / "audit.jsonl"
    with AuditLog(path) as trail:
        trail.append({"switch": "s1"})
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o620)
    with pytest.raises(AuditError, match=r"may be written by others \(mode 0620\)"):
        AuditLog(path)
    with pytest.raises(AuditError, match="not a plain file"):
        AuditLog(Path("/dev/null"), uid=0)  # /dev is root's: only the file itself is wrong


def test_pushes_appending_at_once_never_tear_a_record(tmp_path):
    """Four processes append 300 records of 3 KB each to one trail at once: every line is one whole record."""
    path = tmp_path / "audit.jsonl"
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from gpufabric.push.audit import AuditLog\n"
        "with AuditLog(Path(sys.argv[1])) as log:\n"
        "    for i in range(300):\n"
        "        log.append({'writer': sys.argv[2], 'n': i, 'pad': sys.argv[2] * 3000})\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [
        subprocess.Popen([sys.executable, "-c", code, str(path), w], env=env) for w in ("a", "b", "c", "d")
    ]  # fmt: skip
    assert [w.wait(timeout=60) for w in writers] == [0, 0, 0, 0]
    lines = list(read(path))
    assert len(lines) == 1200 and all(r is not None for _, r in lines)
    for w in "abcd":
        assert sorted(r["n"] for _, r in lines if r and r["writer"] == w) == list(range(300))
        assert all(r["pad"] == w * 3000 for _, r in lines if r and r["writer"] == w)


def _trail(path: Path) -> None:
    first, second = "gf-20261123T100000Z-aaaaaa", "gf-20261123T120000Z-bbbbbb"
    rows = [
        {"time": "2026-11-23T10:00:00.000Z", "push_id": first, "switch": "s1", "status": "changed"},
        {"time": "2026-11-23T10:00:01.000Z", "push_id": first, "switch": "s2", "status": "unchanged"},
        {"time": "2026-11-23T12:00:00.000Z", "push_id": second, "switch": "s1", "status": "rolled back",
         "reason": "port swp1 went down", "diff_sha256": "sha256:" + "ab" * 32},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]) + '{"torn": \n' + json.dumps(rows[2]) + "\n")


def test_gpufabric_audit_reads_the_trail_back_filtered(tmp_path, capsys, monkeypatch):
    path = tmp_path / "audit.jsonl"
    _trail(path)
    monkeypatch.setenv("GPUFABRIC_AUDIT_LOG", str(path))

    def audit(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as done:
            main(["audit", *args])
        captured = capsys.readouterr()
        return int(done.value.code or 0), captured.out, captured.err

    code, out, err = audit("--json")
    assert code == 0 and [r["switch"] for r in json.loads(out)] == ["s1", "s2", "s1"]
    assert f"{path}:3: not a JSON record; skipped" in err
    assert [r["status"] for r in json.loads(audit("--json", "--device", "s1")[1])] == ["changed", "rolled back"]
    assert [r["switch"] for r in json.loads(audit("--json", "--push", "gf-20261123T100000Z-aaaaaa")[1])] == ["s1", "s2"]
    assert [r["status"] for r in json.loads(audit("--json", "--since", "2026-11-23T11:00:00Z")[1])] == ["rolled back"]
    assert [r["status"] for r in json.loads(audit("--json", "--since", "2026-11-23T12:30:00+02:00")[1])] == [
        "rolled back"
    ]  # 10:30 UTC
    code, out, _ = audit("--device", "s1")
    assert code == 0 and "rolled back" in out and "port swp1 went down" in out and "abababababab" in out
    code, _, err = audit("--since", "yesterday")
    assert code == 2 and "is not an ISO 8601 time" in err


def test_logs_are_quiet_unless_asked_for(switches, capsys, monkeypatch, quiet_again):
    switches(cmp_su1_leaf1="change")
    dry = ["push", INTENT, "--dry-run", "--json", "--device", "cmp-su1-leaf1"]

    def stderr(*args: str) -> str:
        with pytest.raises(SystemExit):
            main(list(args))
        return capsys.readouterr().err

    quiet = stderr(*dry)
    assert " INFO " not in quiet and " DEBUG " not in quiet
    info = stderr("-v", *dry)
    assert " INFO nornir_tasks.push: cmp-su1-leaf1: preview would change sha256:" in info
    assert " INFO gpufabric.fleet.target: target: the real switches of fabric multi-vendor, as admin" in info
    assert " DEBUG " not in info
    monkeypatch.setenv("GPUFABRIC_LOG_LEVEL", "debug")
    debug = stderr(*dry)
    assert " INFO gpufabric.fleet.access: connect " in debug and " as admin (cumulus)" in debug
    assert " DEBUG gpufabric.fleet.access: connected " in debug
    assert " DEBUG gpufabric.push.audit: audit log " in debug


def test_a_push_refused_for_another_pushs_pending_change_is_recorded(switches, capsys, monkeypatch):
    """sto-leaf1a has another push's change awaiting confirmation: nothing is changed anywhere, and both
    targeted switches' records say the push was refused, and why."""
    path = switches(cmp_su1_leaf1="change", sto_leaf1a="change")
    other = {"push_id": "gf-20261123T101500Z-a1b2c3", "started": "2026-11-23T10:15:00Z", "controller": "ctl-a"}
    busy = {h for h, how in AuditSwitchDouble.BEHAVE.items() if how == "change"}
    hostname = sorted(busy)[-1]

    def pending_push(self: AuditSwitchDouble) -> dict[str, str] | None:
        return other if self.hostname == hostname else None

    monkeypatch.setattr(AuditSwitchDouble, "pending_push", pending_push, raising=False)
    assert push("--device", "cmp-su1-leaf1", "--device", "sto-leaf1a") == 2
    found = records(path)
    assert sorted((r["switch"], r["status"]) for r in found) == [
        ("cmp-su1-leaf1", "refused"),
        ("sto-leaf1a", "refused"),
    ]
    assert all(r["reason"].startswith("another push is in progress: gf-20261123T101500Z-a1b2c3") for r in found)
    assert AuditSwitchDouble.RUNNING == {}  # not even a candidate diffed


BATCH_TWO = ("cmp-su1-leaf1", "biz-leaf1", "cmp-su2-leaf1")


@pytest.fixture
def no_settling(monkeypatch):
    """The doubles' checks pass at once: no two seconds of settling per batch."""
    import functools

    from nornir_tasks.push import PushOptions

    monkeypatch.setattr(cmd, "PushOptions", functools.partial(PushOptions, settle=0.0))


def test_a_printer_that_fails_costs_the_trail_no_batch_record(switches, no_settling, capsys, monkeypatch):
    """The canary cmp-su1-leaf1 changes; in the next batch biz-leaf1 refuses its commit and cmp-su2-leaf1's
    rollback fails. The line printed for that batch raises: the trail still holds what really happened
    to both, the failed rollback included, not "the push stopped"."""
    from gpufabric.cli.push_progress import PushProgress

    path = switches(cmp_su1_leaf1="change", biz_leaf1="refuse commit", cmp_su2_leaf1="refuse rollback")
    printed: list[int] = []

    def printer(self: PushProgress, b: Any, done: Any) -> None:
        printed.append(b.number)
        if b.number == 2:
            raise RuntimeError("the terminal went away")

    monkeypatch.setattr(PushProgress, "on_batch", printer)
    code = push(*[arg for name in BATCH_TWO for arg in ("--device", name)])
    assert code == 1 and printed == [1, 2]
    assert "internal error: RuntimeError: the terminal went away" in capsys.readouterr().err
    by = {r["switch"]: r for r in records(path)}
    assert sorted(by) == sorted(BATCH_TWO)  # one record each, none replaced by "the push stopped"
    assert by["cmp-su2-leaf1"]["status"] == "failed"
    assert by["cmp-su2-leaf1"]["reason"] == (
        "rolled back with its batch: biz-leaf1 rolled back; rollback failed: ConnectionError: session dropped"
    )
    assert by["biz-leaf1"]["status"] == "rolled back" and "(after the commit: rolled back)" in by["biz-leaf1"]["reason"]
    assert by["cmp-su1-leaf1"]["status"] == "changed" and by["cmp-su1-leaf1"]["batch"] == 1


def test_a_switchs_error_with_markup_and_escapes_is_reported_as_text(switches, no_settling, capsys):
    """biz-leaf1's refusal holds `[/]`, `[bold red]` and escape sequences: the report and the batch's line
    show them literally, no escape reaches the terminal, and the push ends with its findings' code (4, a
    switch rolled back), not as a crash; the trail keeps the switch's words as they were."""
    path = switches(cmp_su1_leaf1="change", biz_leaf1="refuse commit, hostile words", cmp_su2_leaf1="change")
    with pytest.raises(SystemExit) as done:
        main(["push", INTENT, "--wait", "0", "--check-timeout", "3", "--no-diff", "--drain", "never",
              *[arg for name in BATCH_TWO for arg in ("--device", name)]])  # fmt: skip
    captured = capsys.readouterr()
    assert done.value.code == 4
    assert "internal error" not in captured.err
    shown = r"rejected [/] [bold red]loud[/bold red] \x1b[2J\x1b]0;pwned\x07 end"
    assert shown in captured.err  # the batch's line, on one line
    table = "".join(ch for ch in captured.out if ch not in " \n│┃|")
    assert "".join(shown.split()) in table  # the report's table (its column may wrap the reason)
    for control in ("\x1b", "\x07"):
        assert control not in captured.out + captured.err
    by = {r["switch"]: r for r in records(path)}
    assert by["biz-leaf1"]["status"] == "rolled back" and HOSTILE in by["biz-leaf1"]["reason"]


def test_a_dry_runs_diff_shows_a_switchs_escapes_and_keeps_our_colour(switches, capsys, monkeypatch):
    """cmp-su1-leaf1's running configuration holds a title change (OSC) and a screen clear (CSI): the dry
    run's diff, on a colour terminal, shows both escaped; the only escape sequences written are our own
    styling (the bold header)."""
    import io

    from rich.console import Console

    from gpufabric.cli import push_progress

    switches(cmp_su1_leaf1="change")
    hostname = next(h for h, how in AuditSwitchDouble.BEHAVE.items() if how == "change")
    AuditSwitchDouble.RUNNING[hostname] = "hostname old\x1b]0;title\x07\n\x1b[2J banner\r\n"
    terminal = io.StringIO()
    monkeypatch.setattr(push_progress, "out", Console(file=terminal, force_terminal=True, color_system="standard"))
    with pytest.raises(SystemExit) as done:
        main(["push", INTENT, "--dry-run", "--device", "cmp-su1-leaf1"])
    assert done.value.code == 0
    shown = terminal.getvalue()
    assert r"-hostname old\x1b]0;title\x07" in shown and r"\x1b[2J banner" in shown
    assert "\x1b]" not in shown and "\x1b[2J" not in shown and "\x07" not in shown and "\r" not in shown
    assert "\x1b[1m--- cmp-su1-leaf1" in shown  # our colour stays
    assert set(re.findall(r"\x1b\[[0-9;]*m", shown)) <= {"\x1b[1m", "\x1b[0m"}
    assert "\x1b" not in capsys.readouterr().out
