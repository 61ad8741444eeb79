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
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, cli_env

from gpufabric.inputs import InputError
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


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The command line in this process, for inputs that cannot hang it (regular files): exit code, out, err."""
    from gpufabric.cli import main

    with pytest.raises(SystemExit) as done:
        main(list(args))
    captured = capsys.readouterr()
    return int(done.value.code or 0), captured.out, captured.err


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


def test_gpufabric_audit_refuses_a_line_longer_than_any_record_at_its_line(tmp_path, capsys):
    path = tmp_path / "audit.jsonl"
    record = json.dumps({"switch": "s1", "status": "changed"})
    path.write_text(record + "\n" + json.dumps({"switch": "s2", "pad": "x" * audit.MAX_RECORD}) + "\n")
    code, out, err = cli(capsys, "audit", "--json", "--audit-log", str(path))
    assert code == 2 and out == ""
    assert f"error: {path}:2" in err and "line 2 is longer than 65,536 bytes" in one_line(err)


def test_gpufabric_audit_names_the_line_that_is_not_utf8(tmp_path, capsys):
    path = tmp_path / "audit.jsonl"
    path.write_bytes(b'{"switch": "s1"}\n{"switch": "caf\xe9"}\n')
    code, _, err = cli(capsys, "audit", "--json", "--audit-log", str(path))
    assert code == 2
    assert f"error: {path}:2" in err and "is not UTF-8 text" in err and "save it as UTF-8" in err


def test_a_trail_beyond_its_bound_is_refused_not_read_on(tmp_path, monkeypatch):
    path = tmp_path / "audit.jsonl"
    line = json.dumps({"switch": "s1", "status": "changed"}) + "\n"
    path.write_text(line * 100)
    monkeypatch.setattr(audit, "MAX_TRAIL", len(line) * 10)
    seen = []
    with pytest.raises(InputError, match="is larger than") as refused:
        seen.extend(audit.read(path))
    assert len(seen) == 10 and refused.value.lines == {(): 11}


def test_gpufabric_audit_prints_a_records_text_as_text(tmp_path, capsys):
    path = tmp_path / "audit.jsonl"
    path.write_text(
        json.dumps({"switch": "s1", "status": "failed", "reason": "[bold red]x[/] \x1b]0;owned\x07"}) + "\n"
    )
    code, out, _ = cli(capsys, "audit", "--audit-log", str(path))
    assert code == 0
    assert "[bold red]x[/]" in out and "\x1b" not in out and "\\x1b]0;owned\\x07" in out


def test_read_lines_bounds_each_line_and_counts_lines_from_one(tmp_path):
    from gpufabric.inputs import read_lines

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


# -- rendered files handed to `verify` and `push --from` ----------------------------------------------


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """The default fabric rendered into a folder, once; each test plants in a copy."""
    from render_helpers import render_into

    from gpufabric.intent import load_intent
    from gpufabric.plan import build_plan

    plan = build_plan(load_intent(str(ROOT / "inventory" / "fabric.yml")))
    folder = tmp_path_factory.mktemp("rendered")
    render_into(plan, folder)
    return plan, folder


def _copy(folder: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(folder, to)
    return to


def _plant(path: Path, what: str) -> str:
    """Put `what` where the rendered file `path` was; the words the refusal says of it."""
    path.unlink()
    if what == "fifo":
        os.mkfifo(path)
        return "is a FIFO, not a regular file"
    if what == "/dev/zero":
        path.symlink_to("/dev/zero")
        return "is a device, not a regular file"
    if what == "latin-1":
        path.write_bytes("hostname caf\u00e9\n".encode("latin-1"))
        return "is not UTF-8 text"
    with path.open("wb") as fh:  # sparse: no disk, and a read of it never ends before the bound
        fh.truncate(16 * 1024 * 1024 + 1)
    return "is larger than 16 MiB"


@pytest.mark.parametrize("what", ["fifo", "/dev/zero"])
def test_verify_refuses_what_is_not_a_rendered_file_in_bounded_time(rendered, tmp_path, what):
    _, folder = rendered
    copy = _copy(folder, tmp_path / "configs")
    says = _plant(copy / "cmp-spine1.frr.conf", what)
    done = gpufabric("verify", str(ROOT / "inventory" / "fabric.yml"), "--configs", str(copy), "--no-vendor")
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"error: {copy / 'cmp-spine1.frr.conf'}" in done.stderr and says in one_line(done.stderr)
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("what", ["latin-1", "oversize"])
def test_verify_refuses_a_rendered_file_that_is_not_utf8_or_too_large(rendered, tmp_path, what):
    from gpufabric.verify.runner import verify

    plan, folder = rendered
    copy = _copy(folder, tmp_path / "configs")
    says = _plant(copy / "cmp-spine1.frr.conf", what)
    with pytest.raises(InputError, match=says) as refused:
        verify(plan, copy)
    assert refused.value.file == str(copy / "cmp-spine1.frr.conf")


@pytest.mark.slow
def test_push_from_a_folder_refuses_a_fifo_for_a_rendered_file(rendered, tmp_path):
    _, folder = rendered
    copy = _copy(folder, tmp_path / "configs")
    _plant(copy / "cmp-spine1.nft", "fifo")
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from gpufabric.config.context import LinkIndex\nfrom gpufabric.config.secrets import ReferenceHasher\n"
        "from gpufabric.inputs import InputError\nfrom gpufabric.intent import load_intent\n"
        "from gpufabric.plan import build_plan\nfrom gpufabric.fleet.candidates import candidate\n"
        "plan = build_plan(load_intent(sys.argv[1]))\n"
        "index = LinkIndex(plan, ReferenceHasher(plan.intent.fabric.name, {}))\n"
        "try:\n    candidate(plan, index, 'cmp-spine1', folder=Path(sys.argv[2]))\n"
        "except InputError as exc:\n    print(exc.render())\n"
    )
    done = python(code, str(ROOT / "inventory" / "fabric.yml"), str(copy))
    assert done.returncode == 0, done.stderr
    assert f"error: {copy / 'cmp-spine1.nft'}" in done.stdout and "is a FIFO, not a regular file" in done.stdout


# -- vault and password files, TLS pins, the lab's records, the docs site, recordings -------------------


@pytest.mark.slow
def test_a_fifo_or_dev_zero_as_the_vault_or_its_password_file_is_refused(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "vault.yml").write_text("$ANSIBLE_VAULT;1.1;AES256\n00\n")
    (tmp_path / "pass").write_text("secret\n")
    code = (
        "import sys\nfrom pathlib import Path\nfrom gpufabric.config.vault import open_vault\n"
        "from gpufabric.inputs import InputError\n"
        "try:\n    open_vault(Path(sys.argv[1]), Path(sys.argv[2]))\n"
        "except InputError as exc:\n    print(exc.render())\n"
    )
    for vault, password, bad, says in (
        (tmp_path / "vault.yml", tmp_path / "fifo", tmp_path / "fifo", "is a FIFO"),
        ("/dev/zero", tmp_path / "pass", "/dev/zero", "is a device"),
    ):
        done = python(code, str(vault), str(password))
        assert done.returncode == 0, done.stderr
        assert f"error: {bad}" in done.stdout and says in done.stdout


@pytest.mark.slow
def test_a_fifo_as_the_tls_pins_is_refused_and_no_login_sent(tmp_path):
    os.mkfifo(tmp_path / "pins-fifo")
    code = (
        "import sys\nfrom gpufabric.drivers.tls_pins import TlsTrustError, read_pins\n"
        "try:\n    read_pins(sys.argv[1])\nexcept TlsTrustError as exc:\n    print(exc)\n"
    )
    done = python(code, str(tmp_path / "pins-fifo"))
    assert done.returncode == 0, done.stderr
    assert "is a FIFO" in done.stdout and "refusing to send the login" in done.stdout


def test_a_tls_pin_is_never_recorded_through_a_link(tmp_path):
    from gpufabric.drivers.tls_pins import TlsTrustError, record_pin

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "known_tls_hosts").symlink_to(victim)
    with pytest.raises(TlsTrustError, match="it is a symbolic link"):
        record_pin(str(tmp_path / "known_tls_hosts"), "leaf1", "AA:BB")
    assert victim.read_text() == "precious\n"


def test_a_first_seen_ssh_key_is_never_recorded_through_a_link_or_into_a_fifo(tmp_path):
    """accept-new appends to known_hosts: a link planted there must not redirect the line, and a FIFO
    must not hang the push."""
    import os

    import paramiko

    from gpufabric.drivers.transport import AcceptNewPolicy

    key = paramiko.RSAKey.generate(1024)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "known_hosts").symlink_to(victim)
    with pytest.raises(paramiko.SSHException, match="it is a symbolic link"):
        AcceptNewPolicy(str(tmp_path / "known_hosts")).missing_host_key(paramiko.SSHClient(), "leaf1", key)
    assert victim.read_text() == "precious\n"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(paramiko.SSHException, match=r"cannot record leaf1's key"):  # ENXIO: no reader, no wait
        AcceptNewPolicy(str(tmp_path / "fifo")).missing_host_key(paramiko.SSHClient(), "leaf1", key)
    good = tmp_path / "ssh" / "known_hosts"
    AcceptNewPolicy(str(good)).missing_host_key(paramiko.SSHClient(), "leaf1", key)
    assert good.read_text() == f"leaf1 ssh-rsa {key.get_base64()}\n" and good.stat().st_mode & 0o777 == 0o600


def test_the_labs_records_are_refused_through_a_link_or_when_they_are_not_json(tmp_path):
    from gpufabric.fleet.lab.credentials import load_secrets
    from gpufabric.fleet.lab.state import LabState

    elsewhere = tmp_path / "elsewhere.json"
    LabState("lab").save(tmp_path / "other")
    (tmp_path / "other" / "state.json").rename(elsewhere)
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    (state_dir / "state.json").symlink_to(elsewhere)
    with pytest.raises(InputError, match="is a symbolic link"):
        LabState.load(state_dir)
    (state_dir / "state.json").unlink()
    (state_dir / "state.json").write_text('{"fabric": "lab",\n "pids": {"a": NaN}}\n')
    with pytest.raises(InputError, match="is not valid JSON") as refused:
        LabState.load(state_dir)
    assert refused.value.file == str(state_dir / "state.json")
    (state_dir / "state.json").write_text('{"fabric": "lab", "planted": 1}\n')
    with pytest.raises(InputError, match="is not the lab's state record"):
        LabState.load(state_dir)
    (state_dir / "secrets.json").write_text("[1, 2]")
    with pytest.raises(InputError, match="a JSON object, not list"):
        load_secrets(state_dir)


@pytest.mark.slow
def test_docs_check_refuses_a_fifo_for_the_page_or_the_site_configuration(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    fifo = str(tmp_path / "fifo")
    for args in (("docs", "-o", fifo, "--check"), ("docs", "platforms", "--nav", fifo, "-o", str(tmp_path), "--check")):
        done = gpufabric(*args)
        assert done.returncode == 2, done.stderr
        assert f"error: {tmp_path / 'fifo'}" in done.stderr and "is a FIFO" in done.stderr


def test_a_recording_that_is_not_utf8_is_a_located_error(tmp_path):
    from gpufabric.drivers.recording import load

    (tmp_path / "rec.yml").write_bytes(b"- command: show\n  rc: 0\n  stdout: caf\xe9\n")
    with pytest.raises(InputError, match="is not UTF-8 text") as refused:
        load(tmp_path / "rec.yml")
    assert refused.value.lines == {(): 3}


# -- writers: a link planted at a target's name is replaced, never written through -------------------


def test_telemetry_prometheus_replaces_a_planted_link_instead_of_writing_through_it(tmp_path, capsys):
    out = tmp_path / "prom"
    (out / "targets").mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (out / "targets" / "shard-0.json").symlink_to(victim)
    (out / "prometheus.yml").symlink_to(tmp_path / "dangling")
    code, _, err = cli(capsys, "telemetry", "prometheus", "--shards", "2", "-o", str(out))
    assert code == 0, err
    assert victim.read_text() == "precious\n" and not (tmp_path / "dangling").exists()
    shard = out / "targets" / "shard-0.json"
    assert not shard.is_symlink() and json.loads(shard.read_text())[0]["labels"]["shard"] == "0"
    # Prometheus runs as an account of its own: it must be able to read what was written.
    assert stat.S_IMODE(shard.stat().st_mode) == 0o644 and not (out / "prometheus.yml").is_symlink()


def test_a_recording_is_saved_whole_never_through_a_planted_temporary_name(tmp_path):
    from gpufabric.drivers.recording import Exchange, load, save

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "rec.yml.tmp").symlink_to(victim)  # the name the recorder used to write first
    save([Exchange("show version", 0, "FRRouting 10.2\n")], tmp_path / "rec.yml")
    assert victim.read_text() == "precious\n"
    assert load(tmp_path / "rec.yml") == [Exchange("show version", 0, "FRRouting 10.2\n")]


def test_a_lab_daemons_log_is_appended_to_never_through_a_link(tmp_path):
    from gpufabric.lab import processes
    from gpufabric.lab.netlink import LabCommandError

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "daemon.log").symlink_to(victim)
    with pytest.raises(LabCommandError, match="is a symbolic link: refusing to follow it"):
        processes.spawn(["sh", "-c", "echo planted"], tmp_path / "daemon.log")
    assert victim.read_text() == "precious\n"
