"""Which jump hosts (bastions) lead to a switch or server, as OpenSSH's ProxyJump names them.

A route is worked out once per command, before any login: from `--jump-host [user@]host[:port]`
(a chain is written `a,b`), else from the `ProxyJump` an SSH config file gives the address
(`Host` patterns are matched against the management address gpufabric connects to). Each jump host
is then completed from that config's block for it, as ssh does: `HostName`, `User`, `Port`,
`IdentityFile` and `UserKnownHostsFile`. The config is read by gpufabric's own reader
(drivers/ssh_config.py), never by paramiko's, whose lookup runs `Match exec` commands: nothing of a
config is ever run, and a config holding `Match exec`, `ProxyCommand`, `LocalCommand` or
`KnownHostsCommand` is refused whole at its line; `StrictHostKeyChecking` is not read (every hop's key
is checked against known_hosts, always).

Every name, user and port that comes from outside (the option, the config file) is held to a pattern
before it is used: nothing here reaches a shell, and a value that could be read as an option or a
second host is refused.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from gpufabric.drivers.ssh_config import Found, Setting, SshConfig, local_user_name, read_ssh_config
from gpufabric.errors import GpufabricError

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOST_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")  # an RFC 1123 name, or an IPv4 address
USER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")
_SPEC = re.compile(
    r"(?:(?P<user>[^@]+)@)?(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^:@\[\]]+))(?::(?P<port>[0-9]{1,5}))?"
)
MAX_HOPS = 4


class JumpHostError(GpufabricError):
    """A jump host setting that cannot be used: a malformed name, user or port, a ProxyCommand, an
    unreadable SSH config. Nothing was logged in to."""


@dataclass(frozen=True)
class Hop:
    """One jump host, as it is logged in to: its address, port, user, the key files to offer and the
    known_hosts file its host key must be in."""

    host: str
    port: int
    user: str
    known_hosts: str
    key_files: tuple[str, ...] = ()

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user}@{host}:{self.port}"


def _host(value: str, where: str) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if len(value) > 253 or not HOST_NAME.fullmatch(value):
        raise JumpHostError(f"{where}: {value[:80]!r} is not a host name or address")
    return value


def _user(value: str, where: str) -> str:
    if not USER_NAME.fullmatch(value):
        raise JumpHostError(f"{where}: {value[:40]!r} is not a user name (letters, digits, '_', '.', '-', at most 32)")
    return value


def _port(value: str | int, where: str) -> int:
    text = str(value)
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise JumpHostError(f"{where}: {text[:20]!r} is not a port (1-65535)")
    return int(text)


@dataclass(frozen=True)
class JumpSpec:
    """One `[user@]host[:port]` of a ProxyJump chain, before the SSH config completes it."""

    host: str
    user: str | None = None
    port: int | None = None


def parse_chain(text: str, where: str) -> tuple[JumpSpec, ...]:
    """`[user@]host[:port]`, or several comma-separated (the first is logged in to first). `none`
    (as ssh reads it) is no jump host. IPv6 addresses in brackets."""
    if not text.isprintable():
        raise JumpHostError(f"{where}: {text[:80]!r} holds a control character")
    if text.strip().lower() == "none":
        return ()
    parts = text.split(",")
    if len(parts) > MAX_HOPS:
        raise JumpHostError(f"{where}: {len(parts)} jump hosts; at most {MAX_HOPS}")
    specs = []
    for part in parts:
        m = _SPEC.fullmatch(part.strip())
        if not part.strip().isprintable() or m is None:
            raise JumpHostError(f"{where}: {part.strip()[:80]!r} is not [user@]host[:port]")
        user = _user(m["user"], where) if m["user"] is not None else None
        host = _host(m["v6"] or m["host"], where)
        port = _port(m["port"], where) if m["port"] is not None else None
        specs.append(JumpSpec(host, user, port))
    return tuple(specs)


@dataclass(frozen=True)
class JumpSettings:
    """How a command finds the jump hosts in front of an address: the chain given (`--jump-host`),
    else the ProxyJump of an SSH config file, else none. Jump hosts' keys are checked against their
    UserKnownHostsFile in that config, else `known_hosts`."""

    known_hosts: str
    chain: tuple[JumpSpec, ...] = ()
    config_path: Path | None = None
    config: SshConfig | None = field(default=None, repr=False, compare=False)

    @classmethod
    def make(cls, known_hosts: Path, jump_host: str | None, ssh_config: Path | None) -> JumpSettings:
        chain = parse_chain(jump_host, "--jump-host") if jump_host else ()
        config = read_ssh_config(ssh_config) if ssh_config is not None else None
        return cls(str(known_hosts), chain, ssh_config, config)

    @property
    def active(self) -> bool:
        return bool(self.chain) or self.config is not None

    def _lookup(self, name: str) -> Found:
        return self.config.lookup(name) if self.config is not None else Found({})

    def hops(self, address: str) -> tuple[Hop, ...]:
        """The jump hosts in front of `address`, first first; () for a direct login."""
        chain = self.chain
        if not chain and self.config is not None:
            jump = self._lookup(address).get("proxyjump")
            if jump is not None:
                chain = parse_chain(_one(jump, address), _at(jump))
        return tuple(self._complete(spec) for spec in chain)

    def _complete(self, spec: JumpSpec) -> Hop:
        """A jump host with what the config says of it (the option's user and port win, as with ssh)."""
        found = self._lookup(spec.host)
        hostname, user, port = found.get("hostname"), found.get("user"), found.get("port")
        host = _host(_one(hostname, spec.host), _at(hostname)) if hostname is not None else spec.host
        configured = _user(_one(user, spec.host), _at(user)) if user is not None else None
        user_name = spec.user or configured or _user(local_user_name(), "this user")
        port_number = spec.port or (_port(_one(port, spec.host), _at(port)) if port is not None else 22)
        keys = tuple(os.path.expanduser(_one(k, spec.host)) for k in found.identity_files)
        known = found.get("userknownhostsfile")
        known_hosts = os.path.expanduser(_one(known, spec.host, first=True)) if known else self.known_hosts
        return Hop(host, port_number, user_name, known_hosts, keys)


def _at(setting: Setting) -> str:
    return f"{setting.file}:{setting.line} ({setting.keyword})"


def _one(setting: Setting, host: str, *, first: bool = False) -> str:
    """The value of a setting for `host`: its only word (UserKnownHostsFile: its first), with the
    tokens ssh_config(5) gives (`%h` the host, `%d` the home folder, `%u` the local user, `%%`)
    expanded; any other token is refused (gpufabric does not know the value ssh would give it)."""
    if len(setting.args) != 1 and not first:
        raise JumpHostError(f"{_at(setting)}: one value expected, {len(setting.args)} given")
    text = setting.args[0]
    out, i = [], 0
    while i < len(text):
        if text[i] != "%":
            out.append(text[i])
            i += 1
            continue
        token = text[i : i + 2]
        if token == "%h":
            out.append(host)
        elif token == "%%":
            out.append("%")
        elif token == "%d":
            out.append(str(Path.home()))
        elif token == "%u":
            out.append(local_user_name())
        else:
            raise JumpHostError(f"{_at(setting)}: the token {token!r} is not one gpufabric expands (%h %d %u %%)")
        i += 2
    return "".join(out)
