"""Who is pushing: one id per push, its start and the controller it runs on.

The id (`gf-YYYYmmddTHHMMSSZ-<6 hex>`: the UTC start and 24 random bits) goes to every driver as
`optional_args["push_id"]`, so what a push leaves on a switch while a change awaits confirmation
(FRR's pending marker, Cumulus's marker beside NVUE's confirm, an EOS config session's name)
names the push it belongs to. Another controller reads it back through the driver's
`pending_push()` and refuses to start, naming the push, its controller and its start.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nornir.core.inventory import ConnectionOptions, Inventory

from gpufabric.drivers import push_id as ids
from gpufabric.drivers.push_id import PUSH_ID, safe_controller

PATTERN = PUSH_ID  # the one form, shared with the vendor drivers that name switch-side state after it


@dataclass(frozen=True)
class PushId:
    id: str
    started: str  # ISO 8601, UTC, seconds
    controller: str

    def as_dict(self) -> dict[str, str]:
        return {"push_id": self.id, "started": self.started, "controller": self.controller}


def controller_name() -> str:
    """This machine's name, reduced to what can be written into a marker file on a switch unquoted."""
    return safe_controller(socket.gethostname())


def new_push_id(now: datetime | None = None, controller: str | None = None) -> PushId:
    ident = ids.new_push_id(now)
    return PushId(ident, ids.started(ident), controller or controller_name())


def started_from_id(push_id: str) -> str:
    """The start a push id carries, as ISO 8601 (empty when it is not a gpufabric push id)."""
    return ids.started(push_id) if PATTERN.fullmatch(push_id) else ""


def tag(inventory: Inventory, push: PushId) -> None:
    """Give every host's NAPALM driver the push's id and controller. Called after `access.apply`, which
    sets the connection options this adds to."""
    for host in inventory.hosts.values():
        options = host.connection_options.get("napalm") or ConnectionOptions(extras={})
        extras: dict[str, Any] = dict(options.extras or {})
        optional = dict(extras.get("optional_args") or {})
        optional.update(push_id=push.id, push_controller=push.controller)
        extras["optional_args"] = optional
        options.extras = extras
        host.connection_options["napalm"] = options


def started_of(pending: dict[str, Any]) -> str:
    """When a pending push started: as its marker says, else as its id says ("" when neither does)."""
    return str(pending.get("started") or started_from_id(str(pending.get("push_id") or "")))


def describe(pending: dict[str, Any]) -> str:
    """A pending push as a person reads it: `gf-... (controller ctl1, started 2026-...Z)`."""
    ident = str(pending.get("push_id") or "unknown")
    return f"{ident} (controller {pending.get('controller') or 'unknown'}, started {started_of(pending) or 'unknown'})"
