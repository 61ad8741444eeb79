"""Files gpufabric reads or writes, planted: a link where a file was expected, a FIFO (a read blocks
forever), /dev/zero (a read never ends), a file larger than the thing it names can be, bytes that are
not UTF-8. Each is refused with a located error (exit 2 from the command line), in bounded time and
memory, and nothing is written through a link.

Reads that could hang run in a child process with a generous timeout and a cap on its memory, so a
regression fails the test instead of hanging the suite or filling the machine."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env

from gpufabric.inputs import InputError, read_lines
from gpufabric.push import audit
from gpufabric.push.audit import AuditError, AuditLog

HANG = 60  # seconds: far beyond any of these reads, far short of forever
MEMORY = 2 << 30  # bytes of address space for a child: a read that never ends fails instead of filling the machine


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def gpufabric(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The command line as a user runs it, bounded in time and memory."""
    return subprocess.run(
        [sys.executable, "-m", "gpufabric", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=cli_env(),
        timeout=HANG,
        preexec_fn=_capped,
        check=False,
    )


def python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=cli_env(PYTHONPATH=os.environ.get("PYTHONPATH", str(ROOT))),
        timeout=HANG,
        preexec_fn=_capped,
        check=False,
    )


def one_line(text: str) -> str:
    return " ".join(text.split())


# -- the audit trail, written -------------------------------------------------------------------------


def test_a_link_planted_as_the_trail_is_refused_and_its_target_untouched(tmp_path):
    folder = tmp_path / "trail"
    folder.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (folder / "audit.jsonl").symlink_to(victim)
    with pytest.raises(AuditError, match="is a symbolic link: refusing to follow it"):
        AuditLog(folder / "audit.jsonl")
    assert victim.read_text() == "precious\n"


def test_a_dangling_link_planted_as_the_trail_creates_nothing(tmp_path):
    folder = tmp_path / "trail"
    folder.mkdir(mode=0o700)
    target = tmp_path / "made-by-the-push"
    (folder / "audit.jsonl").symlink_to(target)
    with pytest.raises(AuditError, match="is a symbolic link"):
        AuditLog(folder / "audit.jsonl")
    assert not target.exists() and not target.is_symlink()


def test_the_trails_folder_must_be_the_accounts_and_written_by_no_one_else(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # like /tmp: anyone could plant a link there before the push opens the file
    with pytest.raises(AuditError, match=r"its folder .* is writable by others \(mode 0777\)"):
        AuditLog(shared / "audit.jsonl")
    assert not (shared / "audit.jsonl").exists()
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    someone_else = os.geteuid() + 1
    with pytest.raises(AuditError, match=rf"belongs to uid {os.geteuid()}, not {someone_else}"):
        AuditLog(mine / "audit.jsonl", uid=someone_else)
    assert not (mine / "audit.jsonl").exists()


def test_a_fifo_planted_as_the_trail_is_refused_without_waiting_for_a_reader(tmp_path):
    folder = tmp_path / "trail"
    folder.mkdir(mode=0o700)
    os.mkfifo(folder / "audit.jsonl", 0o600)
    done = python(
        "import sys\nfrom pathlib import Path\nfrom gpufabric.push.audit import AuditLog\nAuditLog(Path(sys.argv[1]))",
        str(folder / "audit.jsonl"),
    )
    assert done.returncode != 0
    assert "AuditError: cannot open the audit log" in done.stderr


# -- the audit trail, read back ----------------------------------------------------------------------


def test_gpufabric_audit_refuses_dev_zero_and_a_fifo_in_bounded_time(tmp_path):
    for name, why in (("/dev/zero", "is a device, not a regular file"), (tmp_path / "fifo", "is a FIFO")):
        if name != "/dev/zero":
            os.mkfifo(name)
        done = gpufabric("audit", "--audit-log", str(name))
        assert done.returncode == 2, done.stderr
        assert f"error: {name}" in done.stderr and why in one_line(done.stderr)
        assert "internal error" not in done.stderr and "Traceback" not in done.stderr


def test_gpufabric_audit_refuses_a_line_longer_than_any_record_at_its_line(tmp_path):
    path = tmp_path / "audit.jsonl"
    record = json.dumps({"switch": "s1", "status": "changed"})
    path.write_text(record + "\n" + json.dumps({"switch": "s2", "pad": "x" * audit.MAX_RECORD}) + "\n")
    done = gpufabric("audit", "--json", "--audit-log", str(path))
    assert done.returncode == 2
    assert f"error: {path}:2" in done.stderr and "line 2 is longer than 65,536 bytes" in one_line(done.stderr)
    assert done.stdout == ""


def test_gpufabric_audit_names_the_line_that_is_not_utf8(tmp_path):
    path = tmp_path / "audit.jsonl"
    path.write_bytes(b'{"switch": "s1"}\n{"switch": "caf\xe9"}\n')
    done = gpufabric("audit", "--json", "--audit-log", str(path))
    assert done.returncode == 2
    assert (
        f"error: {path}:2" in done.stderr and "is not UTF-8 text" in done.stderr and "save it as UTF-8" in done.stderr
    )


def test_a_trail_beyond_its_bound_is_refused_not_read_on(tmp_path, monkeypatch):
    path = tmp_path / "audit.jsonl"
    line = json.dumps({"switch": "s1", "status": "changed"}) + "\n"
    path.write_text(line * 100)
    monkeypatch.setattr(audit, "MAX_TRAIL", len(line) * 10)
    seen = []
    with pytest.raises(InputError, match="is larger than") as refused:
        seen.extend(audit.read(path))
    assert len(seen) == 10 and refused.value.lines == {(): 11}


def test_gpufabric_audit_prints_a_records_text_as_text(tmp_path):
    path = tmp_path / "audit.jsonl"
    path.write_text(
        json.dumps({"switch": "s1", "status": "failed", "reason": "[bold red]x[/] \x1b]0;owned\x07"}) + "\n"
    )
    done = gpufabric("audit", "--audit-log", str(path))
    assert done.returncode == 0
    assert "[bold red]x[/]" in done.stdout and "\x1b" not in done.stdout and "\\x1b]0;owned\\x07" in done.stdout


def test_read_lines_bounds_each_line_and_counts_lines_from_one(tmp_path):
    path = tmp_path / "lines"
    path.write_bytes(b"abcd\r\n" + b"x" * 8 + b"\nlast")
    assert list(read_lines(path, what="a test file", max_line=8, max_bytes=100)) == [
        (1, "abcd"),
        (2, "x" * 8),
        (3, "last"),
    ]
    with pytest.raises(InputError, match="line 2 is longer than 7 bytes") as refused:
        list(read_lines(path, what="a test file", max_line=7, max_bytes=100))
    assert refused.value.lines == {(): 2}
