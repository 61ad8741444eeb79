"""Switches and servers opened one at a time, outside Nornir (the telemetry exporter, acceptance's
counter snapshots and its jobs): the same logins and drivers as push and validate (the lab's with
--lab, else the intent's), host keys checked; servers of a lab through the lab's own record."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from gpufabric.drivers.jump import JumpSettings
from gpufabric.drivers.transport import SSHTransport
from gpufabric.fleet.access import Access, driver_name
from gpufabric.fleet.lab.host_state import HostsState
from gpufabric.hidden import reveal
from gpufabric.plan.model import Plan, ip

TIMEOUT = 10  # seconds a switch's or server's session waits for an answer


class Reachable(Protocol):
    """A switch as a caller names it: its platform and management address."""

    @property
    def platform(self) -> str: ...

    @property
    def address(self) -> str | None: ...


Connect = Callable[[Any], Any]  # a Reachable switch -> its open NAPALM driver
RunOnHost = Callable[[str, str], str]  # (server, shell command) -> stdout


def switch_connector(access: Access, timeout: int = TIMEOUT) -> Connect:
    """Opens a switch's driver; its session gives up after `timeout` seconds without an answer."""
    from gpufabric.drivers.registry import network_driver  # the automation stack only when a scrape needs it

    def connect(t: Reachable) -> Any:
        driver = network_driver(driver_name(access, t.platform))
        optional_args = dict(access.optional_args)
        if hops := access.hops(t.address):
            optional_args["jump"] = hops
        conn = driver(t.address, access.username, access.password, timeout=timeout,
                      optional_args=optional_args)  # fmt: skip
        conn.open()
        return conn

    return connect


class HostShell:
    """One SSH connection per server, opened on first use and reopened after a failure."""

    def __init__(
        self, addresses: dict[str, str], user: str, known_hosts: str, jump: JumpSettings | None = None, **keys: Any
    ) -> None:
        self.addresses, self.user, self.known_hosts, self.keys = addresses, user, known_hosts, keys
        self.jump = jump
        self._open: dict[str, SSHTransport] = {}
        self._lock = threading.Lock()

    def __call__(self, host: str, command: str) -> str:
        with self._lock:
            transport = self._open.get(host)
        if transport is None:
            address = self.addresses[host]
            hops = self.jump.hops(address) if self.jump is not None else ()
            transport = SSHTransport(address, self.user, None, timeout=TIMEOUT,
                                     known_hosts=self.known_hosts, jump=hops, **self.keys)  # fmt: skip
            with self._lock:
                self._open[host] = transport
        try:
            return transport.run(command).stdout
        except Exception:
            with self._lock:
                self._open.pop(host, None)
            transport.close()
            raise

    def close(self) -> None:
        for t in self._open.values():
            t.close()


def host_shell(plan: Plan, access: Access, state_dir: Path | None, known_hosts: Path | None) -> RunOnHost | None:
    """The lab's servers through its record; real servers with the intent's host key, when it names one."""
    if access.lab:
        state = HostsState.load(state_dir) if state_dir is not None else None
        if state is None:
            return None
        addresses = {name: rec.address for name, rec in state.hosts.items()}
        return HostShell(addresses, state.user, state.known_hosts, access.jump, key_file=state.key_file)
    cred = plan.intent.credentials.hosts
    if cred.ssh_key is None:
        return None
    key = cred.ssh_key.env or f"vault:{cred.ssh_key.vault}"
    text = access.secrets.get(key)
    if text is None:
        return None
    addresses = {s.name: str(ip(s.mgmt_ip)) for s in plan.servers if s.mgmt_ip is not None}
    hosts = str(known_hosts or Path.home() / ".ssh" / "known_hosts")
    return HostShell(addresses, cred.username, hosts, access.jump, private_key=reveal(text))
