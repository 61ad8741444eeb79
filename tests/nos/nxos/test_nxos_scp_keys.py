"""The NX-OS candidate travels by SCP only to a switch whose SSH host key is in known_hosts.

Proof from software nobody here wrote: paramiko's SSH server on a loopback address, with a host key
made in the test, and the `scp` package's client (what the driver uses) on the other side. The server
end of SCP (a sink that stores the file it receives) is a test double of the switch's `scp-server`.
It records every login attempt: an unknown or changed host key is refused before any password is
offered; a recorded key lets the candidate through, written from memory.
"""

from __future__ import annotations

import hashlib
import random
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

import paramiko
import pytest
from napalm.base.exceptions import ConnectionException

from gpufabric.nos.nxos.driver import GpufabricNXOSDriver

PASSWORD = "fabric-secret-91c2"


def new_key() -> paramiko.PKey:
    return paramiko.ECDSAKey.generate()


class _Switch(paramiko.ServerInterface):
    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record
        self.command = threading.Event()

    def check_auth_password(self, username: str, password: str) -> int:
        self.record["passwords"].append(password)
        return paramiko.AUTH_SUCCESSFUL if password == PASSWORD else paramiko.AUTH_FAILED

    def get_allowed_auths(self, username: str) -> str:
        return "password"

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return paramiko.OPEN_SUCCEEDED

    def check_channel_exec_request(self, channel: Any, command: bytes) -> bool:
        self.record["commands"].append(command.decode())
        self.command.set()
        return True


def _sink(channel: paramiko.Channel, record: dict[str, Any]) -> None:
    """The receiving end of `scp -t`: acknowledge, read `C<mode> <size> <name>`, the bytes, acknowledge."""
    channel.sendall(b"\0")
    header = b""
    while not header.endswith(b"\n"):
        header += channel.recv(1)
    mode, size, name = header.decode().strip().split(" ", 2)
    channel.sendall(b"\0")
    data = b""
    while len(data) < int(size) + 1:
        data += channel.recv(int(size) + 1 - len(data))
    record["files"][name] = (mode, data[:-1])
    channel.sendall(b"\0")
    channel.send_exit_status(0)
    channel.close()


class SshServer:
    def __init__(self, host_key: paramiko.PKey) -> None:
        self.host_key = host_key
        self.address = f"127.0.0.{random.randint(2, 250)}"
        self.record: dict[str, Any] = {"passwords": [], "commands": [], "files": {}}

    def __enter__(self) -> SshServer:
        self.sock = socket.socket()
        self.sock.bind((self.address, 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        return self

    def _serve(self) -> None:
        try:
            client, _ = self.sock.accept()
        except OSError:
            return
        transport = self.transport = paramiko.Transport(client)
        transport.add_server_key(self.host_key)
        server = _Switch(self.record)
        try:
            transport.start_server(server=server)
            channel = transport.accept(3)
            if channel is not None and server.command.wait(10):
                _sink(channel, self.record)
        except (paramiko.SSHException, EOFError, OSError):
            pass
        finally:
            transport.close()

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
        if getattr(self, "transport", None) is not None:
            self.transport.close()  # a refused client leaves the server waiting for a channel: end it
        self.thread.join(10)


def driver(server: SshServer, known_hosts: Path, **args: Any) -> GpufabricNXOSDriver:
    found = GpufabricNXOSDriver(server.address, "admin", PASSWORD, timeout=30, optional_args={
        "push_id": "gf-20260101T000000Z-abcdef", "known_hosts": str(known_hosts), "ssh_port": server.port,
        "controller": "ctl", **args})  # fmt: skip
    return found


@pytest.mark.slow
def test_an_unknown_host_key_gets_no_password_and_no_file(tmp_path):
    with (
        SshServer(new_key()) as server,
        pytest.raises(ConnectionException, match=r"not in .*known_hosts.*--accept-new"),
    ):
        driver(server, tmp_path / "known_hosts")._upload("gpufabric-x.cfg", "hostname sw1\n")
    assert server.record["passwords"] == [] and server.record["files"] == {}


@pytest.mark.slow
def test_a_changed_host_key_is_refused_even_with_accept_new(tmp_path):
    recorded = new_key()
    known = tmp_path / "known_hosts"
    with SshServer(new_key()) as server:
        known.write_text(f"[{server.address}]:{server.port} {recorded.get_name()} {recorded.get_base64()}\n")
        with pytest.raises(ConnectionException, match="not the one in"):
            driver(server, known, accept_new=True)._upload("gpufabric-x.cfg", "hostname sw1\n")
    assert server.record["passwords"] == []


def test_a_recorded_host_key_lets_the_candidate_through_from_memory(tmp_path, monkeypatch):
    local = tmp_path / "tmp"  # where NAPALM's own driver wrote the candidate (0644, kept on failure)
    local.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(local))
    key = new_key()
    known = tmp_path / "known_hosts"
    text = "!gpufabric push x\nhostname sw1\nsnmp-server community s3cret ro\n"
    with SshServer(key) as server:
        known.write_text(f"[{server.address}]:{server.port} {key.get_name()} {key.get_base64()}\n")
        nx = driver(server, known)
        # NX-OS's own check of the file it received (NX-API `show file ... md5sum`), answered from the double.
        monkeypatch.setattr(nx, "_send_command", lambda command, raw_text=False: hashlib.md5(
            next(iter(server.record["files"].values()))[1]).hexdigest())  # fmt: skip
        nx._upload("gpufabric-x.cfg", text)
    assert server.record["passwords"] == [PASSWORD]
    assert server.record["commands"] == ["scp -t bootflash:gpufabric-x.cfg"]
    assert server.record["files"] == {"bootflash:gpufabric-x.cfg": ("C0600", text.encode())}
    assert list(local.iterdir()) == []  # no copy of the candidate, with its secrets, on the controller
