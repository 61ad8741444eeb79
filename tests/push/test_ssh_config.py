"""The SSH client config gpufabric reads for its jump hosts (`--ssh-config`, else ~/.ssh/config): read by
its own bounded reader, never run. A config that would make ssh run a command on the controller
(`Match exec`, `ProxyCommand`, `LocalCommand`, `KnownHostsCommand`, a provider library) is refused at
its line with exit 2, and the command in it never runs (each case plants a command that would create a
marker file, and checks that the file never appears)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import INVENTORY, run_in_process

from gpufabric.drivers.jump import Hop, JumpHostError, JumpSettings
from gpufabric.drivers.ssh_config import MAX_DEPTH, SshConfigError, local_user_name, read_ssh_config
from gpufabric.inputs import InputError


def _config(folder: Path, text: str, name: str = "ssh_config") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _refused(path: Path) -> InputError:
    """The located error a config is refused with (SshConfigError, or the reader's InputError for bytes)."""
    with pytest.raises(InputError) as caught:
        JumpSettings.make(path.parent / "known", None, path)
    return caught.value


def _validate(*args: str | Path, **env: str):
    return run_in_process(
        "nornir", "validate", str(INVENTORY / "fabric.yml"), *map(str, args), GPUFABRIC_SWITCH_PASSWORD="x", **env
    )


def test_match_exec_is_never_run_and_is_refused_at_its_line(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    config = _config(
        tmp_path,
        f'Host 172.20.0.*\n  ProxyJump ops@bastion\nMatch exec "touch {marker}"\n  User someone\n',
    )
    error = _refused(config)
    assert isinstance(error, SshConfigError)
    assert error.file == str(config) and error.line_of(("Match",)) == 3
    assert "Match exec would run a command" in error.render()
    assert not marker.exists()
    # Through the command line, with --ssh-config: exit 2, the file and line named, nothing run.
    done = _validate("--ssh-config", config, "--known-hosts", tmp_path / "known")
    assert done.returncode == 2, done.stderr
    assert f"{config}:3: Match: Match exec would run a command" in done.stderr
    assert "Traceback" not in done.stderr and not marker.exists()


def test_the_account_s_own_ssh_config_is_read_the_same_way(tmp_path: Path) -> None:
    # No --ssh-config: ~/.ssh/config is read for the real switches; HOME points at a folder of the test's.
    marker = tmp_path / "ran-from-home"
    ssh = tmp_path / "home" / ".ssh"
    ssh.mkdir(parents=True)
    config = _config(ssh, f'Host *\n  ServerAliveInterval 5\nMatch host 172.20.* exec "touch {marker}"\n', "config")
    done = _validate("--known-hosts", tmp_path / "known", HOME=str(tmp_path / "home"))
    assert done.returncode == 2, done.stderr
    assert f"{config}:3: Match: Match exec would run a command" in done.stderr
    assert not marker.exists()


@pytest.mark.parametrize(
    ("line", "keyword"),
    [
        ("ProxyCommand sh -c 'touch {marker}'", "ProxyCommand"),
        ("LocalCommand touch {marker}", "LocalCommand"),
        ("KnownHostsCommand /bin/sh -c 'touch {marker}'", "KnownHostsCommand"),
        ("PKCS11Provider {marker}.so", "PKCS11Provider"),
        ("SecurityKeyProvider {marker}.so", "SecurityKeyProvider"),
        ("proxycommand=touch {marker}", "ProxyCommand"),  # any case, `=` between keyword and value
    ],
)
def test_every_keyword_that_runs_something_refuses_the_config(tmp_path: Path, line: str, keyword: str) -> None:
    marker = tmp_path / "ran"
    # Under a Host block no switch matches: refused all the same (ssh would run it for that host).
    text = f"Host 172.20.0.*\n  ProxyJump bastion\nHost elsewhere\n  {line.format(marker=marker)}\n"
    config = _config(tmp_path, text)
    error = _refused(config)
    assert error.line_of((keyword,)) == 4 and "would run a command" in error.render()
    assert not marker.exists()


def test_none_is_no_command(tmp_path: Path) -> None:
    config = _config(tmp_path, "Host *\n  ProxyCommand none\n  LocalCommand none\n  ProxyJump ops@bastion\n")
    settings = JumpSettings.make(tmp_path / "known", None, config)
    assert settings.hops("172.20.0.3") == (Hop("bastion", 22, "ops", str(tmp_path / "known")),)


def test_an_included_file_is_read_with_the_same_rules(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    extra = _config(tmp_path, "Host bastion\n  User ops\n  Port 2200\n", "bastion.conf")
    evil = _config(tmp_path, f"# a line\nHost *\n  LocalCommand touch {marker}\n", "evil.conf")
    config = _config(tmp_path, f"Include {extra}\nHost 172.20.*\n  ProxyJump bastion\n")
    settings = JumpSettings.make(tmp_path / "known", None, config)
    assert settings.hops("172.20.0.3") == (Hop("bastion", 2200, "ops", str(tmp_path / "known")),)
    error = _refused(_config(tmp_path, f"Host 172.20.*\n  Include {tmp_path}/*.conf\n"))
    assert error.file == str(evil) and error.line_of(("LocalCommand",)) == 3
    assert not marker.exists()


def test_include_depth_is_bounded(tmp_path: Path) -> None:
    config = _config(tmp_path, "Include {me}\n".format(me=tmp_path / "ssh_config"))
    error = _refused(config)
    assert f"nested deeper than {MAX_DEPTH}" in error.render() and error.line_of(("Include",)) == 1


def test_match_criteria_it_cannot_evaluate_are_refused(tmp_path: Path) -> None:
    error = _refused(_config(tmp_path, "Host a\n  User x\nMatch localnetwork 10.0.0.0/8\n  ProxyJump b\n"))
    assert error.line_of(("Match",)) == 3 and "Match localnetwork cannot be evaluated" in error.render()


def test_match_host_and_user_select_as_ssh_does(tmp_path: Path) -> None:
    config = _config(
        tmp_path,
        "Host bastion\n  User ops\nMatch host bastion user ops\n  Port 2200\n"
        "Match host 172.20.0.*,!172.20.0.9\n  ProxyJump bastion\n",
    )
    settings = JumpSettings.make(tmp_path / "known", None, config)
    assert settings.hops("172.20.0.3") == (Hop("bastion", 2200, "ops", str(tmp_path / "known")),)
    assert settings.hops("172.20.0.9") == ()
    # `Match host` sees the name a HostName gave, `Match originalhost` the name looked up.
    config = _config(
        tmp_path,
        "Host jump\n  HostName 192.0.2.7\nMatch host 192.0.2.7\n  User ops\nMatch originalhost jump\n  Port 2201\n"
        "Host 172.20.*\n  ProxyJump jump\n",
    )
    hop = JumpSettings.make(tmp_path / "known", None, config).hops("172.20.0.3")[0]
    assert (hop.host, hop.user, hop.port) == ("192.0.2.7", "ops", 2201)


def test_a_token_it_does_not_know_is_refused_not_guessed(tmp_path: Path) -> None:
    config = _config(tmp_path, "Host bastion\n  HostName %n.example.net\nHost 10.*\n  ProxyJump bastion\n")
    settings = JumpSettings.make(tmp_path / "known", None, config)
    with pytest.raises(JumpHostError, match=r"ssh_config:2 \(hostname\): the token '%n'"):
        settings.hops("10.0.0.1")
    config = _config(tmp_path, "Host bastion\n  HostName %h.example.net\nHost 10.*\n  ProxyJump bastion\n")
    assert JumpSettings.make(tmp_path / "known", None, config).hops("10.0.0.1")[0].host == "bastion.example.net"


def test_a_fifo_or_a_device_as_config_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        began = time.monotonic()
        done = _validate("--ssh-config", path, "--known-hosts", tmp_path / "known")
        assert time.monotonic() - began < 30
        assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr


def test_bounds_and_bytes(tmp_path: Path) -> None:
    long = _config(tmp_path, "Host a\n  User " + "x" * 5000 + "\n")
    assert "line 2 is longer than" in _refused(long).render()
    latin = tmp_path / "latin"
    latin.write_bytes(b"Host a\n  User ops\n# caf\xe9\n")
    error = _refused(latin)
    assert "is not UTF-8" in error.render() and error.line_of(()) == 3
    assert read_ssh_config(_config(tmp_path, "# nothing\n\n")).lookup("x").values == {}


# -- against OpenSSH's own reading of the same config (`ssh -G`: the options it would use, nothing connected) --

ORACLE_CONFIGS = {
    "patterns": (
        "Host 10.0.0.* !10.0.0.9\n  ProxyJump ops@bastion:2222\n"
        "Host 10.*\n  ProxyJump other\n  User admin\n"
        "Host bastion\n  HostName %h.example.net\n  User=ops\n  Port 2200\n  IdentityFile ~/.ssh/id_bastion\n"
        '  IdentityFile "/keys/with space"\n'
        "Host *\n  Port 2022\n  UserKnownHostsFile /k/one /k/two\n",
        ["10.0.0.5", "10.0.0.9", "10.1.1.1", "bastion", "other", "192.0.2.1"],
    ),
    "match": (
        "Host jump\n  HostName 192.0.2.7\n"
        "Match host 192.0.2.7\n  User ops\n"
        "Match originalhost jump\n  Port 2201\n"
        "Match user ops host !10.*\n  IdentityFile /keys/ops\n"
        "Match localuser {me}\n  UserKnownHostsFile /k/mine\n"
        "Match all\n  ProxyJump none\n",
        ["jump", "192.0.2.7", "10.1.1.1"],
    ),
    "include": (
        "Host 172.20.*\n  Include {folder}/inc.conf\n  User late\nHost *\n  User fallback\n",
        ["172.20.0.3", "172.21.0.3"],
    ),
}


def _openssh(config: Path, host: str, home: Path) -> dict[str, list[str]]:
    done = subprocess.run(
        ["ssh", "-G", "-F", str(config), host], capture_output=True, text=True, check=True, timeout=30,
        env={"HOME": str(home), "PATH": os.environ["PATH"]},
    )  # fmt: skip
    out: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        out.setdefault(key, []).append(value)
    return out


@pytest.mark.skipif(shutil.which("ssh") is None, reason="OpenSSH's client (ssh) is not installed")
@pytest.mark.parametrize("name", sorted(ORACLE_CONFIGS))
def test_the_reader_agrees_with_openssh(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    me = local_user_name()
    (tmp_path / "inc.conf").write_text("ProxyJump ops@inner\nUser early\nHost 172.20.0.*\n  Port 2300\n")
    text, hosts = ORACLE_CONFIGS[name]
    config = _config(tmp_path, text.format(folder=tmp_path, me=me))
    ours = read_ssh_config(config)
    for host in hosts:
        theirs = _openssh(config, host, tmp_path)
        found = ours.lookup(host)
        hostname = found.get("hostname")
        assert theirs["hostname"] == [hostname.args[0].replace("%h", host) if hostname else host], host
        user, port, jump = found.get("user"), found.get("port"), found.get("proxyjump")
        assert theirs["user"] == [user.args[0] if user else me], host
        assert theirs["port"] == [port.args[0] if port else "22"], host
        assert theirs.get("proxyjump", ["none"]) == [jump.args[0] if jump else "none"], host
        if found.identity_files:
            assert theirs["identityfile"] == [s.args[0] for s in found.identity_files], host
        known = found.get("userknownhostsfile")
        if known:
            assert theirs["userknownhostsfile"] == [" ".join(known.args)], host


def test_ssh_config_none_reads_no_config_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpufabric.fleet.access import jump_settings

    ssh = tmp_path / "home" / ".ssh"
    ssh.mkdir(parents=True)
    _config(ssh, "Host *\n  ProxyCommand nc %h %p\n", "config")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(SshConfigError):
        jump_settings(None, None, None, lab=False)
    assert jump_settings(None, None, Path("none"), lab=False) is None
