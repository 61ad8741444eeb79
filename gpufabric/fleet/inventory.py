"""Nornir inventory plugin: hosts and groups straight from the gpufabric plan.

    InitNornir(inventory={"plugin": "GpufabricInventory",
                          "options": {"intent": "inventory/fabric.yml"}})

Switches carry their NAPALM platform name; servers have platform `linux`. The
switch password is read from the environment variable the intent names, at load
time, and only into the connection settings: it is never part of host data.
"""

from __future__ import annotations

import os

from nornir.core.inventory import Defaults, Group, Groups, Host, Hosts, Inventory, ParentGroups

from gpufabric.export.inventory import build
from gpufabric.intent import load_intent
from gpufabric.intent.model import Credential
from gpufabric.plan import Plan, build_plan
from gpufabric.platforms import platform


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
        hosts[entry.name] = Host(
            name=entry.name,
            hostname=entry.hostname,
            username=cred.username,
            password=_secret(cred) if is_switch else None,
            platform=platform(entry.platform).facts.napalm_driver if is_switch else "linux",
            groups=ParentGroups([groups[g] for g in entry.groups]),
            data=dict(entry.data),
        )
    return Inventory(hosts=hosts, groups=groups, defaults=Defaults())
