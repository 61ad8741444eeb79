"""A switch that lies or breaks, behind real protocol stacks, so the drivers' own transports are what
meets it: an SSH server (paramiko's server side, on 127.0.0.1) and an HTTPS server (Python's ssl and
http.server) answering eAPI / NX-API JSON-RPC.

What the switch does with each command is a script, `command -> answer`:
- `Reply`: these bytes on stdout and stderr, this exit status (wrong JSON shapes, markup in stderr);
- `Flood`: stdout without end (up to `total` bytes), as fast as the client takes it;
- `Drip`: one byte every `every` seconds for `lasting` seconds: never idle long enough for a
  per-read timeout;
- `Shell`: the command run by this machine's `sh` (an honest switch), its stdout behind a login
  `banner`, or with one line of it lost (`drop_line`);
- `Mute`: the exec request accepted by the socket and never answered.

Each server records the commands it was asked and how many bytes it sent, so a test can check that
the client stopped reading near its bound (a flood is sent only as fast as the SSH window lets the
client take it).
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import struct
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import paramiko
from paramiko.common import cMSG_CHANNEL_SUCCESS

from gpufabric.drivers.answers import ReadBounds
from gpufabric.drivers.transport import SSHTransport
from tests.tls_server import Pki, make_pki

USER, PASSWORD = "admin", "hostile-switch-pw-5b7"
ADDRESS = "127.0.0.1"


@dataclass(frozen=True)
class Reply:
    stdout: bytes = b""
    stderr: bytes = b""
    rc: int = 0


@dataclass(frozen=True)
class Flood:
    total: int
    chunk: bytes = b"x" * 32768


@dataclass(frozen=True)
class Drip:
    every: float
    lasting: float


@dataclass(frozen=True)
class Shell:
    banner: bytes = b""
    drop_line: int | None = None


@dataclass(frozen=True)
class Mute:
    pass


Answer = Reply | Flood | Drip | Shell | Mute
Script = Callable[[str], Answer]


def json_reply(value: Any) -> Reply:
    return Reply(json.dumps(value).encode())


def nested(depth: int) -> bytes:
    """A JSON document nested `depth` lists deep."""
    return b"[" * depth + b"]" * depth


# -- SSH -------------------------------------------------------------------------------------------


class _Login(paramiko.ServerInterface):
    def __init__(self, switch: HostileSshSwitch) -> None:
        self.switch = switch

    def check_auth_password(self, username: str, password: str) -> int:
        ok = username == USER and password == PASSWORD
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def get_allowed_auths(self, username: str) -> str:
        return "password"

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        line = command.decode(errors="replace")
        self.switch.commands.append(line)
        answer = self.switch.script(line)
        if isinstance(answer, Mute):
            self.switch.stop.wait(120)  # holds this session's thread: the exec request is never answered
            return False
        worker = threading.Thread(target=self.switch.answer, args=(channel, answer), daemon=True)
        worker.start()
        return True


def _note_replies(transport: paramiko.Transport, replied: defaultdict[tuple[int, int], threading.Event]) -> None:
    """Mark each channel's request acknowledgement as it is sent (see HostileSshSwitch.answer)."""
    send = transport._send_user_message

    def noting(message: paramiko.Message) -> None:
        send(message)
        raw = message.asbytes()
        if raw[:1] == cMSG_CHANNEL_SUCCESS:
            replied[id(transport), struct.unpack(">I", raw[1:5])[0]].set()

    transport._send_user_message = noting  # type: ignore[method-assign]


class HostileSshSwitch:
    """An SSH server on 127.0.0.1 that answers each exec request by its script."""

    def __init__(self, script: Script, slow_start: float = 0.0) -> None:
        self.script = script
        # Seconds from a connection's accept to the server's banner and key exchange: a loaded switch
        # whose sshd is slow to start a session.
        self.slow_start = slow_start
        self.host_key = paramiko.ECDSAKey.generate()
        self.commands: list[str] = []
        self.sent: list[int] = []  # stdout bytes sent, per answered command, in order
        self.stop = threading.Event()
        self._transports: list[paramiko.Transport] = []
        # Per session and channel (the client's number for it): the exec request has been answered.
        self.replied: defaultdict[tuple[int, int], threading.Event] = defaultdict(threading.Event)

    def __enter__(self) -> HostileSshSwitch:
        self.sock = socket.socket()
        self.sock.bind((ADDRESS, 0))
        self.sock.listen(8)
        self.sock.settimeout(5)  # a bound on each wait; __exit__ wakes accept() at once
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        return self

    def known_hosts(self, folder: Path) -> str:
        path = folder / "known_hosts"
        path.write_text(f"[{ADDRESS}]:{self.port} {self.host_key.get_name()} {self.host_key.get_base64()}\n")
        return str(path)

    def connect(self, folder: Path, bounds: ReadBounds, timeout: float = 5.0) -> SSHTransport:
        """The drivers' own transport, logged in to this switch."""
        return SSHTransport(
            ADDRESS,
            USER,
            PASSWORD,
            port=self.port,
            timeout=timeout,
            known_hosts=self.known_hosts(folder),
            bounds=bounds,
        )

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
            _note_replies(transport, self.replied)
            transport.add_server_key(self.host_key)
            self._transports.append(transport)
            if self.slow_start:
                threading.Thread(target=self._start_later, args=(transport,), daemon=True).start()
            else:
                self._start(transport)

    def _start_later(self, transport: paramiko.Transport) -> None:
        if not self.stop.wait(self.slow_start):
            self._start(transport)

    def _start(self, transport: paramiko.Transport) -> None:
        try:
            transport.start_server(server=_Login(self))
        except (paramiko.SSHException, EOFError, OSError):
            transport.close()

    def answer(self, channel: paramiko.Channel, answer: Answer) -> None:
        sent = 0
        rc = 0
        # As an SSH server does, acknowledge the exec request before the answer: paramiko's server side
        # sends the acknowledgement from its own thread, and a short answer could overtake it.
        self.replied[id(channel.get_transport()), channel.remote_chanid].wait(10)
        try:
            if isinstance(answer, Reply):
                channel.sendall(answer.stdout)
                channel.sendall_stderr(answer.stderr)
                sent, rc = len(answer.stdout), answer.rc
            elif isinstance(answer, Flood):
                while sent < answer.total and not self.stop.is_set():
                    channel.sendall(answer.chunk)
                    sent += len(answer.chunk)
            elif isinstance(answer, Drip):
                ends = time.monotonic() + answer.lasting
                while time.monotonic() < ends and not channel.closed and not self.stop.is_set():
                    channel.sendall(b"x")
                    sent += 1
                    self.stop.wait(answer.every)
            elif isinstance(answer, Shell):
                sent, rc = self._shell(channel, answer)
            channel.send_exit_status(rc)
        except (OSError, EOFError, paramiko.SSHException):
            pass  # the client closed the channel: what it did is what the test looks at
        finally:
            self.sent.append(sent)
            with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
                channel.close()  # the client may have ended the whole session already: nothing left to close

    def _shell(self, channel: paramiko.Channel, answer: Shell) -> tuple[int, int]:
        command = self.commands[-1]
        done = subprocess.run(
            ["sh", "-c", command], capture_output=True, stdin=subprocess.DEVNULL, timeout=60, check=False
        )
        stdout = answer.banner + done.stdout
        if answer.drop_line is not None:
            lines = stdout.split(b"\n")
            del lines[answer.drop_line]
            stdout = b"\n".join(lines)
        channel.sendall(stdout)
        channel.sendall_stderr(done.stderr)
        return len(stdout), done.returncode

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() that close() alone would not
        self.sock.close()
        for transport in self._transports:
            transport.close()
        self.thread.join(10)


# -- HTTPS (eAPI, NX-API) --------------------------------------------------------------------------


@dataclass(frozen=True)
class Body:
    """An HTTP 200 whose body is these bytes, announced as `length` bytes when that is given."""

    data: bytes
    length: int | None = None


HttpAnswer = Body | Flood | Drip
HttpScript = Callable[[list[str]], HttpAnswer]


def commands_of(request: Any) -> list[str]:
    """The commands of an eAPI request (one object, `params.cmds`) or an NX-API one (a list, one
    object a command)."""
    if isinstance(request, list):
        return [str(item["params"]["cmd"]) for item in request]
    return [c if isinstance(c, str) else str(c.get("cmd", "")) for c in request["params"]["cmds"]]


class _Api(BaseHTTPRequestHandler):
    server: _ApiServer

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        commands = commands_of(request)
        self.server.switch.requests.append(commands)
        answer = self.server.switch.script(commands)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if isinstance(answer, Body):  # a flood or a drip has no length: its body ends when the server closes
            self.send_header("Content-Length", str(len(answer.data) if answer.length is None else answer.length))
        self.end_headers()
        sent = 0
        try:
            if isinstance(answer, Body):
                self.wfile.write(answer.data)
                sent = len(answer.data)
            elif isinstance(answer, Flood):
                while sent < answer.total and not self.server.switch.stop.is_set():
                    self.wfile.write(answer.chunk)
                    sent += len(answer.chunk)
            else:
                ends = time.monotonic() + answer.lasting
                while time.monotonic() < ends and not self.server.switch.stop.is_set():
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    sent += 1
                    self.server.switch.stop.wait(answer.every)
        except OSError:
            pass
        finally:
            self.server.switch.sent.append(sent)
            self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


class _ApiServer(ThreadingHTTPServer):
    daemon_threads = True
    switch: HostileApiSwitch


@dataclass
class HostileApiSwitch:
    """eAPI / NX-API over HTTPS on 127.0.0.1, with a certificate from a CA made for the test."""

    script: HttpScript
    folder: Path
    requests: list[list[str]] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> HostileApiSwitch:
        self.pki: Pki = make_pki(self.folder, ADDRESS, tag="hostile")
        self.httpd = _ApiServer((ADDRESS, 0), _Api)
        self.httpd.switch = self
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.pki.cert_file, self.pki.key_file)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)
