"""Which jump hosts (bastions) lead to a switch or server, as OpenSSH's ProxyJump names them.

A route is worked out once per command, before any login: from `--jump-host [user@]host[:port]`
(a chain is written `a,b`), else from the `ProxyJump` an SSH config file gives the address
(`Host` patterns are matched against the management address gpufabric connects to). Each jump host
is then completed from that config's block for it, as ssh does: `HostName`, `User`, `Port`,
`IdentityFile` and `UserKnownHostsFile`. Nothing else of the config is followed: `ProxyCommand` is
a shell command and is refused, never run; `StrictHostKeyChecking` is not read (every hop's key is
checked against known_hosts, always).

Every name, user and port that comes from outside (the option, the config file) is held to a pattern
before it is used: nothing here reaches a shell, and a value that could be read as an option or a
second host is refused.
"""

from __future__ import annotations

import getpass
import ipaddress
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

from gpufabric.errors import GpufabricError
from gpufabric.inputs import read_text

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOST_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")  # an RFC 1123 name, or an IPv4 address
USER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")
_SPEC = re.compile(
    r"(?:(?P<user>[^@]+)@)?(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^:@\[\]]+))(?::(?P<port>[0-9]{1,5}))?"
)
MAX_HOPS = 4
CONFIG_BYTES = 1 << 20


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


def read_ssh_config(path: Path) -> paramiko.SSHConfig:
    """An OpenSSH client config file (bounded, never through a FIFO), parsed by paramiko."""
    text = read_text(path, what="an SSH client config file", max_bytes=CONFIG_BYTES)
    try:
        return paramiko.SSHConfig.from_text(text)
    except Exception as exc:  # paramiko raises several kinds on a line it cannot read
        raise JumpHostError(f"{path}: cannot read it as an SSH client config ({exc})") from None


@dataclass(frozen=True)
class JumpSettings:
    """How a command finds the jump hosts in front of an address: the chain given (`--jump-host`),
    else the ProxyJump of an SSH config file, else none. Jump hosts' keys are checked against their
    UserKnownHostsFile in that config, else `known_hosts`."""

    known_hosts: str
    chain: tuple[JumpSpec, ...] = ()
    config_path: Path | None = None
    config: paramiko.SSHConfig | None = field(default=None, repr=False, compare=False)

    @classmethod
    def make(cls, known_hosts: Path, jump_host: str | None, ssh_config: Path | None) -> JumpSettings:
        chain = parse_chain(jump_host, "--jump-host") if jump_host else ()
        config = read_ssh_config(ssh_config) if ssh_config is not None else None
        return cls(str(known_hosts), chain, ssh_config, config)

    @property
    def active(self) -> bool:
        return bool(self.chain) or self.config is not None

    def _lookup(self, name: str) -> dict:
        if self.config is None:
            return {}
        try:
            return dict(self.config.lookup(name))
        except Exception as exc:  # a Match exec line (paramiko would need to run it), a bad token
            raise JumpHostError(f"{self.config_path}: cannot look {name} up ({exc})") from None

    def hops(self, address: str) -> tuple[Hop, ...]:
        """The jump hosts in front of `address`, first first; () for a direct login."""
        chain = self.chain
        if not chain and self.config is not None:
            found = self._lookup(address)
            where = f"{self.config_path} (Host matching {address})"
            if found.get("proxycommand", "none").lower() != "none":
                raise JumpHostError(
                    f"{where}: ProxyCommand is a shell command and gpufabric does not run it; name the jump "
                    "host with ProxyJump (or --jump-host) instead"
                )
            chain = parse_chain(found.get("proxyjump", "none"), where)
        return tuple(self._complete(spec) for spec in chain)

    def _complete(self, spec: JumpSpec) -> Hop:
        """A jump host with what the config says of it (the option's user and port win, as with ssh)."""
        found = self._lookup(spec.host)
        where = f"{self.config_path} (Host {spec.host})"
        host = _host(found["hostname"], where) if "hostname" in found else spec.host
        user = spec.user or (_user(found["user"], where) if "user" in found else _user(getpass.getuser(), "this user"))
        port = spec.port or (_port(found["port"], where) if "port" in found else 22)
        keys = tuple(os.path.expanduser(k) for k in found.get("identityfile", []))
        known = found.get("userknownhostsfile", "").split()
        known_hosts = os.path.expanduser(known[0]) if known else self.known_hosts
        return Hop(host, port, user, known_hosts, keys)
