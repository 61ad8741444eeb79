"""How push and validate log in: the lab's own login when a lab of this fabric is up, else the intent's
credentials (password from the environment variable the intent names). Never printed."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from nornir.core.inventory import ConnectionOptions, Inventory
from nornir_napalm.plugins.connections import Napalm

from gpufabric.config.secrets import SecretUnavailableError
from gpufabric.intent.model import Intent
from gpufabric.lab.credentials import load_login
from gpufabric.lab.state import LabState

CONNECT_TIMEOUT = 10  # seconds; an unreachable switch fails fast instead of holding its batch for a minute


@dataclass(frozen=True)
class Access:
    lab: bool
    username: str
    password: str = field(repr=False)
    optional_args: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict, repr=False)  # what rendering may need, by reference name


def lab_access(state_dir: Path, intent: Intent) -> Access | None:
    state = LabState.load(state_dir)
    login = load_login(state_dir)
    if state is None or login is None or state.fabric != intent.fabric.name:
        return None
    # Password login, as with the intent's credentials; the key is there for people (`ssh -i`).
    # `lab up` recorded every switch's host key: anything else answering is refused, as on a real network.
    args: dict[str, Any] = {"known_hosts": str(state_dir / "known_hosts")}
    # In the lab the admin's password is the switch password the rendered configs hash.
    secrets = dict(os.environ)
    ref = intent.credentials.switches.password
    if ref is not None and ref.env:
        secrets[ref.env] = login.password
    return Access(True, login.username, login.password, args, secrets)


def env_access(
    intent: Intent,
    known_hosts: Path | None = None,
    accept_new: bool = False,
    vault: dict[str, str] | None = None,
) -> Access:
    cred = intent.credentials.switches
    if cred.password is None:
        raise click.UsageError(
            "the intent names no switch password (credentials.switches.password: {env: NAME}); "
            "or target a lab with `gpufabric lab up`"
        )
    secrets = {**os.environ, **(vault or {})}
    key = cred.password.env or f"vault:{cred.password.vault}"
    if key not in secrets:
        raise SecretUnavailableError(cred.password, "credentials.switches.password")
    hosts = known_hosts or Path.home() / ".ssh" / "known_hosts"
    args = {"known_hosts": str(hosts), "accept_new": accept_new}
    return Access(False, cred.username, secrets[key], args, secrets)


class Hidden:
    """A password on a Nornir host: what `inventory.dict()`, a repr, a log line or a JSON dump of the
    inventory shows is stars; only the connection plugin (RevealingNapalm) hands the text to a driver."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'********'"

    __str__ = __repr__


class RevealingNapalm(Napalm):
    """nornir_napalm's connection, given the password itself only at the moment it logs in."""

    def open(self, hostname: Any, username: Any, password: Any, *args: Any, **kwargs: Any) -> None:
        super().open(
            hostname, username, password.reveal() if isinstance(password, Hidden) else password, *args, **kwargs
        )


def apply(inventory: Inventory, access: Access, timeout: int = CONNECT_TIMEOUT) -> None:
    """Put the login and driver options on every host (in memory; host data never holds them)."""
    hidden = Hidden(access.password)
    for host in inventory.hosts.values():
        host.username = access.username
        host.password = hidden  # type: ignore[assignment]
        if access.lab:
            host.platform = "frr"  # every lab switch runs FRR, whatever the plan says it is
        host.connection_options["napalm"] = ConnectionOptions(
            extras={"timeout": timeout, "optional_args": dict(access.optional_args)}
        )
