"""Options shared by the commands that talk to switches (push, validate)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import click

from gpufabric.cli.errors import refusals
from gpufabric.cli.options import PLANE, SELECTION, file_arg, lab_name_callback
from gpufabric.fleet.args import FleetArgs
from gpufabric.fleet.lab.state import DEFAULT_DIR

FLEET_KEYS = tuple(f.name for f in fields(FleetArgs))
MANY_PLANES = click.option(
    "--plane",
    "planes",
    multiple=True,
    type=PLANE,
    help="Only this plane's switches (repeatable; compute-pN: one plane of a multi-plane compute plane).",
)


def fleet_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add the shared options (and --json); the command receives them as one `fleet_args: FleetArgs`."""
    return _with_options(fn, json_flag=True)


def fleet_options_planes(fn: Callable[..., Any]) -> Callable[..., Any]:
    """As fleet_options, with `--plane` repeatable: the command receives `planes` (a tuple) beside
    `fleet_args` (whose `plane` stays None)."""
    return _with_options(fn, json_flag=True, many_planes=True)


def login_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The selection and login options of push and validate, for commands with no JSON result of their
    own to print (`telemetry serve`): no --json flag that would do nothing."""
    return _with_options(fn, json_flag=False)


def _with_options(fn: Callable[..., Any], *, json_flag: bool, many_planes: bool = False) -> Callable[..., Any]:

    @functools.wraps(fn)
    def command(**kwargs: Any) -> Any:
        if many_planes:
            kwargs["plane"] = None
        # The commands that reach switches share the library's refusals (no lab up, no switch
        # selected, lock held, ...): each exits 2 with its message.
        with refusals():
            return fn(fleet_args=FleetArgs(**{key: kwargs.pop(key) for key in FLEET_KEYS}), **kwargs)

    for option in reversed(
        [
            file_arg,
            *(SELECTION if not many_planes else (MANY_PLANES, *SELECTION[1:])),
            click.option(
                "--lab",
                is_flag=True,
                help="Target the local lab (`gpufabric lab up`), never the real switches. Without it (or "
                "--state-dir) the target is the real switches, with the intent's credentials.",
            ),
            click.option(
                "--state-dir",
                type=click.Path(file_okay=False, path_type=Path),
                default=None,
                help=f"The lab's state dir (login, keys); naming it targets that lab. [default: {DEFAULT_DIR}]",
            ),
            click.option(
                "--lab-name",
                metavar="NAME",
                callback=lab_name_callback,
                help="Target the lab brought up with `gpufabric lab up --name NAME` (its state dir found from the "
                "name); naming it targets that lab.",
            ),
            click.option(
                "--timeout",
                type=click.IntRange(1, 300),
                default=10,
                show_default=True,
                help="Seconds to wait for a switch to accept the TCP connection before calling it unreachable; one "
                "that accepted gets at least 60 s (or this, when longer) for its key exchange and login.",
            ),
            click.option(
                "--known-hosts",
                type=click.Path(dir_okay=False, path_type=Path),
                help="SSH host keys of the real switches (and of jump hosts, also for the lab); a host whose key is "
                "missing or different is refused. [default: ~/.ssh/known_hosts]",
            ),
            click.option(
                "--accept-new",
                is_flag=True,
                help="Record the host key (and HTTPS certificate) of a switch seen for the first time in "
                "--known-hosts (and --tls-known-hosts); a changed key or certificate is still refused.",
            ),
            click.option(
                "--ca-file",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                help="CA bundle (PEM) the switches' HTTPS API certificates (EOS eAPI, NX-API) must chain to, their "
                "address or name included. Without it, the certificate fingerprints in --tls-known-hosts decide.",
            ),
            click.option(
                "--tls-known-hosts",
                type=click.Path(dir_okay=False, path_type=Path),
                help="SHA-256 fingerprints of the switches' HTTPS API certificates, one `HOST FINGERPRINT` line "
                "each; a switch whose certificate is missing or different is refused before any login is sent. "
                "[default: known_tls_hosts beside --known-hosts]",
            ),
            click.option(
                "--jump-host",
                metavar="[USER@]HOST[:PORT]",
                help="Reach every switch (and server) through this jump host, as ssh's ProxyJump (a chain: "
                "A,B). Its host key must be in its UserKnownHostsFile in the SSH config, else --known-hosts; "
                "it is never recorded on first sight.",
            ),
            click.option(
                "--ssh-config",
                type=click.Path(dir_okay=False, path_type=Path),
                help="SSH client config whose ProxyJump (matched on each management address) leads to the switches, "
                "and whose Host blocks describe the jump hosts; `none` reads no config. A config that would run a "
                "command (Match exec, ProxyCommand, LocalCommand, KnownHostsCommand) is refused, never run. "
                "[default: ~/.ssh/config for real switches; none for the lab]",
            ),
            click.option(
                "--vault-file",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                help="Ansible Vault file (a YAML mapping, encrypted with ansible-vault) holding the secrets the "
                "intent names as {vault: NAME}.",
            ),
            click.option(
                "--vault-password-file",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                help="File holding the vault's password. [default: $ANSIBLE_VAULT_PASSWORD_FILE]",
            ),
        ]
        + (
            [click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")]
            if json_flag
            else []
        )
    ):
        command = option(command)
    return command
