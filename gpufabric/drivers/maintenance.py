"""What every driver's drain shares: the record a drain leaves on its switch, and the answer of
`maintenance_status()`.

A drained switch keeps a marker of its own (where depends on the OS: FRR's config folder, the Cumulus
login's `.gpufabric/`, SONiC's /etc/sonic/, EOS's flash): one JSON object naming the push (or the
person's `maintenance on`) that drained it, when, by whom, why and by which mechanism. The vendor's
mechanism is the switch's own state; the marker says who asked for it, so `maintenance status` from a
new controller (the first one crashed) finds both. Only values that pass a pattern go into it: the
reason is one printable line, bounded, and travels base64-encoded (never on a command line).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from gpufabric.errors import GpufabricError
from gpufabric.outputs import json_dumps

MAX_REASON = 200
_BY = re.compile(r"[A-Za-z0-9._@:+-]{1,64}")


class DrainHeldError(GpufabricError):
    """An undrain asked for by another push (or person) than the one holding the drain: left drained."""


class DrainRefusedError(GpufabricError):
    """The switch cannot be drained or undrained now (a commit awaiting confirmation, a lock held)."""


def check_reason(reason: str) -> str:
    """A reason as a marker may carry it: one printable line of at most MAX_REASON characters."""
    if not reason.isprintable() or len(reason) > MAX_REASON:
        raise ValueError(f"a drain reason is one printable line of at most {MAX_REASON} characters")
    return reason


def check_by(by: str) -> str:
    if not _BY.fullmatch(by):
        raise ValueError(f"{by[:40]!r} cannot name who drained a switch (letters, digits and ._@:+- only)")
    return by


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class DrainMark:
    """Who drained a switch, as its marker says."""

    push_id: str
    since: str  # ISO 8601, UTC
    by: str  # the push id, or the person (`os_user@controller`) who ran `maintenance on`
    reason: str
    mechanism: str

    @classmethod
    def new(cls, push_id: str, reason: str, mechanism: str, by: str | None = None) -> DrainMark:
        return cls(check_by(push_id), utc_now(), check_by(by or push_id), check_reason(reason), mechanism)

    def text(self) -> str:
        return json_dumps(asdict(self), sort_keys=True) + "\n"

    @classmethod
    def parse(cls, text: str) -> DrainMark | None:
        """The marker's record; None for no marker (empty text). One that cannot be read (a hand edit,
        a torn write) still says the switch was drained, by `unknown`."""
        if not text.strip():
            return None
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            return cls("unknown", "", "unknown", "unreadable drain marker", "unknown")
        field = {k: str(value.get(k) or "") for k in ("push_id", "since", "by", "reason", "mechanism")}
        return cls(**field)


def status(mark: DrainMark | None, applied: bool | None, mechanism: str) -> dict[str, Any]:
    """`maintenance_status()`'s answer: drained (by the marker, else by the switch's own state), since, by
    (push id or person), mechanism, and whether the vendor's mechanism is in effect (`applied`; None:
    the driver cannot tell). A switch in maintenance with no marker was drained by hand: by `unknown`."""
    drained = mark is not None or bool(applied)
    return {
        "drained": drained,
        "since": mark.since if mark else None,
        "by": (mark.by if mark else "unknown") if drained else None,
        "push_id": mark.push_id if mark else None,
        "reason": mark.reason if mark else None,
        "mechanism": (mark.mechanism if mark else mechanism) if drained else None,
        "applied": applied,
    }


def change_script(steps: str, *, marker_new: str | None, marker: str, remove: bool, guard: str = "") -> str:
    """A drain or undrain on a Linux switch, as one shell script: `guard` (a lock, a pending-commit check),
    the new marker moved in place before the change (a session cut halfway still says drained), the
    vendor's commands `steps` (one a line, stopping at the first that fails), and with `remove` the marker
    removed after them. The commands are the platform's own text (Platform.drain_steps), never a caller's."""
    lines = ["set -e"]
    lines += [guard] if guard else []
    lines += [f"mv -f {marker_new} {marker}"] if marker_new else []
    lines += [line for line in steps.splitlines() if line.strip()]
    lines += [f"rm -f {marker}"] if remove else []
    return "\n".join(lines) + "\n"
