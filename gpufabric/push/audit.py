"""The audit trail: one JSON line per switch a push touched, appended to a file the push keeps open.

Each record says who (the switch login and the local account), from where (the controller), when
(UTC), what (fabric, switch, platform, plane, push id, the SHA-256 of the masked diff) and how it
ended (status, reason). Never a diff, never a secret: diffs are masked before anything sees them and
only their digest is kept; reasons are masked as the report's are.

The file is opened before the push reads anything: a push that cannot write its trail fails before
it changes a switch. It is opened with O_APPEND and each record is one write(2), so the records of
pushes running at once never interleave within a line. Made 0600 in a folder made 0700, as the push
lock is: the folder must belong to the account and be writable by no one else, and the file is opened
without following a link, so a link planted in its place (to another file, or dangling) is refused,
never appended through or created.

`gpufabric audit` reads it back the one way outside input is read (gpufabric.inputs): a regular file
only, one bounded line at a time, within a bound in total.
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gpufabric.fleet.errors import PushRefusedError
from gpufabric.fleet.status import Status
from gpufabric.inputs import MiB, read_lines
from gpufabric.outputs import json_dumps
from gpufabric.push.lock import open_owned, owned_dir

log = logging.getLogger(__name__)

ENV = "GPUFABRIC_AUDIT_LOG"
SYSTEM_PATH = Path("/var/log/gpufabric/audit.jsonl")  # root's pushes
USER_PATH = ".local/state/gpufabric/audit.jsonl"  # under a non-root user's home directory
# A record is about 600 bytes (a long failure reason, a few KiB); a trail of a million records, a few
# hundred MiB: beyond either bound the file is not a trail (or wants rotating), and is not read on.
MAX_RECORD = 64 * 1024
MAX_TRAIL = 1024 * MiB
BATCH = "batch"  # the status of a batch's own record (its switches, and its cost under a capacity budget)


class AuditError(PushRefusedError):
    """The audit trail cannot be written: the push does not start."""


def default_path(uid: int | None = None) -> Path:
    """Where the trail is kept unless --audit-log or GPUFABRIC_AUDIT_LOG says: like the push lock, from
    the password database rather than $HOME, so a cron job and a shell of one account share it."""
    uid = os.geteuid() if uid is None else uid
    if uid == 0:
        return SYSTEM_PATH
    return Path(pwd.getpwuid(uid).pw_dir) / USER_PATH


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Who:
    login_user: str  # the account the push logs into the switches as
    os_user: str  # the local account running the push (from the password database, not $USER)
    sudo_user: str | None  # who ran it through sudo, as sudo says (SUDO_USER)
    controller: str  # this machine

    @classmethod
    def now(cls, login_user: str, controller: str) -> Who:
        uid = os.getuid()
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:  # a uid with no entry (a container): its number
            name = str(uid)
        return cls(login_user, name, os.environ.get("SUDO_USER") or None, controller)


class AuditLog:
    """The trail's file, open for appending for as long as the push runs."""

    def __init__(self, path: Path, uid: int | None = None) -> None:
        """`uid`: the account the file and its folder must belong to (this process's, unless a test
        says)."""
        self.path = path
        self._fd = _open(path, os.geteuid() if uid is None else uid)

    def append(self, record: dict[str, Any]) -> None:
        line = (json_dumps(record, sort_keys=False, separators=(",", ":")) + "\n").encode()
        try:
            written = os.write(self._fd, line)  # one write per record: O_APPEND keeps it whole
        except OSError as exc:
            raise AuditError(f"cannot write the audit log {self.path}: {exc.strerror}") from None
        if written != len(line):
            raise AuditError(f"cannot write the audit log {self.path}: short write ({written} of {len(line)} bytes)")

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _open(path: Path, uid: int) -> int:
    hint = f"choose another file with --audit-log or {ENV}"
    try:
        owned_dir(path.parent, uid, "its folder", AuditError)
        fd = open_owned(path, uid, os.O_WRONLY | os.O_APPEND, "the file", AuditError)
    except AuditError as exc:
        raise AuditError(f"cannot open the audit log {path}: {exc}; {hint}") from None
    mode = os.fstat(fd).st_mode
    if mode & 0o022:
        os.close(fd)
        raise AuditError(
            f"the audit log {path} may be written by others (mode {stat.S_IMODE(mode):04o}): "
            f"chmod 600 {path}, or {hint}"
        )
    log.debug("audit log %s open", path)
    return fd


@dataclass(frozen=True)
class SwitchFacts:
    """What the trail says of a switch besides its outcome."""

    platform: str
    plane: str


@dataclass
class Trail:
    """One push's records: each switch's once, as soon as its fate is known."""

    log: AuditLog
    push_id: str
    started: str
    fabric: str
    who: Who
    dry_run: bool
    target: str  # "lab" or "switches"
    switches: dict[str, SwitchFacts]
    written: set[str] = field(default_factory=set)
    error: AuditError | None = None  # the first record that could not be written

    def record(self, device: str, status: Status | str, reason: str = "", *, digest: str | None = None,
               batch: int = 0) -> None:  # fmt: skip
        if device in self.written:
            return
        facts = self.switches.get(device, SwitchFacts("", ""))
        entry = {
            "time": utc_now(),
            "push_id": self.push_id,
            "push_started": self.started,
            "fabric": self.fabric,
            "switch": device,
            "platform": facts.platform,
            "plane": facts.plane,
            "batch": batch,
            "status": str(status),
            "reason": reason,
            "diff_sha256": digest,
            **self._who(),
        }
        if not self._append(entry):
            return
        self.written.add(device)
        log.debug("audit: %s %s %s", device, status, digest)

    def batch(self, number: int, domains: str, devices: Iterable[str], cost: dict[str, object], *,
              budget: float | None) -> None:  # fmt: skip
        """A batch about to be confirmed or rolled back: its switches, and what having them all out of
        service at once costs the fabric (the capacity budget's figures, gpufabric.push.budget), for
        gpufabric.push.proof to check independently. Its `switch` is empty, its `status` "batch"."""
        entry = {
            "time": utc_now(),
            "push_id": self.push_id,
            "push_started": self.started,
            "fabric": self.fabric,
            "switch": "",
            "status": BATCH,
            "batch": number,
            "domains": domains,
            "switches": sorted(devices),
            "max_capacity_loss": budget,
            **cost,
            **self._who(),
        }
        self._append(entry)

    def event(self, subject: str, status: str, reason: str = "", **extra: object) -> None:
        """A step around the switches' change, recorded whatever the switch's own record says: a drain and
        its wait, an undrain, the servers behind taken out of a scheduler or put back (`subject` the switch,
        or the batch's switches joined by commas; `extra` what the step measured)."""
        entry = {
            "time": utc_now(),
            "push_id": self.push_id,
            "push_started": self.started,
            "fabric": self.fabric,
            "switch": subject,
            "status": status,
            "reason": reason,
            **extra,
            **self._who(),
        }
        self._append(entry)

    def _who(self) -> dict[str, object]:
        """Who pushed, from where, and whether for real: the same on every record of the push."""
        return {
            "dry_run": self.dry_run,
            "target": self.target,
            "login_user": self.who.login_user,
            "os_user": self.who.os_user,
            "sudo_user": self.who.sudo_user,
            "controller": self.who.controller,
        }

    def _append(self, entry: dict[str, object]) -> bool:
        """Write one record; False when it could not be. Mid-push a switch must still be confirmed or rolled
        back: the push goes on and fails at the end with the first error kept."""
        try:
            self.log.append(entry)
        except AuditError as exc:
            log.info("%s", exc)
            self.error = self.error or exc
            return False
        return True

    def refused(self, devices: Iterable[str], reason: str) -> None:
        for device in devices:
            self.record(device, Status.REFUSED, reason)


def read(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """(line number, record) for each line; None for a line that is not a JSON object (a torn write
    by a process killed mid-record, a hand edit): the reader says so and goes on. A file that is no
    trail (not a regular file, a line longer than any record, bytes that are not UTF-8, more than
    MAX_TRAIL) raises InputError at its line."""
    what = "the audit trail (one JSON record a line)"
    for number, line in read_lines(path, what=what, max_line=MAX_RECORD, max_bytes=MAX_TRAIL):
        if not line.strip():
            continue
        try:
            value = json.loads(line, parse_constant=_no_constant)
        except ValueError:
            yield number, None
            continue
        yield number, value if isinstance(value, dict) else None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def parse_time(text: str) -> datetime:
    """An ISO 8601 time; one without a zone is UTC. Raises ValueError."""
    when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def matches(
    record: dict[str, Any], *, push_id: str | None = None, devices: tuple[str, ...] = (), since: datetime | None = None
) -> bool:
    if push_id is not None and record.get("push_id") != push_id:
        return False
    if devices and record.get("switch") not in devices:
        return False
    if since is not None:
        try:
            return parse_time(str(record.get("time", ""))) >= since
        except ValueError:
            return False
    return True
