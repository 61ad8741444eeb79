"""How push and validate log in: the lab's own login (`--lab`), else the intent's credentials: a password
and/or an SSH private key, each from the environment variable or vault entry the intent names. Never
printed: both travel as `Hidden` values that only the driver reveals, at login."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nornir.core.inventory import ConnectionOptions, Inventory
from nornir_napalm.plugins.connections import Napalm

from gpufabric.config.secrets import SecretUnavailableError
from gpufabric.drivers.jump import Hop, JumpSettings
from gpufabric.drivers.registry import network_driver
from gpufabric.drivers.transport import check_jump_hosts, check_known_hosts
from gpufabric.fleet.args import CONNECT_TIMEOUT
from gpufabric.fleet.errors import MissingLoginError
from gpufabric.fleet.lab.credentials import load_login, load_secrets
from gpufabric.fleet.lab.state import LabState
from gpufabric.hidden import Hidden, reveal
from gpufabric.intent.model import Intent
from gpufabric.intent.types import SecretRef
from gpufabric.platforms import platform

log = logging.getLogger(__name__)

LAB_DRIVER = "frr"  # every lab switch runs FRR, whatever the plan says it is
TLS_KNOWN_HOSTS = "known_tls_hosts"  # beside the SSH known_hosts file, unless --tls-known-hosts names one


@dataclass(frozen=True)
class Access:
    lab: bool
    username: str
    password: str = field(repr=False)
    optional_args: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict, repr=False)  # what rendering may need, by reference name
    notes: tuple[str, ...] = ()  # for the person running the command (the CLI prints them)
    jump: JumpSettings | None = None  # the jump hosts in front of the switches and servers, if any
    lab_name: str | None = None  # the lab's name (`lab up --name`) when the target is a lab

    @property
    def target(self) -> str:
        """What a push holds its lock on: the fabric's real switches, or one lab of it (labs side by side, and
        the real fabric beside its lab, are each a target of their own)."""
        return "switches" if self.lab_name is None else f"lab-{self.lab_name}"

    def hops(self, address: str | None) -> tuple[Hop, ...]:
        """The jump hosts a login to `address` goes through, first first (none for a direct login)."""
        return self.jump.hops(address) if self.jump is not None and address else ()


def lab_access(state_dir: Path, intent: Intent) -> Access | None:
    state = LabState.load(state_dir)
    login = load_login(state_dir)
    if state is None or login is None or state.fabric != intent.fabric.name:
        return None
    # Password login, as with the intent's credentials; the key is there for people (`ssh -i`).
    # `lab up` recorded every switch's host key: anything else answering is refused, as on a real network.
    args: dict[str, Any] = {"known_hosts": str(state_dir / "known_hosts")}
    # The secrets `lab up` made (salt key, SNMP community) unless the environment sets them: the lab
    # works with nothing exported. In the lab the admin's password is the switch password the
    # rendered configs hash.
    secrets = {**load_secrets(state_dir), **os.environ}
    ref = intent.credentials.switches.password
    if ref is not None and ref.env:
        secrets[ref.env] = login.password
    return Access(True, login.username, login.password, args, secrets, lab_name=state.name)


def env_access(
    intent: Intent,
    known_hosts: Path | None = None,
    accept_new: bool = False,
    vault: dict[str, str] | None = None,
    *,
    ca_file: Path | None = None,
    tls_known_hosts: Path | None = None,
) -> Access:
    cred = intent.credentials.switches
    if cred.password is None and cred.ssh_key is None:
        raise MissingLoginError(
            "the intent names no switch login secret (credentials.switches.password or ssh_key: {env: NAME}); "
            "or target a lab with --lab"
        )
    secrets = {**os.environ, **(vault or {})}
    hosts = known_hosts or Path.home() / ".ssh" / "known_hosts"
    check_known_hosts(hosts)  # a FIFO, a device or a huge file there: exit 2 now, not a hung login per switch
    args: dict[str, Any] = {"known_hosts": str(hosts), "accept_new": accept_new}
    # HTTPS APIs (EOS eAPI, NX-API): a CA bundle, else certificate fingerprints recorded beside known_hosts.
    args["tls_known_hosts"] = str(tls_known_hosts or hosts.with_name(TLS_KNOWN_HOSTS))
    if ca_file is not None:
        args["tls_ca_file"] = str(ca_file)
    password = _secret(secrets, cred.password, "credentials.switches.password") if cred.password else ""
    if cred.ssh_key is not None:
        # The key's text, in memory only: it is never written to a file for paramiko to read.
        args["private_key"] = Hidden(_secret(secrets, cred.ssh_key, "credentials.switches.ssh_key"))
    return Access(False, cred.username, password, args, secrets)


def _secret(secrets: dict[str, str], ref: SecretRef, field: str) -> str:
    key = ref.env or f"vault:{ref.vault}"
    if key not in secrets:
        raise SecretUnavailableError(ref, field)
    return secrets[key]


class RevealingNapalm(Napalm):
    """nornir_napalm's connection, given the password itself only at the moment it logs in, and opening
    gpufabric's own EOS and NX-OS drivers (verified TLS, switch-side revert) where NAPALM would open its own."""

    def open(  # noqa: PLR0917 (nornir's connection-plugin signature)
        self,
        hostname: str | None,
        username: str | None,
        password: Any,
        port: int | None,
        platform: str | None,
        extras: dict[str, Any] | None = None,
        configuration: Any = None,
    ) -> None:
        parameters: dict[str, Any] = {"hostname": hostname, "username": username, "optional_args": {}}
        parameters.update(extras or {})
        parameters["password"] = reveal(password)
        if port and "port" not in parameters["optional_args"]:
            parameters["optional_args"]["port"] = port
        connection = network_driver(str(platform))(**parameters)
        log.info("connect %s as %s (%s)", hostname, username, platform)  # never the password or the key
        connection.open()
        log.debug("connected %s", hostname)
        self.connection = connection


def driver_name(access: Access, platform_name: str) -> str:
    """The NAPALM driver a switch of `platform_name` is opened with: every lab switch runs FRR, whatever
    the plan says it is; a real one, its platform's driver."""
    return LAB_DRIVER if access.lab else platform(platform_name).facts.napalm_driver


NO_CONFIG = Path("none")


def jump_settings(
    known_hosts: Path | None, jump_host: str | None, ssh_config: Path | None, *, lab: bool
) -> JumpSettings | None:
    """The jump hosts asked for: `jump_host`, else the ProxyJump lines of `ssh_config` (for the real
    switches ~/.ssh/config when there is one, as ssh reads it, unless `none` is named; a lab only from a
    config named). Their
    host keys: each one's UserKnownHostsFile there, else `known_hosts` (default ~/.ssh/known_hosts)."""
    default_config = Path.home() / ".ssh" / "config"
    if ssh_config == NO_CONFIG:  # `--ssh-config none`, as `ssh -F none`: no config at all, not even ~/.ssh/config
        ssh_config = None
    elif ssh_config is None and not lab and default_config.is_file():
        ssh_config = default_config
    settings = JumpSettings.make(known_hosts or Path.home() / ".ssh" / "known_hosts", jump_host, ssh_config)
    return settings if settings.active else None


def check_jump(access: Access, addresses: list[str | None], timeout: float) -> None:
    """Log in to every jump host in front of these addresses once, before any switch: a jump host whose
    key is unknown or changed refuses the whole command (JumpHostRefusedError), not each switch."""
    chains = {hops for hops in (access.hops(a) for a in addresses) if hops}
    if chains:
        check_jump_hosts(chains, timeout)


def apply(inventory: Inventory, access: Access, timeout: int = CONNECT_TIMEOUT) -> None:
    """Put the login and driver options on every host (in memory; host data never holds them)."""
    hidden = Hidden(access.password)
    for host in inventory.hosts.values():
        host.username = access.username
        host.password = hidden  # type: ignore[assignment]
        if access.lab:
            host.platform = LAB_DRIVER
        optional_args = dict(access.optional_args)
        hops = access.hops(host.hostname)
        if hops:
            optional_args["jump"] = hops
        host.connection_options["napalm"] = ConnectionOptions(
            extras={"timeout": timeout, "optional_args": optional_args}
        )
