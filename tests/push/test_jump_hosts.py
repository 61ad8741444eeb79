"""Jump hosts (bastions): which ones lead to a switch (--jump-host, an SSH config's ProxyJump), and the
drivers' transport through them, with both hops' host keys checked.

The jump host here is paramiko's server side on 127.0.0.1 that forwards `direct-tcpip` channels as
sshd does; the switch behind it is the hostile switch's SSH server answering honestly. The lab proves
the same against OpenSSH's sshd in a namespace of its own (tests/lab/test_lab_jump_host.py).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import paramiko
import pytest
from conftest import INVENTORY, run_in_process
from hostile_switch import ADDRESS, PASSWORD, USER, HostileSshSwitch, Reply
from napalm.base.exceptions import ConnectionException

from gpufabric.drivers.jump import Hop, JumpHostError, JumpSettings, JumpSpec, parse_chain
from gpufabric.drivers.transport import JumpHostRefusedError, SSHTransport, check, check_jump_hosts
from gpufabric.errors import GpufabricError


class _BastionLogin(paramiko.ServerInterface):
    def __init__(self, bastion: Bastion) -> None:
        self.bastion = bastion

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        ok = username == self.bastion.user and key.get_base64() == self.bastion.client_key.get_base64()
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED  # no shell, no exec: forwarding only

    def check_channel_direct_tcpip_request(self, chanid: int, origin: tuple, destination: tuple) -> int:
        self.bastion.destinations.append((destination[0], int(destination[1])))
        return paramiko.OPEN_SUCCEEDED


class Bastion:
    """A jump host on 127.0.0.1: public-key login for one user, and `direct-tcpip` forwarding only."""

    def __init__(self, folder: Path, user: str = "ops") -> None:
        self.user = user
        self.host_key = paramiko.Ed25519Key.from_private_key_file(_keygen(folder / "bastion_host"))
        self.client_key_file = _keygen(folder / "id_ops")
        self.client_key = paramiko.Ed25519Key.from_private_key_file(self.client_key_file)
        self.destinations: list[tuple[str, int]] = []
        self.logins = 0
        self.stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._transports: list[paramiko.Transport] = []

    def __enter__(self) -> Bastion:
        self.sock = socket.socket()
        self.sock.bind((ADDRESS, 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self._spawn(self._serve)
        return self

    def known_line(self, key: paramiko.PKey | None = None) -> str:
        key = key or self.host_key
        return f"[{ADDRESS}]:{self.port} {key.get_name()} {key.get_base64()}\n"

    def _spawn(self, target: Callable[..., object], *args: object) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        t.start()
        self._threads.append(t)

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                client, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            transport = paramiko.Transport(client)
            transport.add_server_key(self.host_key)
            self._transports.append(transport)
            try:
                transport.start_server(server=_BastionLogin(self))
            except (paramiko.SSHException, EOFError, OSError):
                transport.close()
                continue
            self._spawn(self._forwarding, transport)

    def _forwarding(self, transport: paramiko.Transport) -> None:
        while transport.is_active() and not self.stop.is_set():
            channel = transport.accept(0.2)
            if channel is None:
                continue
            self.logins += 1
            host, port = self.destinations[-1]
            try:
                far = socket.create_connection((host, port), timeout=60)
            except OSError:
                channel.close()
                continue
            # Blocking from here, as sshd's forwarding is: a session that waits while the next ones log in
            # (seconds on a loaded machine) must not have its far end time out under it.
            far.settimeout(None)
            self._spawn(_pump, channel, far)
            self._spawn(_pump_back, far, channel)

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.sock.close()
        for transport in self._transports:
            transport.close()


def _pump(channel: paramiko.Channel, far: socket.socket) -> None:
    try:
        while data := channel.recv(32768):
            far.sendall(data)
    except OSError:
        pass
    finally:
        far.close()


def _pump_back(far: socket.socket, channel: paramiko.Channel) -> None:
    try:
        while data := far.recv(32768):
            channel.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(EOFError, OSError):  # the jump host's transport already gone with its test
            channel.close()


def _keygen(path: Path) -> str:
    """An Ed25519 key pair (paramiko reads them but cannot make them: ssh-keygen does)."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return str(path)


@pytest.fixture(autouse=True)
def no_agent(monkeypatch):
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)  # only the keys a test names are offered


@pytest.fixture
def switch():
    with HostileSshSwitch(lambda command: Reply(b"answered: " + command.encode())) as s:
        yield s


@pytest.fixture
def bastion(tmp_path):
    with Bastion(tmp_path) as b:
        yield b


def hop(bastion: Bastion, known_hosts: Path) -> Hop:
    return Hop(ADDRESS, bastion.port, bastion.user, str(known_hosts), (bastion.client_key_file,))


def through(switch: HostileSshSwitch, tmp_path: Path, jump: tuple[Hop, ...]) -> SSHTransport:
    return SSHTransport(
        ADDRESS, USER, PASSWORD, port=switch.port, timeout=5.0, known_hosts=switch.known_hosts(tmp_path), jump=jump
    )


def test_a_command_runs_on_the_switch_through_the_jump_host(switch, bastion, tmp_path):
    known = tmp_path / "bastion_known"
    known.write_text(bastion.known_line())
    session = through(switch, tmp_path, (hop(bastion, known),))
    try:
        assert check(session, "show version") == "answered: show version"
    finally:
        session.close()
    assert bastion.destinations == [(ADDRESS, switch.port)]  # the switch was reached from the jump host
    assert switch.commands == ["show version"]


def test_a_jump_host_whose_key_is_not_known_is_refused_before_the_switch(switch, bastion, tmp_path):
    known = tmp_path / "bastion_known"
    known.write_text("")
    with pytest.raises(JumpHostRefusedError, match=r"jump host ops@127\.0\.0\.1:\d+: its host key is not in "):
        through(switch, tmp_path, (hop(bastion, known),))
    assert bastion.destinations == [] and switch.commands == []
    assert known.read_text() == ""  # never recorded on first sight


def test_a_jump_host_with_another_key_is_refused_and_no_login_goes_through_it(switch, bastion, tmp_path):
    known = tmp_path / "bastion_known"
    impostor = paramiko.Ed25519Key.from_private_key_file(_keygen(tmp_path / "impostor"))
    known.write_text(bastion.known_line(impostor))
    with pytest.raises(JumpHostRefusedError, match=r"its host key is not the one in .*refusing to go through it"):
        through(switch, tmp_path, (hop(bastion, known),))
    assert bastion.destinations == [] and switch.commands == [] and switch._transports == []


def test_the_switch_key_is_still_checked_end_to_end_through_the_jump_host(switch, bastion, tmp_path):
    known = tmp_path / "bastion_known"
    known.write_text(bastion.known_line())
    wrong = tmp_path / "switch_known"
    other = paramiko.ECDSAKey.generate()
    wrong.write_text(f"[{ADDRESS}]:{switch.port} {other.get_name()} {other.get_base64()}\n")
    with pytest.raises(ConnectionException, match="its host key is not the one in") as caught:
        SSHTransport(ADDRESS, USER, PASSWORD, port=switch.port, timeout=5.0, known_hosts=str(wrong),
                     jump=(hop(bastion, known),))  # fmt: skip
    assert not isinstance(caught.value, JumpHostRefusedError)  # the switch's key, not the jump host's
    assert switch.commands == []


def test_a_chain_of_two_jump_hosts(switch, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with Bastion(tmp_path / "a") as first, Bastion(tmp_path / "b", user="ops2") as second:
        known = tmp_path / "known"
        known.write_text(first.known_line() + second.known_line())
        session = through(switch, tmp_path, (hop(first, known), hop(second, known)))
        try:
            assert check(session, "true") == "answered: true"
        finally:
            session.close()
        assert first.destinations == [(ADDRESS, second.port)]
        assert second.destinations == [(ADDRESS, switch.port)]


def test_the_check_before_a_command_logs_in_to_each_jump_host_once(bastion, tmp_path):
    known = tmp_path / "known"
    known.write_text(bastion.known_line())
    check_jump_hosts({(hop(bastion, known),)}, 5.0)
    bad = tmp_path / "bad"
    bad.write_text(bastion.known_line(paramiko.Ed25519Key.from_private_key_file(_keygen(tmp_path / "x"))))
    with pytest.raises(JumpHostRefusedError, match="not the one in"):
        check_jump_hosts({(hop(bastion, bad),)}, 5.0)
    assert bastion.destinations == []


# -- which jump hosts ------------------------------------------------------------------------------


def test_a_jump_host_spec_is_parsed_and_outside_text_is_held_to_patterns():
    assert parse_chain("ops@bastion.example.net:2222", "x") == (JumpSpec("bastion.example.net", "ops", 2222),)
    assert parse_chain("10.0.0.1", "x") == (JumpSpec("10.0.0.1"),)
    assert parse_chain("a,b@c:23", "x") == (JumpSpec("a"), JumpSpec("c", "b", 23))
    assert parse_chain("[fd00::1]:22", "x") == (JumpSpec("fd00::1", None, 22),)
    assert parse_chain("none", "x") == ()
    for bad in ("-oProxyCommand=sh", "a b", "ops@host:0", "ops@host:99999", "host;reboot", "o p@h", "$(id)@h",
                "h\n", "a,b,c,d,e", "", "-h", "h:", "[zz]:22"):  # fmt: skip
        with pytest.raises(JumpHostError):
            parse_chain(bad, "--jump-host")


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ssh_config"
    path.write_text(text)
    return path


def test_proxyjump_from_an_ssh_config_with_the_jump_host_described_there(tmp_path):
    path = _config(
        tmp_path,
        "Host bastion\n  HostName 192.0.2.10\n  User ops\n  Port 2222\n  IdentityFile ~/.ssh/id_bastion\n"
        "  UserKnownHostsFile /etc/ssh/bastion_known other\n  StrictHostKeyChecking no\n"
        "Host 10.0.0.*\n  ProxyJump bastion\n"
        "Host 10.9.*\n  ProxyJump root@bastion:22\n",
    )
    settings = JumpSettings.make(tmp_path / "known", None, path)
    home = str(Path.home())
    assert settings.hops("10.0.0.5") == (Hop("192.0.2.10", 2222, "ops", "/etc/ssh/bastion_known",
                                            (f"{home}/.ssh/id_bastion",)),)  # fmt: skip
    assert settings.hops("10.9.1.1")[0].user == "root"
    assert settings.hops("10.9.1.1")[0].port == 22  # the ProxyJump's port wins over the block's
    assert settings.hops("10.1.0.5") == ()  # no Host matches: a direct login


def test_the_known_hosts_of_a_jump_host_defaults_to_the_switches(tmp_path):
    settings = JumpSettings.make(tmp_path / "known", "ops@bastion", None)
    assert settings.hops("10.0.0.5") == (Hop("bastion", 22, "ops", str(tmp_path / "known")),)


def test_proxycommand_is_never_run_and_bad_values_in_the_config_are_refused(tmp_path):
    with pytest.raises(GpufabricError, match="ssh_config:2: ProxyCommand: ProxyCommand would run a command"):
        JumpSettings.make(tmp_path / "k", None, _config(tmp_path, "Host *\n  ProxyCommand nc %h %p\n"))
    settings = JumpSettings.make(tmp_path / "k", None, _config(tmp_path, "Host *\n  ProxyJump b\nHost b\n  User x;y\n"))
    with pytest.raises(JumpHostError, match="'x;y' is not a user name"):
        settings.hops("10.0.0.5")
    settings = JumpSettings.make(tmp_path / "k", None, _config(tmp_path, "Host *\n  ProxyJump -oFoo=bar\n"))
    with pytest.raises(JumpHostError, match="is not"):
        settings.hops("10.0.0.5")


def test_an_ssh_config_that_is_not_a_file_is_refused(tmp_path):
    with pytest.raises(GpufabricError, match=r"not a file|a directory"):  # exit 2 on the command line
        JumpSettings.make(tmp_path / "k", None, tmp_path)


# -- the command line ------------------------------------------------------------------------------


def test_a_malformed_jump_host_is_bad_input(tmp_path):
    done = run_in_process("nornir", "validate", str(INVENTORY / "fabric.yml"), "--jump-host", "ops@host;reboot",
               "--known-hosts", str(tmp_path / "k"), GPUFABRIC_SWITCH_PASSWORD="x")  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--jump-host: 'host;reboot' is not a host name or address" in done.stderr


def test_push_stops_before_any_switch_when_the_jump_host_key_is_wrong(bastion, tmp_path):
    known = tmp_path / "known"
    known.write_text(bastion.known_line(paramiko.Ed25519Key.from_private_key_file(_keygen(tmp_path / "x"))))
    config = _config(tmp_path, f"Host {ADDRESS}\n  IdentityFile {bastion.client_key_file}\n")
    done = run_in_process("nornir", "push", str(INVENTORY / "fabric.yml"), "--json", "--device", "cmp-spine1",
               "--jump-host", f"ops@{ADDRESS}:{bastion.port}", "--ssh-config", str(config),
               "--known-hosts", str(known), GPUFABRIC_SWITCH_PASSWORD="x", GPUFABRIC_SALT_KEY="s")  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"jump host ops@{ADDRESS}:{bastion.port}: its host key is not the one in {known}" in done.stderr
    assert bastion.destinations == []  # no switch was asked for through it
    assert done.stdout == ""  # no result: nothing was read or pushed


def test_sessions_through_one_jump_host_share_its_login_until_the_last_closes(switch, bastion, tmp_path):
    known = tmp_path / "bastion_known"
    known.write_text(bastion.known_line())
    jump = (hop(bastion, known),)
    sessions = [through(switch, tmp_path, jump) for _ in range(3)]
    assert [check(s, f"echo {i}") for i, s in enumerate(sessions)] == [f"answered: echo {i}" for i in range(3)]
    assert len(bastion._transports) == 1  # one login to the jump host, three channels on it
    assert bastion.destinations == [(ADDRESS, switch.port)] * 3
    for s in sessions:
        s.close()
    assert not bastion._transports[0].is_active() or _closes(bastion._transports[0])
    again = through(switch, tmp_path, jump)
    again.close()
    assert len(bastion._transports) == 2  # the last session closed the login; the next one logged in again


def _closes(transport: paramiko.Transport, deadline: float = 30.0) -> bool:
    """The server side notices the client's close: generous deadline, a loaded machine is slow."""
    ends = time.monotonic() + deadline
    while transport.is_active() and time.monotonic() < ends:
        time.sleep(0.05)
    return not transport.is_active()


def test_each_switch_gets_the_jump_hosts_its_address_matches(default_plan, tmp_path):
    from gpufabric.fleet.access import Access, apply
    from gpufabric.fleet.inventory import inventory_from_plan

    config = _config(tmp_path, "Host 172.20.0.3 172.20.0.4\n  ProxyJump ops@bastion:2200\n")
    jump = JumpSettings.make(tmp_path / "known", None, config)
    access = Access(False, "admin", "pw", {"known_hosts": "/k"}, jump=jump)
    inventory = inventory_from_plan(default_plan)
    apply(inventory, access)
    jumps = {
        name: host.connection_options["napalm"].extras["optional_args"].get("jump")
        for name, host in inventory.hosts.items()
    }
    bastion = (Hop("bastion", 2200, "ops", str(tmp_path / "known")),)
    assert {name for name, hops in jumps.items() if hops} == {"cmp-spine1", "cmp-spine2"}
    assert jumps["cmp-spine1"] == bastion and access.optional_args == {"known_hosts": "/k"}  # shared args untouched


def test_a_switch_that_answered_gets_a_minute_to_finish_its_login(monkeypatch):
    """The TCP connect keeps the short timeout (an unreachable switch fails fast); the banner, the key exchange
    and the login of a switch that answered get at least LOGIN_SECONDS, since a loaded switch or controller has
    taken longer than ten seconds to finish them and a restart then refused a healthy switch."""
    from gpufabric.drivers import transport

    seen: dict[str, object] = {}

    def dial(host, port, timeout):
        seen["dial"] = timeout
        ours, theirs = socket.socketpair()
        theirs.close()
        return ours

    def connect(self, hostname, **kwargs):
        seen.update(kwargs)
        raise paramiko.AuthenticationException("Authentication timeout.")

    monkeypatch.setattr(transport, "dial", dial)
    monkeypatch.setattr(paramiko.SSHClient, "connect", connect)
    with pytest.raises(Exception, match="Authentication timeout"):
        transport.SSHTransport("192.0.2.1", "admin", "x", timeout=10)
    assert seen["dial"] == 10
    assert seen["timeout"] == seen["banner_timeout"] == seen["auth_timeout"] == transport.LOGIN_SECONDS == 60
    sock = seen["sock"]
    assert isinstance(sock, socket.socket) and sock.fileno() == -1  # closed after the failed login
    seen.clear()
    with pytest.raises(Exception, match="Authentication timeout"):
        transport.SSHTransport("192.0.2.1", "admin", "x", timeout=90)
    assert seen["dial"] == seen["timeout"] == seen["banner_timeout"] == seen["auth_timeout"] == 90  # longer wins


def test_a_switch_slow_to_exchange_keys_behind_a_jump_host_gets_the_logins_time(bastion, tmp_path):
    """Through the jump host's channel too, the switch's key exchange is bounded by the login's time, not
    by the connect timeout (paramiko's connect() would go on to the login with it unfinished)."""
    known = tmp_path / "bastion_known"
    known.write_text(bastion.known_line())
    with HostileSshSwitch(lambda command: Reply(b"answered: " + command.encode()), slow_start=1.0) as slow:
        session = SSHTransport(
            ADDRESS, USER, PASSWORD, port=slow.port, timeout=0.25, known_hosts=slow.known_hosts(tmp_path),
            jump=(hop(bastion, known),),
        )  # fmt: skip
        try:
            assert check(session, "show version") == "answered: show version"
        finally:
            session.close()
    assert bastion.destinations == [(ADDRESS, slow.port)]
