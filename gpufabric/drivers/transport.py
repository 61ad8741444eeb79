"""How a driver reaches a device: run a command and get its output, over SSH."""

from __future__ import annotations

import base64
import io
import os
import shlex
import socket
import threading
from dataclasses import dataclass
from typing import Protocol

import paramiko
from napalm.base.exceptions import ConnectionException


@dataclass(frozen=True)
class Output:
    rc: int
    stdout: str
    stderr: str


class CommandFailedError(Exception):
    def __init__(self, command: str, output: Output) -> None:
        super().__init__(f"`{command}` exited {output.rc}: {(output.stderr or output.stdout).strip()[:500]}")
        self.command = command
        self.output = output


class Transport(Protocol):
    def run(self, command: str, stdin: str | None = None) -> Output: ...

    def close(self) -> None: ...


def check(transport: Transport, command: str, stdin: str | None = None) -> str:
    out = transport.run(command, stdin)
    if out.rc != 0:
        raise CommandFailedError(command, out)
    return out.stdout


def put_file(transport: Transport, path: str, text: str, mode: int | None = None) -> None:
    """Write a file on the device through the shell: no SFTP needed, and written whole (temp + rename).

    With `mode`, the file is created with it (a file holding a secret is never readable by others).
    """
    tmp = f"{path}.tmp"
    umask = f"umask {0o777 & ~mode:03o} && " if mode is not None else ""
    check(transport, f"{umask}cat > {shlex.quote(tmp)} && mv -f {shlex.quote(tmp)} {shlex.quote(path)}", text)


def put_files(transport: Transport, files: dict[str, tuple[str, int | None]], setup: str = "") -> None:
    """Write several files in one round trip (path -> (text, mode)), each as `put_file` would: whole, and
    created with its mode, after the shell command `setup` (making their folder, say). The texts travel
    base64-encoded on the session's stdin, never on a command line (another user of the device could
    read a command line, and a file may hold a secret)."""
    lines = ["set -e", *([setup] if setup else [])]
    for path, (text, mode) in files.items():
        tmp, dest = shlex.quote(f"{path}.tmp"), shlex.quote(path)
        umask = f"umask {0o777 & ~mode:03o}; " if mode is not None else ""
        encoded = base64.encodebytes(text.encode()).decode()
        lines += [
            f"({umask}base64 -d > {tmp} <<'GPUFABRIC_FILE'",
            encoded + "GPUFABRIC_FILE",
            ")",
            f"mv -f {tmp} {dest}",
        ]
    check(transport, "sh -s", "\n".join(lines) + "\n")


def read_many(transport: Transport, commands: dict[str, str]) -> dict[str, str]:
    """The output of several read-only shell commands in one round trip (name -> command); a command that
    fails reads as empty. Each output travels base64-encoded, so any byte comes back as it was."""
    script = "".join(f"{{ {command}\n}} 2>/dev/null | base64 -w0; echo\n" for command in commands.values())
    lines = check(transport, script).split("\n")  # no secret in it: the command line, not stdin (one less wait)
    lines += [""] * (len(commands) - len(lines))
    return {name: base64.b64decode(line).decode(errors="replace") for name, line in zip(commands, lines, strict=False)}


_KNOWN_HOSTS_WRITE = threading.Lock()


class AcceptNewPolicy(paramiko.MissingHostKeyPolicy):
    """OpenSSH's `StrictHostKeyChecking accept-new`: a host seen for the first time is recorded in the
    known_hosts file and trusted from then on; a changed key is still refused (paramiko checks known keys
    before it asks a policy)."""

    def __init__(self, known_hosts: str) -> None:
        self.known_hosts = known_hosts

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        with _KNOWN_HOSTS_WRITE, open(self.known_hosts, "a", encoding="ascii") as fh:
            fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")


def load_private_key(text: str) -> paramiko.PKey:
    """An OpenSSH or PEM private key from its text (as an environment variable or vault entry holds it)."""
    for kind in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return kind.from_private_key(io.StringIO(text))
        except (paramiko.SSHException, ValueError):
            continue
    # Never the text itself: it is the key.
    raise ConnectionException(
        "the switch SSH key is not an unencrypted Ed25519, ECDSA or RSA private key (OpenSSH or PEM format)"
    )


_KNOWN_HOSTS_READ = threading.Lock()


@dataclass(frozen=True)
class _KnownHosts:
    keys: paramiko.HostKeys
    by_name: dict[str, dict[str, paramiko.PKey]]  # the entries naming a host in clear, by that name


_known_hosts_cache: dict[str, tuple[tuple[int, int], _KnownHosts]] = {}


def _known_keys(path: str) -> _KnownHosts:
    """The known_hosts file, read once per version of it (its mtime and size), not once per login, with
    its entries indexed by host name.

    paramiko's own load compares each line with every entry read before it, and its lookup walks every
    entry: over a push to a thousand switches, reading the whole file at every login grew with the cube
    of the fleet, and looking a host up in it with the square.
    """
    stat = os.stat(path)
    version = (stat.st_mtime_ns, stat.st_size)
    with _KNOWN_HOSTS_READ:
        cached = _known_hosts_cache.get(path)
        if cached is None or cached[0] != version:
            keys = paramiko.HostKeys(path)
            by_name: dict[str, dict[str, paramiko.PKey]] = {}
            for entry in keys._entries:  # paramiko keeps them in file order; no public iterator gives the keys
                if entry.key is None:
                    continue
                for name in entry.hostnames:
                    if not name.startswith("|1|"):  # a hashed name matches only through lookup()
                        by_name.setdefault(name, {}).setdefault(entry.key.get_name(), entry.key)
            cached = (version, _KnownHosts(keys, by_name))
            _known_hosts_cache[path] = cached
        return cached[1]


def _trust_known_keys(client: paramiko.SSHClient, path: str, host: str, port: int) -> None:
    """Give the client the keys known_hosts holds for this host (as `[host]:port` off port 22), and no others."""
    name = host if port == 22 else f"[{host}]:{port}"
    known = _known_keys(path)
    found = known.by_name.get(name) or known.keys.lookup(name)
    for key_type, key in (found or {}).items():
        client.get_host_keys().add(name, key_type, key)


def _no_delay(client: paramiko.SSHClient) -> None:
    """Send each command at once: with Nagle's algorithm on (paramiko leaves it so), every exec channel
    after the first waited about 40 ms on the switch's delayed ACK."""
    transport = client.get_transport()
    sock = getattr(transport, "sock", None)
    if isinstance(sock, socket.socket):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class SSHTransport:
    """One SSH connection; every command is an exec channel on it (no prompt scraping)."""

    def __init__(
        self,
        host: str,
        username: str,
        password: str | None,
        *,
        port: int = 22,
        timeout: float = 10.0,
        key_file: str | None = None,
        private_key: str | None = None,
        known_hosts: str | None = None,
        accept_new: bool = False,
    ) -> None:
        # Never trust a host key on sight: whoever answers on the management network would collect the
        # fabric's password. Keys come from known_hosts; a first-seen one is recorded only when asked.
        self.client = paramiko.SSHClient()
        self.known_hosts = known_hosts
        if known_hosts and os.path.exists(known_hosts):
            _trust_known_keys(self.client, known_hosts, host, port)
        if known_hosts and accept_new:
            self.client.set_missing_host_key_policy(AcceptNewPolicy(known_hosts))
        else:
            self.client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            self._connect(
                host, username, password, port=port, timeout=timeout, key_file=key_file, private_key=private_key
            )
        except BaseException:
            self.client.close()  # a refused or failed login leaves no session thread behind
            raise
        _no_delay(self.client)
        self.timeout = timeout

    def _connect(
        self,
        host: str,
        username: str,
        password: str | None,
        *,
        port: int,
        timeout: float,
        key_file: str | None,
        private_key: str | None,
    ) -> None:
        known_hosts = self.known_hosts
        try:
            self.client.connect(
                host,
                port=port,
                username=username,
                password=password or None,  # a key-only login offers no empty password
                key_filename=key_file,
                pkey=load_private_key(private_key) if private_key else None,
                timeout=timeout,
                banner_timeout=timeout,
                auth_timeout=timeout,
                look_for_keys=False,
                allow_agent=False,
            )
        except paramiko.AuthenticationException:
            raise ConnectionException(f"{host}: authentication failed for user {username}") from None
        except paramiko.BadHostKeyException:
            raise ConnectionException(
                f"{host}: its host key is not the one in {known_hosts}: refusing to log in (someone may be "
                "answering in its place); if the switch was replaced, remove its old key and verify the new one"
            ) from None
        except paramiko.SSHException as exc:
            if "not found in known_hosts" not in str(exc):
                raise ConnectionException(f"{host}:{port}: cannot connect ({exc})") from None
            raise ConnectionException(
                f"{host}: its host key is not in {known_hosts or 'any known_hosts file'}: verify it and add it "
                "(ssh-keyscan), or run once with --accept-new to record first-seen keys"
            ) from None
        except (TimeoutError, OSError) as exc:
            raise ConnectionException(f"{host}:{port}: cannot connect ({exc or type(exc).__name__})") from None

    def run(self, command: str, stdin: str | None = None) -> Output:
        chan_in, chan_out, chan_err = self.client.exec_command(command, timeout=max(self.timeout, 60.0))
        if stdin is not None:
            chan_in.write(stdin)
            chan_in.channel.shutdown_write()
        out = chan_out.read().decode(errors="replace")
        err = chan_err.read().decode(errors="replace")
        return Output(chan_out.channel.recv_exit_status(), out, err)

    def close(self) -> None:
        self.client.close()
