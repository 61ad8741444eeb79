"""How a driver reaches a device: run a command and get its output, over SSH."""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import heapq
import io
import itertools
import os
import re
import secrets
import shlex
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import paramiko
from napalm.base.exceptions import ConnectionException

from gpufabric.drivers.answers import (
    DEFAULT_BOUNDS,
    AnswerDeadlineError,
    AnswerFramingError,
    AnswerTooLargeError,
    ReadBounds,
    shown,
    size_text,
)
from gpufabric.drivers.jump import Hop, JumpHostError
from gpufabric.errors import GpufabricError, Problem
from gpufabric.files import AppendError, append_line
from gpufabric.inputs import InputError, MiB, read_lines


@dataclass(frozen=True)
class Output:
    rc: int
    stdout: str
    stderr: str


class CommandFailedError(GpufabricError):
    """A command that exited non-zero. Its stderr (or stdout) is shown as text: control characters
    escaped, on one line (see answers.shown), so nothing the switch wrote can drive a terminal."""

    def __init__(self, command: str, output: Output) -> None:
        said = last_words((output.stderr or output.stdout).strip())
        super().__init__(f"`{shown(command, 200)}` exited {output.rc}: {said}")
        self.command = command
        self.output = output


def last_words(text: str, limit: int = 600) -> str:
    """The end of a failed command's output, escaped as `shown` does: a script says why it failed last
    (frr-reload.py, for one, writes its INFO lines first, and its error after them)."""
    end = text[-limit:]
    escaped = shown(end, 10 * limit)  # an escape is at most 10 characters: nothing is cut here
    return escaped if end == text and len(escaped) <= limit else "..." + escaped[-limit:]


class Transport(Protocol):
    def run(self, command: str, stdin: str | None = None) -> Output: ...

    def close(self) -> None: ...


def check(transport: Transport, command: str, stdin: str | None = None) -> str:
    return checked(transport, command, stdin).stdout


def checked(transport: Transport, command: str, stdin: str | None = None) -> Output:
    """The command's whole output (stderr too: what a script reports on its way); a non-zero exit is an error."""
    out = transport.run(command, stdin)
    if out.rc != 0:
        raise CommandFailedError(command, out)
    return out


@contextlib.contextmanager
def slow_commands(transport: Transport, seconds: float) -> Iterator[None]:
    """Within the block, one command may take up to `seconds` (not the usual per-command deadline): for the
    few commands known to take long, such as restarting a switch's routing daemons on a busy machine, which
    would otherwise be cut off as an unanswering switch and leave it drained. Every other bound stays
    (bytes, the session's budget). A transport without bounds (a recording) is left as it is."""
    bounds = getattr(transport, "bounds", None)
    if not isinstance(bounds, ReadBounds) or bounds.command_seconds >= seconds:
        yield
        return
    transport.bounds = dataclasses.replace(bounds, command_seconds=seconds)  # type: ignore[attr-defined]
    try:
        yield
    finally:
        transport.bounds = bounds  # type: ignore[attr-defined]


def put_file(transport: Transport, path: str, text: str, mode: int | None = None) -> None:
    """Write a file on the device through the shell: no SFTP needed, and written whole (temp + rename).

    With `mode`, the file is created with it (a file holding a secret is never readable by others).
    """
    tmp = f"{path}.tmp"
    umask = f"umask {0o777 & ~mode:03o} && " if mode is not None else ""
    check(transport, f"{umask}cat > {shlex.quote(tmp)} && mv -f {shlex.quote(tmp)} {shlex.quote(path)}", text)


def put_files(transport: Transport, files: dict[str, tuple[str, int | None]], setup: str = "", then: str = "") -> None:
    """Write several files in one round trip (path -> (text, mode)), each as `put_file` would: whole, and
    created with its mode, after the shell command `setup` (making their folder, say) and before `then`.
    The texts travel base64-encoded on the session's stdin, never on a command line (another user of the
    device could read a command line, and a file may hold a secret)."""
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
    lines += [then] if then else []
    check(transport, "sh -s", "\n".join(lines) + "\n")


def read_many(transport: Transport, commands: dict[str, str]) -> dict[str, str]:
    """The output of several read-only shell commands in one round trip (name -> command); a command that
    fails (exits non-zero) reads as empty. See read_each."""
    return {name: out.stdout if out.rc == 0 else "" for name, out in read_each(transport, commands).items()}


def read_each(transport: Transport, commands: dict[str, str]) -> dict[str, Output]:
    """Several read-only shell commands in one round trip (name -> command): each one's stdout and exit
    status (stderr is not kept).

    Each answer comes back in a frame of its own, one line: `@gf-TOKEN-I:BASE64:TOKEN`, where TOKEN is
    random for this call and I the command's place; the base64 holds the command's stdout and, after a
    last newline, its exit status, so any byte comes back as it was. Lines that are not frames (a login
    banner a shell's rc file prints) are passed over, and can no longer shift every answer by one; a
    frame that is missing, repeated, out of order or garbled is an AnswerFramingError naming the
    command, never an empty answer. Each command runs in a subshell (an `exit` in it ends it alone, and
    its status is still framed), with /dev/null as stdin (one reading its stdin would wait on the
    session's)."""
    token = secrets.token_hex(8)
    script = "".join(
        f"printf '\\n@gf-{token}-{i}:'; {{ ( {command}\n) </dev/null 2>/dev/null; printf '\\n%d' \"$?\"; }} "
        f"| base64 -w0; printf ':{token}\\n'\n"
        for i, command in enumerate(commands.values())
    )
    text = check(transport, script)  # no secret in it: the command line, not stdin (one less wait)
    host = getattr(transport, "host", "")
    frames = _frames(text, token, host, list(commands.values()))
    return {name: frames[i] for i, name in enumerate(commands)}


def _frames(text: str, token: str, host: str, commands: list[str]) -> list[Output]:
    frame = re.compile(rf"@gf-{token}-(\d+):([A-Za-z0-9+/=]*):{token}")
    found: list[Output] = []
    for line in text.split("\n"):
        if f"@gf-{token}-" not in line:
            continue  # not ours: a banner, a message of the day
        m = frame.search(line)
        index = int(m.group(1)) if m else -1
        if index != len(found) or index >= len(commands):
            where = commands[len(found)] if len(found) < len(commands) else "(after the last command)"
            raise AnswerFramingError(
                host, where, f"its answer's frame is missing or garbled (read {shown(line, 80)!r})"
            )
        assert m is not None
        found.append(_unframe(m.group(2), host, commands[index]))
    if len(found) != len(commands):
        raise AnswerFramingError(
            host, commands[len(found)], f"no answer came back for it ({len(found)} of {len(commands)} framed answers)"
        )
    return found


def _unframe(encoded: str, host: str, command: str) -> Output:
    try:
        raw = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise AnswerFramingError(host, command, "its answer's frame is not base64") from None
    body, _, status = raw.rpartition(b"\n")
    if not status.isdigit() or len(status) > 3:
        raise AnswerFramingError(host, command, "its answer's frame ends without an exit status")
    return Output(int(status), body.decode(errors="replace"), "")


_KNOWN_HOSTS_WRITE = threading.Lock()


class AcceptNewPolicy(paramiko.MissingHostKeyPolicy):
    """OpenSSH's `StrictHostKeyChecking accept-new`: a host seen for the first time is recorded in the
    known_hosts file and trusted from then on; a changed key is still refused (paramiko checks known keys
    before it asks a policy)."""

    def __init__(self, known_hosts: str) -> None:
        self.known_hosts = known_hosts

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        line = f"{hostname} {key.get_name()} {key.get_base64()}\n"
        with _KNOWN_HOSTS_WRITE:
            try:
                append_line(Path(self.known_hosts), line)  # never through a planted link or into a FIFO
            except AppendError as exc:
                raise paramiko.SSHException(f"cannot record {hostname}'s key in {self.known_hosts}: {exc}") from None


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


KNOWN_HOSTS_BYTES = 64 * MiB  # a known_hosts of 10,000 switches with three keys each is about 3 MiB
KNOWN_HOSTS_LINE = 16 * 1024  # bytes of one line: a 16384-bit RSA key in base64 is under 3 KiB
KNOWN_HOSTS_LINES = 1_000_000
KNOWN_HOSTS_WHAT = "an SSH known_hosts file"


def read_known_hosts(path: str) -> paramiko.HostKeys:
    """The host keys of a known_hosts file, read as every outside input is (gpufabric.inputs): a regular
    file only (a FIFO would block the read forever, /dev/zero fill memory), at most 64 MiB, 16 KiB and
    a million lines, UTF-8, each failure a located InputError (file, line; exit 2). A line of a key type
    paramiko does not know is skipped, as its own load skips it; a key that is not base64 is refused at
    its line (paramiko's load raised on it, unlocated)."""
    keys = paramiko.HostKeys()
    for number, line in read_lines(path, what=KNOWN_HOSTS_WHAT, max_line=KNOWN_HOSTS_LINE, max_bytes=KNOWN_HOSTS_BYTES):
        if number > KNOWN_HOSTS_LINES:
            raise _known_hosts_error(path, number, f"more than {KNOWN_HOSTS_LINES:,} lines, more than it can have")
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            entry = paramiko.hostkeys.HostKeyEntry.from_line(text, number)
        except (paramiko.hostkeys.InvalidHostKey, paramiko.SSHException, ValueError, binascii.Error):
            raise _known_hosts_error(path, number, f"line {number} is not `HOST KEY-TYPE BASE64-KEY`") from None
        if entry is not None:
            keys._entries.append(entry)  # paramiko's own load, without its compare of each line with all before
    return keys


def _known_hosts_error(path: str, line: int, message: str) -> InputError:
    return InputError(path, [Problem((), message, "fix or remove the line (ssh-keygen -R HOST)")], {(): line})


def _known_keys(path: str) -> _KnownHosts:
    """The known_hosts file, read once per version of it (its mtime and size), not once per login, with
    its entries indexed by host name.

    paramiko's own load compares each line with every entry read before it, and its lookup walks every
    entry: over a push to a thousand switches, reading the whole file at every login grew with the cube
    of the fleet, and looking a host up in it with the square. Its load also opens whatever the name
    is: a FIFO there held every login forever.
    """
    stat = os.stat(path)
    version = (stat.st_mtime_ns, stat.st_size)
    with _KNOWN_HOSTS_READ:
        cached = _known_hosts_cache.get(path)
        if cached is None or cached[0] != version:
            keys = read_known_hosts(path)
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


def check_known_hosts(path: str | Path) -> None:
    """Read a known_hosts file once before any login, so that one that cannot be read (a FIFO, a device,
    too large, not UTF-8) stops the command with its located error (exit 2) rather than failing every
    switch's login in turn. A file that is not there is no error: no key is known yet."""
    if os.path.lexists(path):
        _known_keys(str(path))


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


class _Watchdog:
    """One thread for the process that runs an action once its deadline passes: it closes a channel
    whose exec request the switch never answers (paramiko waits for that answer without a timeout; its
    login steps, banner, key exchange and authentication, each have the driver's timeout). Armed and
    disarmed per command; a disarmed entry is dropped when its time comes."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._cv = threading.Condition()
        self._due: list[tuple[float, int, Callable[[], object]]] = []
        self._disarmed: set[int] = set()
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float, action: Callable[[], object]) -> int:
        with self._cv:
            ident = next(self._ids)
            heapq.heappush(self._due, (deadline, ident, action))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gpufabric-deadlines", daemon=True)
                self._thread.start()
            self._cv.notify()
        return ident

    def disarm(self, ident: int) -> None:
        with self._cv:
            self._disarmed.add(ident)

    def _run(self) -> None:
        while True:
            with self._cv:
                if not self._due:
                    self._cv.wait()
                    continue
                deadline, ident, action = self._due[0]
                if ident in self._disarmed:
                    heapq.heappop(self._due)
                    self._disarmed.discard(ident)
                    continue
                left = deadline - time.monotonic()
                if left > 0:
                    self._cv.wait(left)
                    continue
                heapq.heappop(self._due)
            try:
                action()
            except Exception:  # closing what is already broken: nothing more to do
                continue


_WATCHDOG = _Watchdog()


def _cut_off(flag: threading.Event, close: Callable[[], object]) -> Callable[[], None]:
    """The watchdog's action: mark what it cut (so the caller names the deadline, not the broken
    channel), then close it (which wakes whatever waits on it)."""

    def act() -> None:
        flag.set()
        close()

    return act


os.register_at_fork(after_in_child=_WATCHDOG._reset)  # validate reads from forked workers: a thread each


@dataclass
class _Burst:
    """What the commands of this session run back to back have used of its budget."""

    seconds: float = 0.0
    bytes: int = 0
    ended: float = float("-inf")  # when the last command ended


@dataclass(frozen=True)
class _Allowance:
    """What one command may use: bytes and a deadline, each with the words naming the bound it comes from."""

    bytes: int
    bytes_bound: str
    deadline: float
    time_bound: str

    def late(self, host: str, command: str) -> AnswerDeadlineError:
        return AnswerDeadlineError(host, command, f"no complete answer within {self.time_bound}")


class JumpHostRefusedError(JumpHostError, ConnectionException):
    """A jump host that could not be used: its host key missing from known_hosts or not the one there,
    its login refused, or no way on from it. A refusal before the switch is logged in to (the switch's
    login is never sent through a host that is not the one known)."""


def _hop_client(hop: Hop, sock: paramiko.Channel | None, timeout: float) -> paramiko.SSHClient:
    """A login to one jump host (through `sock`, the previous hop's channel, when there is one), its host
    key checked against its known_hosts file: never trusted on sight, never recorded."""
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    if os.path.exists(hop.known_hosts):
        _trust_known_keys(client, hop.known_hosts, hop.host, hop.port)
    keys = [k for k in hop.key_files if os.path.exists(k)]
    dialled: socket.socket | None = None
    try:
        if sock is None:
            dialled = dial(hop.host, hop.port, timeout)
        client.connect(
            hop.host,
            port=hop.port,
            username=hop.user,
            key_filename=keys or None,
            look_for_keys=not keys,  # the person's own keys and agent, as ssh offers them to a bastion
            allow_agent=True,
            sock=sock if sock is not None else dialled,
            **_login_timeouts(timeout),
        )
    except BaseException as exc:
        client.close()
        if dialled is not None:
            dialled.close()
        raise _hop_refusal(hop, exc) from None
    return client


def _hop_refusal(hop: Hop, exc: BaseException) -> BaseException:
    where = f"jump host {hop}"
    if isinstance(exc, paramiko.BadHostKeyException):
        return JumpHostRefusedError(
            f"{where}: its host key is not the one in {hop.known_hosts}: refusing to go through it (someone may "
            "be answering in its place); if the jump host was rebuilt, remove its old key and verify the new one"
        )
    if isinstance(exc, paramiko.SSHException) and "not found in known_hosts" in str(exc):
        return JumpHostRefusedError(
            f"{where}: its host key is not in {hop.known_hosts}: verify it and add it (ssh-keyscan); a jump "
            "host's key is never recorded on first sight"
        )
    if isinstance(exc, paramiko.AuthenticationException):
        return JumpHostRefusedError(f"{where}: authentication failed for user {hop.user} ({exc})")
    if isinstance(exc, paramiko.SSHException | TimeoutError | OSError | EOFError):
        return JumpHostRefusedError(f"{where}: cannot connect ({exc or type(exc).__name__})")
    return exc


def open_hops(hops: tuple[Hop, ...], timeout: float) -> list[paramiko.SSHClient]:
    """Log in to each jump host in turn, each through the one before; the clients, first first."""
    clients: list[paramiko.SSHClient] = []
    try:
        sock: paramiko.Channel | None = None
        for i, hop in enumerate(hops):
            client = _hop_client(hop, sock, timeout)
            clients.append(client)
            if i == 0:
                _no_delay(client)
            if i + 1 < len(hops):
                sock = _forward(client, hop, hops[i + 1].host, hops[i + 1].port, timeout)
    except BaseException:
        for c in reversed(clients):
            c.close()
        raise
    return clients


def _forward(client: paramiko.SSHClient, hop: Hop, host: str, port: int, timeout: float) -> paramiko.Channel:
    """A channel from the jump host to host:port (ssh's `-W`), to log in through."""
    transport = client.get_transport()
    assert transport is not None
    try:
        return transport.open_channel("direct-tcpip", (host, port), ("127.0.0.1", 0), timeout=timeout)
    except (paramiko.SSHException, TimeoutError, OSError, EOFError) as exc:
        raise JumpHostRefusedError(f"jump host {hop}: cannot reach {host}:{port} from it ({exc})") from None


@dataclass
class _SharedHops:
    lock: threading.Lock
    clients: list[paramiko.SSHClient] | None = None
    users: int = 0


class _HopPool:
    """One login per jump host chain, shared by every session that goes through it, as ssh's
    ControlMaster would: each switch session is a channel of its own on it. A push reading hundreds of
    switches at once then opens one connection to the jump host, not hundreds (which its sshd's
    MaxStartups would drop). The login is closed when its last session closes, and opened again when
    it has died."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[Hop, ...], _SharedHops] = {}

    def acquire(self, hops: tuple[Hop, ...], timeout: float) -> list[paramiko.SSHClient]:
        with self._lock:
            entry = self._open.setdefault(hops, _SharedHops(threading.Lock()))
            entry.users += 1
        try:
            with entry.lock:
                if entry.clients is None or not all(_alive(c) for c in entry.clients):
                    for c in reversed(entry.clients or []):
                        c.close()
                    entry.clients = None
                    entry.clients = open_hops(hops, timeout)
                return entry.clients
        except BaseException:
            self.release(hops)
            raise

    def release(self, hops: tuple[Hop, ...]) -> None:
        with self._lock:
            entry = self._open.get(hops)
            if entry is None:
                return
            entry.users -= 1
            if entry.users > 0:
                return
            del self._open[hops]
        for c in reversed(entry.clients or []):
            c.close()

    def forget(self) -> None:
        """In a forked child: the parent's logins are not this process's to use or close."""
        self._lock = threading.Lock()
        self._open = {}


def _alive(client: paramiko.SSHClient) -> bool:
    transport = client.get_transport()
    return transport is not None and transport.is_active()


_HOPS = _HopPool()
os.register_at_fork(after_in_child=_HOPS.forget)


def check_jump_hosts(chains: set[tuple[Hop, ...]], timeout: float) -> None:
    """Log in to every jump host of these chains once and out again: a refused key or login stops a
    command before any switch is read or changed, with one error rather than one per switch."""
    for hops in sorted(chains, key=lambda c: [str(h) for h in c]):
        for client in reversed(open_hops(hops, timeout)):
            client.close()


# The TCP connect keeps the caller's short timeout (an unreachable switch fails fast); the SSH banner and the
# login of a switch that did answer get at least this long: a loaded switch (or controller) has taken more
# than ten seconds to finish a key exchange and a login, and a push then refused a healthy switch.
LOGIN_SECONDS = 60.0


def _login_timeout(timeout: float) -> float:
    return max(timeout, LOGIN_SECONDS)


def dial(host: str, port: int, timeout: float) -> socket.socket:
    """The TCP connection to an SSH server, within the caller's short timeout: an unreachable switch fails
    fast. paramiko then gets the socket, and the login's time for what follows (`_login_timeouts`)."""
    return socket.create_connection((host, port), timeout=timeout)


def _login_timeouts(timeout: float) -> dict[str, float]:
    """paramiko's bounds for the banner, the key exchange and the login of an SSH server already dialled.
    paramiko bounds the key exchange by connect()'s `timeout` and, past it, goes on to the login with the
    exchange unfinished, which then fails as "No existing session": a restarted switch on a loaded machine,
    whose sshd took longer than the connect timeout to exchange keys, was reported unreachable and left
    drained. Once the server has answered, each step of the login gets the login's time."""
    login = _login_timeout(timeout)
    return {"timeout": login, "banner_timeout": login, "auth_timeout": login}


CHUNK = 32 * 1024  # one SSH packet's worth
POLL = 0.2  # while stdout is quiet, how often stderr is looked at (a switch filling only stderr)


_JUMP_HINT = "; if it is reached through a jump host, name it (--jump-host, or ProxyJump in an SSH config)"


def _why(exc: BaseException) -> str:
    """Why a connection failed, in the system's words: paramiko's "Unable to connect to port 22 on
    ADDRESS" keeps the reason (refused, unreachable) only in the errors it gathered per address."""
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
        reasons = sorted({e.strerror or str(e) for e in exc.errors.values()})
        return "; ".join(reasons) or str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror  # "Connection refused", as paramiko's own connect reported it
    return str(exc) or type(exc).__name__


class SSHTransport:
    """One SSH connection; every command is an exec channel on it (no prompt scraping). Commands may run
    from several threads at once, each on its own channel (`concurrent`)."""

    concurrent = True

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
        bounds: ReadBounds = DEFAULT_BOUNDS,
        jump: tuple[Hop, ...] = (),
    ) -> None:
        self.host = host
        self.bounds = bounds
        self._burst = _Burst()
        self._burst_lock = threading.Lock()
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
        # Through jump hosts: each logged in to with its key checked, then a channel from the last to the
        # switch, over which the switch's own login runs end to end (its key checked as on a direct login).
        self._jump: tuple[Hop, ...] = ()
        try:
            sock = None
            if jump:
                clients = _HOPS.acquire(jump, timeout)
                self._jump = jump
                sock = _forward(clients[-1], jump[-1], host, port, timeout)
            self._connect(
                host, username, password, port=port, timeout=timeout, key_file=key_file, private_key=private_key,
                sock=sock,
            )  # fmt: skip
        except BaseException:
            self.close()  # a refused or failed login leaves no session thread behind
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
        sock: paramiko.Channel | None = None,
    ) -> None:
        known_hosts = self.known_hosts
        hint = "" if sock is not None else _JUMP_HINT
        pkey = load_private_key(private_key) if private_key else None
        try:
            dialled = dial(host, port, timeout) if sock is None else None
            try:
                self.client.connect(
                    host,
                    port=port,
                    username=username,
                    password=password or None,  # a key-only login offers no empty password
                    key_filename=key_file,
                    pkey=pkey,
                    look_for_keys=False,
                    allow_agent=False,
                    sock=sock if sock is not None else dialled,
                    **_login_timeouts(timeout),
                )
            except BaseException:
                if dialled is not None:
                    dialled.close()
                raise
        except paramiko.AuthenticationException as exc:
            # paramiko's own words tell a refused login from one a busy switch did not answer in time
            # ("Authentication timeout."): the second is worth retrying, the first is not.
            raise ConnectionException(f"{host}: authentication failed for user {username} ({_why(exc)})") from None
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
            raise ConnectionException(f"{host}:{port}: cannot connect ({_why(exc)}){hint}") from None

    def run(self, command: str, stdin: str | None = None) -> Output:
        """One command on its own exec channel: its stdout, stderr and exit status, read within the
        bounds (ReadBounds): its bytes, its deadline from the exec request to the exit status, and what
        is left of the session burst's budget. Past a bound the channel is closed and the command fails
        with an error naming the switch, the command and the bound."""
        started = time.monotonic()
        allowed = self._allowance(command, started)
        transport = self.client.get_transport()
        if transport is None or not transport.is_active():
            raise ConnectionException(f"{self.host}: the SSH session is closed")
        cut = threading.Event()
        chan: paramiko.Channel | None = None
        size = 0
        try:
            chan = opened = transport.open_session(timeout=max(0.1, allowed.deadline - started))
            guard = _WATCHDOG.arm(allowed.deadline, _cut_off(cut, opened.close))
            try:
                opened.exec_command(command)
                if stdin is not None:
                    opened.settimeout(max(0.1, allowed.deadline - time.monotonic()))
                    opened.sendall(stdin.encode())
                    opened.shutdown_write()
                out, err = self._collect(opened, command, allowed)
                size = len(out) + len(err)
                if not opened.status_event.wait(max(0.0, allowed.deadline - time.monotonic())) or cut.is_set():
                    raise allowed.late(self.host, command)
                return Output(opened.recv_exit_status(), out.decode(errors="replace"), err.decode(errors="replace"))
            finally:
                _WATCHDOG.disarm(guard)
        except (TimeoutError, paramiko.SSHException, EOFError) as exc:
            if cut.is_set() or time.monotonic() >= allowed.deadline:
                raise allowed.late(self.host, command) from None
            raise ConnectionException(f"{self.host}: `{shown(command, 120)}`: the session failed ({exc})") from None
        except AnswerTooLargeError as exc:
            size = exc.size
            raise
        finally:
            if chan is not None:
                chan.close()
            self._spent(started, size)

    def _allowance(self, command: str, now: float) -> _Allowance:
        """This command's byte limit and deadline: its own bounds, or what is left of the session burst's
        budget when that is less (a pause of rest_seconds before it starts a new burst)."""
        b = self.bounds
        with self._burst_lock:
            if now - self._burst.ended >= b.rest_seconds:
                self._burst = _Burst()
            seconds_left = b.session_seconds - self._burst.seconds
            bytes_left = b.session_bytes - self._burst.bytes
        if seconds_left <= 0:
            raise AnswerDeadlineError(
                self.host, command, f"not run: the session's budget of {b.session_seconds:g} s of answers is spent"
            )
        if bytes_left <= 0:
            raise AnswerTooLargeError(
                self.host, command, f"not run: the session's budget of {size_text(b.session_bytes)} is spent"
            )
        own = max(self.timeout, b.command_seconds)
        seconds = (own, f"the command's deadline of {own:g} s")
        if seconds_left < own:
            seconds = (seconds_left, f"the session's budget of {b.session_seconds:g} s of answers")
        size = (b.command_bytes, f"the bound of {size_text(b.command_bytes)} on one command's answer")
        if bytes_left < b.command_bytes:
            size = (bytes_left, f"the session's budget of {size_text(b.session_bytes)} ({size_text(bytes_left)} left)")
        return _Allowance(size[0], size[1], now + seconds[0], seconds[1])

    def _spent(self, started: float, size: int) -> None:
        now = time.monotonic()
        with self._burst_lock:
            self._burst.seconds += now - started
            self._burst.bytes += size
            self._burst.ended = now

    def _collect(self, chan: paramiko.Channel, command: str, allowed: _Allowance) -> tuple[bytes, bytes]:
        """Stdout and stderr until both end, within the allowance. Stdout is waited on; stderr is drained
        whenever it holds something (a command filling stderr while its stdout is quiet must not stall
        on a full window)."""
        out, err = bytearray(), bytearray()
        stdout_open = True
        while True:
            left = allowed.deadline - time.monotonic()
            if left <= 0:
                raise allowed.late(self.host, command)
            if chan.recv_stderr_ready():
                chunk, into = chan.recv_stderr(CHUNK), err
            elif stdout_open:
                chan.settimeout(min(left, POLL))
                try:
                    chunk, into = chan.recv(CHUNK), out
                except TimeoutError:
                    continue
                if not chunk:
                    stdout_open = False
                    continue
            else:
                chan.settimeout(left)
                chunk, into = chan.recv_stderr(CHUNK), err  # stdout has ended: stderr's rest, then done
                if not chunk:
                    return bytes(out), bytes(err)
            into += chunk
            if len(out) + len(err) > allowed.bytes:
                error = AnswerTooLargeError(self.host, command, f"answered more than {allowed.bytes_bound}")
                error.size = len(out) + len(err)
                raise error

    def close(self) -> None:
        self.client.close()
        jump, self._jump = getattr(self, "_jump", ()), ()
        if jump:
            _HOPS.release(jump)  # the jump hosts' login closes with the last session through it
