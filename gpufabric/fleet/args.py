"""Which switches a command works on, and how to reach them: the options push, validate, telemetry and
acceptance share. Light on purpose: a command's options load without NAPALM or Nornir.

Whether the target is the lab is decided here, and only here (`wants_lab`, `lab_dir`): `--lab`, or
naming a lab's state folder, asks for the lab; nothing else does (a lab that happens to be up never
decides where a change goes)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpufabric.fleet.lab.state import DEFAULT_DIR

CONNECT_TIMEOUT = 10  # seconds; an unreachable switch fails fast instead of holding its batch for a minute


@dataclass(frozen=True)
class FleetArgs:
    """Which switches, and how to reach them: what `push` and `validate` share on the command line."""

    file: str | None = None
    plane: str | None = None
    devices: tuple[str, ...] = ()
    role: str | None = None
    lab: bool = False  # the lab only when asked for
    state_dir: Path | None = None  # naming a lab's state dir asks for that lab
    lab_name: str | None = None  # naming a lab (`lab up --name`) asks for that lab
    timeout: int = CONNECT_TIMEOUT
    known_hosts: Path | None = None  # real switches: their SSH host keys (default ~/.ssh/known_hosts)
    accept_new: bool = False  # record a first-seen host key (or TLS certificate) instead of refusing it
    ca_file: Path | None = None  # CA bundle the switches' HTTPS API certificates are checked against
    tls_known_hosts: Path | None = (
        None  # else their recorded fingerprints (default: known_tls_hosts beside known_hosts)
    )
    vault_file: Path | None = None  # an Ansible Vault file holding the intent's {vault: NAME} secrets
    vault_password_file: Path | None = None  # its password (else ANSIBLE_VAULT_PASSWORD_FILE)
    jump_host: str | None = None  # `[user@]host[:port]` (or a chain `a,b`) every login goes through
    ssh_config: Path | None = None  # an SSH client config whose ProxyJump leads to the switches (real: ~/.ssh/config)

    @property
    def wants_lab(self) -> bool:
        """The lab was asked for: `--lab`, or a lab's state folder named."""
        return self.lab or self.state_dir is not None or self.lab_name is not None

    @property
    def lab_dir(self) -> Path:
        """The state folder of the lab asked for (or that would be: the default one)."""
        if self.lab_name is not None and self.state_dir is None:
            from gpufabric.fleet.lab.registry import resolve_state_dir  # only for a named lab

            return resolve_state_dir(self.lab_name, None)
        return self.state_dir or DEFAULT_DIR  # read when asked: tests stand a folder of their own in for it
