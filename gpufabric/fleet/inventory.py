"""Nornir inventory plugin: hosts and groups straight from the gpufabric plan.

    InitNornir(inventory={"plugin": "GpufabricInventory",
                          "options": {"intent": "inventory/fabric.yml"}})

Switches carry their NAPALM platform name; servers have platform `linux`. The
switch password is read from the environment variable the intent names, at load
time, and only into the connection settings: it is never part of host data.

EOS, NX-OS and SONiC hosts get a `napalm` connection whose platform is gpufabric's
driver's NAPALM name (`gpufabric_eos`, ...): nornir_napalm's `napalm_get` in a script
of the user's own then opens the driver that verifies the switch's certificate, where
the stock `eos`/`nxos` would open NAPALM's own, which sends the password to whoever
answers. The host's `platform` stays the OS's name, which tasks and groups match on.
"""

from __future__ import annotations

import os

from nornir.core.inventory import ConnectionOptions, Defaults, Group, Groups, Host, Hosts, Inventory, ParentGroups

from gpufabric.export.inventory import build
from gpufabric.intent import load_intent
from gpufabric.intent.model import Credential
from gpufabric.plan import Plan, build_plan
from gpufabric.platforms import platform

NAPALM = "napalm"  # nornir_napalm's connection name (its CONNECTION_NAME), which napalm_get and friends open


def _secret(cred: Credential) -> str | None:
    if cred.password is not None and cred.password.env:
        return os.environ.get(cred.password.env)
    return None


class GpufabricInventory:
    def __init__(self, intent: str | None = None) -> None:
        self.intent = intent

    def load(self) -> Inventory:
        return inventory_from_plan(build_plan(load_intent(self.intent, embedded=False)))  # switches: a real intent


def inventory_from_plan(plan: Plan) -> Inventory:
    """The inventory of a plan already built (the CLI plans once and hands the plan to Nornir)."""
    creds = plan.intent.credentials
    groups = Groups()
    hosts = Hosts()
    for entry in build(plan):
        for g in entry.groups:
            if g not in groups:
                groups[g] = Group(name=g)
        is_switch = entry.platform != "linux"
        cred = creds.switches if is_switch else creds.hosts
        facts = platform(entry.platform).facts if is_switch else None
        hosts[entry.name] = Host(
            name=entry.name,
            hostname=entry.hostname,
            username=cred.username,
            password=_secret(cred) if is_switch else None,
            platform=facts.napalm_driver if facts else "linux",
            groups=ParentGroups([groups[g] for g in entry.groups]),
            data=dict(entry.data),
            connection_options=_connections(facts.napalm_name if facts else None),
        )
    return Inventory(hosts=hosts, groups=groups, defaults=Defaults())


def _connections(napalm_name: str | None) -> dict[str, ConnectionOptions]:
    """The `napalm` connection opening gpufabric's driver by the name NAPALM finds it under, where the
    platform's NAPALM name is not that driver's."""
    return {NAPALM: ConnectionOptions(platform=napalm_name)} if napalm_name else {}
