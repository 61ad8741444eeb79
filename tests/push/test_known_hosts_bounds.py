"""The SSH known_hosts file is outside input like any other: a FIFO or a device in its place, a file too
large, a line too long or bytes that are not UTF-8 stop the command at once with a located error
(exit 2), before any login; before, paramiko's reader opened whatever the name was, and a FIFO held
every switch's login forever (/dev/zero filled memory)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import INVENTORY, run_in_process

from gpufabric.drivers import transport
from gpufabric.drivers.jump import Hop
from gpufabric.drivers.transport import check_jump_hosts, check_known_hosts, read_known_hosts
from gpufabric.inputs import InputError


def _validate(known_hosts: Path):
    return run_in_process(
        "nornir", "validate", str(INVENTORY / "fabric.yml"), "--known-hosts", str(known_hosts),
        "--timeout", "1", GPUFABRIC_SWITCH_PASSWORD="x",
    )  # fmt: skip


def test_a_fifo_as_known_hosts_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "known_hosts"
    os.mkfifo(fifo)
    began = time.monotonic()
    done = _validate(fifo)
    assert time.monotonic() - began < 30
    assert done.returncode == 2, done.stderr
    assert f"{fifo}: (top level): is a FIFO, not a regular file (expected an SSH known_hosts file)" in done.stderr


def test_dev_zero_as_known_hosts_is_refused_at_once() -> None:
    began = time.monotonic()
    done = _validate(Path("/dev/zero"))
    assert time.monotonic() - began < 30
    assert done.returncode == 2 and "/dev/zero" in done.stderr and "is a device" in done.stderr, done.stderr


def test_a_large_file_a_long_line_and_bad_bytes_are_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = "10.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
    path = tmp_path / "known_hosts"
    path.write_bytes(good.encode() + b"# caf\xe9\n")
    with pytest.raises(InputError) as caught:
        check_known_hosts(path)
    assert caught.value.line_of(()) == 2 and "is not UTF-8" in caught.value.render()
    path.write_text(good + "x" * (transport.KNOWN_HOSTS_LINE + 10) + "\n")
    with pytest.raises(InputError, match="line 2 is longer than 16,384 bytes"):
        check_known_hosts(path)
    monkeypatch.setattr(transport, "KNOWN_HOSTS_BYTES", 100)
    path.write_text(good * 2)
    with pytest.raises(InputError, match="is larger than 100 bytes"):
        check_known_hosts(path)


def test_the_keys_are_read_as_paramiko_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "known_hosts"
    line = "10.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    path.write_text(f"# comment\n\n10.0.0.9 ssh-unknown AAAA\n{line}\n[10.0.0.2]:2222 ssh-ed25519 {line.split()[2]}\n")
    keys = read_known_hosts(str(path))
    assert keys.lookup("10.0.0.1")["ssh-ed25519"].get_base64() == line.split()[2]
    assert keys.lookup("[10.0.0.2]:2222") is not None and keys.lookup("10.0.0.3") is None
    check_known_hosts(tmp_path / "absent")  # no file: no key known yet, not an error
    path.write_text(f"{line}\n10.0.0.4 ssh-ed25519 not-base64!\n")
    with pytest.raises(InputError) as caught:
        check_known_hosts(path)
    assert caught.value.line_of(()) == 2 and "is not `HOST KEY-TYPE BASE64-KEY`" in caught.value.render()


def test_a_jump_host_s_known_hosts_that_is_a_fifo_stops_the_check_before_any_login(tmp_path: Path) -> None:
    fifo = tmp_path / "bastion_known"
    os.mkfifo(fifo)
    hop = Hop("127.0.0.1", 9, "ops", str(fifo))  # nothing listens on port 9: no login is ever tried
    began = time.monotonic()
    with pytest.raises(InputError, match="is a FIFO, not a regular file"):
        check_jump_hosts({(hop,)}, 5)
    assert time.monotonic() - began < 5
