"""The push id a vendor driver marks its switch-side state with (EOS config sessions, NX-OS bootflash
files): `gf-YYYYmmddTHHMMSSZ-<6 hex>`, given by the push (`optional_args["push_id"]`) or made here."""

from __future__ import annotations

import re
import secrets
import socket
from datetime import UTC, datetime
from typing import Any

PUSH_ID = re.compile(r"gf-(\d{8}T\d{6}Z)-([0-9a-f]{6})")
# Switch-side state of a push older than this (seconds) is stale: the longest --confirm-timeout; no running
# push holds an untimed session or checkpoint longer.
STALE_AFTER = 3600
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")  # what a controller's name may carry into a file on a switch


STAMP = "%Y%m%dT%H%M%SZ"


def new_push_id(now: datetime | None = None) -> str:
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime(STAMP)
    return f"gf-{stamp}-{secrets.token_hex(3)}"


def push_id_of(optional_args: dict[str, Any]) -> str:
    given = optional_args.get("push_id")
    if given is None:
        return new_push_id()
    if not PUSH_ID.fullmatch(str(given)):
        raise ValueError(f"push_id {given!r} is not of the form gf-YYYYmmddTHHMMSSZ-<6 hex>")
    return str(given)


def started_at(push_id: str) -> datetime | None:
    """When the push began (read from its id); None when it carries no gpufabric push id."""
    found = PUSH_ID.search(push_id)
    return None if found is None else datetime.strptime(found.group(1), STAMP).replace(tzinfo=UTC)


def iso(moment: datetime) -> str:
    """ISO 8601 in UTC to the second, `Z`-suffixed: the one form a push's start is shown and recorded in."""
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def started(push_id: str) -> str:
    """When the push began, as ISO 8601 UTC (read from its id); empty when it carries none."""
    moment = started_at(push_id)
    return "" if moment is None else iso(moment)


def age_seconds(push_id: str, now: datetime | None = None) -> float | None:
    moment = started_at(push_id)
    return None if moment is None else ((now or datetime.now(UTC)) - moment).total_seconds()


def safe_controller(name: str) -> str:
    """A controller's name reduced to what can be written into a marker on a switch unquoted."""
    return _UNSAFE.sub("_", name)[:64] or "unknown"


def controller_name(optional_args: dict[str, Any]) -> str:
    """The controller the push names (`push_controller`, as the push gives it), else this machine."""
    given = optional_args.get("push_controller") or optional_args.get("controller")
    return safe_controller(str(given or socket.gethostname()))
