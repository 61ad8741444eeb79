"""What touched a job's footprint while it ran, in time order (docs/jobs.md, "What happened around a job").

These sources, each read as outside input, each kept to the footprint (its switches and its nodes) and the
job's window:

- the push audit trail (gpufabric/push/audit.py): pushes, drains, restarts and upgrades of a footprint switch,
  or a scheduler step naming a footprint node;
- the remediation trail (gpufabric/remediate/loop.py): what the loop drained, resumed, kept or capped for a
  footprint node or part;
- Alertmanager's API v2 (`GET /api/v2/alerts`): the alerts naming a footprint switch (`device`), node
  (`host`, `node`, `peer`) or the job (`job_id`), through gpufabric/http_guard.py (bounded answer, no redirect
  off its origin, a whole deadline);
- Prometheus's range queries (gpufabric/jobs/counters.py): a footprint port's counter (errors, discards, PFC
  pauses, ECN marks, link flaps, PFC watchdog) rising by more than a threshold within a step;
- the switches' logs: FRR's own lines, as its source writes them (below), in a syslog file or folder, or the
  lab's per-switch logs (gpufabric/lab/syslog.py: `nodes/<switch>/frr.log`).

FRR's lines (FRR's source, every release from 3.0 to 10.x):

- bgpd/bgp_fsm.c, `bgp log-neighbor-changes` (on under `frr defaults datacenter`): `%ADJCHANGE: neighbor
  %pBP in vrf %s Up` and `... Down %s` (the reason, from peer_down_str); %pBP is `host(hostname)`
  (bgpd/bgpd.c printfrr_bp; before 9.0 the same text as `%s(%s)`, peer->host and its hostname or
  "Unknown"). The host is the neighbor's interface (unnumbered BGP: the port) or its address.
- zebra/if_netlink.c: `Intf %s(%u) has come UP` and `Intf %s(%u) has gone DOWN` (interface, ifindex), logged
  only with `debug zebra kernel`: without it FRR logs no link change at all.
- lib/zlog.c: the message may start with `[XXXXX-XXXXX]` (the message's unique id) and `[EC n]`; a log file
  (`log file`, lib/zlog_targets.c zlog_fd) prefixes `YYYY/MM/DD HH:MM:SS[.frac] BGP: ` in the switch's local
  time, syslog `bgpd[pid]: `.

A line that names one of those messages and does not read as its format, or whose time cannot be placed (no
zone and no --log-zone, no year), is listed as unread with its source and why: nothing is guessed from it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gpufabric.errors import GpufabricError, printable
from gpufabric.inputs import open_input
from gpufabric.jobs.footprint import Footprint
from gpufabric.push import audit

KINDS = ("push", "drain", "restart", "upgrade", "remediation", "alert", "bgp", "link", "counter")
MAX_LINE = 64 * 1024  # bytes of one log line read; a longer one is unread
MAX_LOG = 1024 * 1024 * 1024  # bytes of one log file
MAX_FILES = 10_000  # files of a log folder
MAX_SHOWN = 200  # characters of an unread line kept in the report
MAX_UNREAD = 1_000  # unread lines listed (the rest counted)
MAX_ALERT_BYTES = 16 * 1024 * 1024  # Alertmanager's answer
MAX_ALERTS = 50_000
ALERT_TIMEOUT = 10.0
ALERT_DEADLINE = 30.0
BASE_URL = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+(:[0-9]{1,5})?/?")
DRAIN = frozenset({"drained", "undrained", "held", "failed-undrain", "traffic-left", "traffic-stayed"})
UNTOUCHED = frozenset({"unchanged", "would change", "skipped", "refused"})  # a push that changed nothing there
REMEDIATION = frozenset({"drain", "resume", "held", "kept", "capped", "failed"})
NODE_LABELS = ("host", "node", "peer", "instance_host")


class TimelineError(GpufabricError):
    """A source that cannot be read at all (an Alertmanager answer that is no alert list, a file that is no
    log): exit 2, naming it and what would be right."""


@dataclass(frozen=True, slots=True)
class Event:
    time: datetime
    kind: str
    device: str | None
    port: str | None
    node: str | None
    summary: str
    source: str

    def as_dict(self) -> dict[str, object]:
        return {
            "time": iso(self.time),
            "kind": self.kind,
            "device": self.device,
            "port": self.port,
            "node": self.node,
            "summary": self.summary,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class Unread:
    source: str
    line: str
    why: str

    def as_dict(self) -> dict[str, object]:
        return {"source": self.source, "line": self.line, "why": self.why}


@dataclass(frozen=True)
class Window:
    since: datetime
    until: datetime | None  # None: the job still runs (read up to now)

    def holds(self, when: datetime) -> bool:
        return when >= self.since and (self.until is None or when <= self.until)


@dataclass(frozen=True)
class Scope:
    """What the job's footprint is made of, as the sources name it."""

    job: str | None
    nodes: frozenset[str]
    devices: frozenset[str]  # its leaves, the spines and superspines its paths cross, the storage leaves
    plan_devices: frozenset[str]  # every switch of the plan (a log's or a file's name is one of them, or not ours)


def scope_of(found: Footprint, plan_devices: Iterable[str]) -> Scope:
    devices = {nic.leaf for nic in found.nics}
    for c in (*found.planes, *found.storage):
        devices.update(c.leaves, c.toward, c.spines, c.superspines)
    return Scope(found.job, frozenset(found.nodes), frozenset(devices), frozenset(plan_devices))


@dataclass
class Timeline:
    job: str | None
    nodes: tuple[str, ...]
    window: Window
    events: list[Event] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)
    unread_more: int = 0  # unread lines past MAX_UNREAD, counted only
    notes: list[str] = field(default_factory=list)  # said on stderr, not in the JSON

    def add_unread(self, item: Unread) -> None:
        if len(self.unread) < MAX_UNREAD:
            self.unread.append(item)
        else:
            self.unread_more += 1

    def as_dict(self) -> dict[str, object]:
        return {
            "job": self.job,
            "nodes": list(self.nodes),
            "since": iso(self.window.since),
            "until": None if self.window.until is None else iso(self.window.until),
            "events": [e.as_dict() for e in self.events],
            "unread": [u.as_dict() for u in self.unread],
        }


def iso(when: datetime) -> str:
    """UTC, ISO 8601, to the millisecond: `2026-11-27T10:04:05.123Z`."""
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    """An ISO 8601 / RFC 3339 time with its zone (Z or an offset). Raises ValueError for one without a zone:
    a time whose zone is not said is not placed."""
    when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    if when.tzinfo is None:
        raise ValueError(f"{text!r} names no zone")
    return when.astimezone(UTC)


def _cut(line: str) -> str:
    return printable(line[:MAX_SHOWN]) + ("..." if len(line) > MAX_SHOWN else "")


# -- the push audit trail --------------------------------------------------------------------------------


def audit_kind(status: str) -> str | None:
    """The event kind of an audit record's status, None for one that touched nothing (a batch's own record,
    a push that changed nothing there)."""
    if status == audit.BATCH:
        return None
    if status.startswith("scheduler-") or status in DRAIN:
        return "drain"
    head, _, word = status.partition(" ")
    if head in ("restart", "upgrade"):
        return None if word in UNTOUCHED else head
    return None if status in UNTOUCHED else "push"


def audit_events(path: Path, scope: Scope, window: Window, tl: Timeline) -> None:
    """The trail's records of the window that touch the footprint: a switch of it (`switch`, or a batch's
    switches joined by commas) or a node of it (a scheduler step's `nodes`). Dry runs changed nothing."""
    for number, record in audit.read(path):
        where = f"{path}:{number}"
        if record is None:
            tl.add_unread(Unread(where, "", "not a JSON record (a torn write?)"))
            continue
        status, switch = record.get("status"), record.get("switch")
        if not isinstance(status, str) or not isinstance(switch, str) or record.get("dry_run") is True:
            if not isinstance(status, str) or not isinstance(switch, str):
                tl.add_unread(Unread(where, _cut(str(record)), "no text 'status' or 'switch'"))
            continue
        kind = audit_kind(status)
        if kind is None:
            continue
        switches = [s for s in switch.split(",") if s in scope.devices]
        held = _held(record, scope)
        if not switches and not held:
            continue
        when = _record_time(record, where, window, tl)
        if when is None:
            continue
        who = f"{record.get('os_user') or '?'}@{record.get('controller') or '?'}"
        reason = record.get("reason")
        said = f": {reason}" if isinstance(reason, str) and reason else ""
        push = record.get("push_id")
        summary = f"{status} {switch or ', '.join(held)} by {who} ({push}){said}"
        tl.events.append(
            Event(
                when,
                kind,
                switches[0] if len(switches) == 1 else None,
                None,
                held[0] if len(held) == 1 else None,
                printable(summary[:300]),
                where,
            )
        )


def _held(record: dict[str, Any], scope: Scope) -> list[str]:
    """The footprint's nodes a trail record names (its `nodes` list; anything else there is ignored)."""
    nodes = record.get("nodes")
    return [n for n in nodes if isinstance(n, str) and n in scope.nodes] if isinstance(nodes, list) else []


def _record_time(record: dict[str, Any], where: str, window: Window, tl: Timeline) -> datetime | None:
    """A trail record's time when it falls in the window; None when it does not, or cannot be read (unread)."""
    try:
        when = parse_time(str(record.get("time", "")))
    except ValueError:
        tl.add_unread(Unread(where, _cut(str(record.get("time"))), "'time' is not an ISO 8601 time with its zone"))
        return None
    return when if window.holds(when) else None


# -- the remediation trail -------------------------------------------------------------------------------


def remediation_events(path: Path, scope: Scope, window: Window, tl: Timeline) -> None:
    """What the remediation loop did (not its intents: each is followed by its outcome) for a footprint node,
    or for a part on a footprint switch (`part` is `device:port`)."""
    for number, record in audit.read(path):  # the same JSON-lines layout, read with the same bounds
        where = f"{path}:{number}"
        if record is None:
            tl.add_unread(Unread(where, "", "not a JSON record (a torn write?)"))
            continue
        action = record.get("action")
        if action not in REMEDIATION:
            continue
        part = record.get("part") if isinstance(record.get("part"), str) else ""
        device, _, port = str(part).partition(":")
        held = _held(record, scope)
        if device not in scope.devices and device not in scope.nodes and not held:
            continue
        when = _record_time(record, where, window, tl)
        if when is None:
            continue
        alert = record.get("alert") if isinstance(record.get("alert"), dict) else {}
        name = alert.get("name") if isinstance(alert, dict) else None
        dry = " (dry run)" if record.get("dry_run") is True else ""
        detail = record.get("detail") if isinstance(record.get("detail"), str) else ""
        nodes = record.get("nodes")
        every = nodes if isinstance(nodes, list) else []
        summary = f"{action}{dry} {', '.join(map(str, every))} for {name or '?'} {part}: {detail}".strip(": ")
        node = held[0] if len(held) == 1 else (device if device in scope.nodes else None)
        tl.events.append(
            Event(
                when,
                "remediation",
                device if device in scope.devices else None,
                (port or None) if device in scope.devices else None,
                node,
                printable(summary[:300]),
                where,
            )
        )


# -- Alertmanager ----------------------------------------------------------------------------------------

Fetch = Callable[[str], Any]  # URL -> the answer's JSON (gpufabric.http_guard.call by default)


def fetch_json(url: str) -> Any:
    """GET `url` within the bounds above: no redirect off its origin, the whole answer in ALERT_DEADLINE."""
    import time

    from gpufabric import http_api, http_guard

    request = http_api.Request("GET", url, {"Accept": "application/json"})
    bounds = http_guard.Bounds(ALERT_TIMEOUT, time.monotonic() + ALERT_DEADLINE, MAX_ALERT_BYTES)
    reply = http_guard.call(request, bounds)
    if reply.status != 200:
        raise TimelineError(
            f"Alertmanager at {url}: answered HTTP {reply.status}: {http_api.shown(reply.body, ())}; "
            "give its base URL (http://127.0.0.1:9093)"
        )
    return http_api.json_body(reply, request)


def _text_field(obj: dict[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or len(value) > 4096:
        raise TimelineError(f"{where}: field {key!r} is not text (Alertmanager's API v2 gettableAlert)")
    return value


def _alert_time(obj: dict[str, Any], key: str, where: str, *, required: bool = True) -> datetime | None:
    text = _text_field(obj, key, where, required=required)
    if text is None:
        return None
    try:
        return parse_time(text)
    except ValueError:
        raise TimelineError(f"{where}: field {key!r} is not an RFC 3339 time ({printable(text[:40])!r})") from None


def alert_events(base: str, scope: Scope, window: Window, tl: Timeline, fetch: Fetch = fetch_json) -> None:
    """The alerts Alertmanager holds (firing, and resolved ones it has not forgotten yet) that were active in
    the window and name the job, a footprint switch or node. An alert firing since before the window is placed
    at the window's start and says since when."""
    if not BASE_URL.fullmatch(base):
        raise TimelineError(f"{base[:80]!r} is not an Alertmanager base URL (http://127.0.0.1:9093)")
    url = base.rstrip("/") + "/api/v2/alerts"
    body = fetch(url)
    if not isinstance(body, list):
        raise TimelineError(f"Alertmanager at {url}: the answer is not a list of alerts (API v2)")
    if len(body) > MAX_ALERTS:
        raise TimelineError(f"Alertmanager at {url}: {len(body)} alerts, more than {MAX_ALERTS} are read")
    for i, alert in enumerate(body):
        where = f"Alertmanager at {url}: alerts[{i}]"
        if not isinstance(alert, dict):
            raise TimelineError(f"{where}: not an object")
        labels = alert.get("labels")
        if not isinstance(labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
        ):
            raise TimelineError(f"{where}: field 'labels' is not an object of text values")
        starts = _alert_time(alert, "startsAt", where)
        ends = _alert_time(alert, "endsAt", where, required=False)
        fingerprint = _text_field(alert, "fingerprint", where, required=False) or ""
        status = alert.get("status", {})
        if not isinstance(status, dict):
            raise TimelineError(f"{where}: field 'status' is not an object")
        state = _text_field(status, "state", f"{where}.status", required=False) or "?"
        annotations = alert.get("annotations", {})
        if not isinstance(annotations, dict):
            raise TimelineError(f"{where}: field 'annotations' is not an object")
        assert starts is not None
        device = labels.get("device") if labels.get("device") in scope.devices else None
        node = next((labels[k] for k in NODE_LABELS if labels.get(k) in scope.nodes), None)
        mine = scope.job is not None and labels.get("job_id") == scope.job
        if device is None and node is None and not mine:
            continue
        if (window.until is not None and starts > window.until) or (ends is not None and ends < window.since):
            continue
        when = max(starts, window.since)
        before = f" (firing since {iso(starts)})" if starts < window.since else ""
        said = annotations.get("summary") or annotations.get("description") or ""
        said = f": {said}" if isinstance(said, str) and said else ""
        name = labels.get("alertname", "?")
        port = labels.get("port") if device is not None else None
        summary = f"{name} {state}{before}{said}"
        tl.events.append(
            Event(when, "alert", device, port, node, printable(summary[:300]), f"{url}#{printable(fingerprint[:32])}")
        )


# -- the switches' logs ----------------------------------------------------------------------------------

_ID = r"(?:\[[0-9A-Z]{5}-[0-9A-Z]{5}\] ?)?(?:\[EC \d+\] ?)?"
ADJCHANGE = re.compile(r"%ADJCHANGE: neighbor (\S+?)\((\S*)\) in vrf (\S*) (Up|Down)(?: (.*))?")
INTF = re.compile(r"Intf (\S+)\((\d+)\) has (come UP|gone DOWN)")
MARKERS = ("%ADJCHANGE", "Intf ")
# The layouts a line comes in, each with the time and who logged it:
LAB = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) (bgpd|zebra)\[\d+\]: " + _ID + r"(.*)")
RFC3339 = re.compile(
    r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)) (\S+) (bgpd|zebra)(?:\[\d+\])?: "
    + _ID
    + r"(.*)"
)
FRR_FILE = re.compile(r"(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d)(?:\.\d{1,9})? (BGP|ZEBRA)(?:\[\d+\])?: " + _ID + r"(.*)")
RFC3164 = re.compile(r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ (?:bgpd|zebra)\[\d+\]: ")


@dataclass(frozen=True)
class LogLine:
    time: datetime
    host: str | None  # the switch the line names (syslog's HOSTNAME), None when the file says whose it is
    message: str


def read_line_of(text: str, zone: tzinfo | None) -> LogLine | str:
    """A log line as (time, host, message), or why it cannot be read."""
    if m := RFC3339.fullmatch(text):
        return LogLine(parse_time(m[1]), m[2], m[4])
    if m := LAB.fullmatch(text):
        return LogLine(datetime.fromisoformat(m[1].replace("Z", "+00:00")), None, m[3])
    if m := FRR_FILE.fullmatch(text):
        if zone is None:
            return "FRR's log file writes the switch's local time without its zone: give --log-zone"
        return LogLine(datetime.strptime(m[1], "%Y/%m/%d %H:%M:%S").replace(tzinfo=zone).astimezone(UTC), None, m[3])
    if RFC3164.match(text):
        return "an RFC 3164 syslog time has no year nor zone: have the syslog daemon write RFC 3339 times"
    return "not a layout read here (lab, RFC 3339 syslog, FRR's log file)"


def event_of(message: str, device: str, where: str, when: datetime) -> Event | str | None:
    """The event an FRR message says, why it does not read as its format, or None for another message."""
    if "%ADJCHANGE" in message:
        m = ADJCHANGE.search(message)
        if m is None or (m[4] == "Up" and m[5]):
            return "names %ADJCHANGE but is not bgpd's 'neighbor HOST(HOSTNAME) in vrf VRF Up|Down REASON'"
        host, name, vrf, state, reason = m[1], m[2], m[3], m[4], m[5] or ""
        peer = f"{host}({name})" if name and name != "Unknown" else host
        said = f" ({reason})" if reason else ""
        port = host if not re.fullmatch(r"[0-9a-fA-F.:]+", host) else None
        return Event(when, "bgp", device, port, None, printable(f"BGP neighbor {peer} vrf {vrf} {state}{said}"), where)
    if message.startswith("Intf "):
        m = INTF.fullmatch(message)
        if m is None:
            return None  # zebra says other things of interfaces (VNI, bridge MAC): not a link change
        state = "up" if m[3] == "come UP" else "down"
        return Event(when, "link", device, m[1], None, f"link {m[1]} {state}", where)
    return None


def log_files(path: Path) -> Iterator[tuple[Path, str | None]]:
    """(file, the switch its name says) for a log file or each file of a log folder: `<switch>.log`,
    `<switch>/*.log` (the lab's `nodes/` folder: `frr.log`) or any file whose lines name their host."""
    if not path.is_dir():
        yield path, path.stem if path.suffix == ".log" else None
        return
    seen = 0
    for entry in sorted(path.iterdir()):
        children = sorted(entry.iterdir()) if entry.is_dir() and not entry.is_symlink() else [entry]
        for child in children:
            if child.is_symlink() or not child.is_file():
                continue
            if entry.is_dir() and child.suffix != ".log":
                continue  # a lab node's folder also holds its namespace's bind mount (uts): a "file" read as EINVAL
            seen += 1
            if seen > MAX_FILES:
                raise TimelineError(f"{path}: more than {MAX_FILES} files; name the switches' logs")
            # A named lab's node folder is `<lab>_<switch>` (no switch name holds a `_`): the switch is the last part.
            named = child.stem if child.suffix == ".log" else None
            owner = entry.name.rpartition("_")[2] if entry.is_dir() else named
            yield child, owner


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """Each line's bytes (a longer one than MAX_LINE cut there, read past), within MAX_LOG bytes a file."""
    try:
        yield from _read_lines(path)
    except OSError as exc:  # a file that opens but cannot be read (a namespace's bind mount, a device)
        why = exc.strerror or exc
        raise TimelineError(f"{path}: cannot be read as a switch's log ({why}); name the log files") from None


def _read_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with open_input(path, what="a switch's log") as fh:
        total, number = 0, 0
        while True:
            raw = fh.readline(MAX_LINE + 1)
            if not raw:
                return
            number += 1
            total += len(raw)
            if total > MAX_LOG:
                raise TimelineError(f"{path}:{number}: larger than {MAX_LOG} bytes, more than a switch's log is read")
            if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
                while (rest := fh.readline(MAX_LINE + 1)) and not rest.endswith(b"\n"):
                    total += len(rest)
                total += len(rest)
            yield number, raw


def log_events(paths: Iterable[Path], scope: Scope, window: Window, tl: Timeline, zone: tzinfo | None) -> None:
    for given in paths:
        if not given.exists():
            raise TimelineError(f"{given}: no such log file or folder (a switch's syslog, or the lab's nodes/)")
        for path, owner in log_files(given):
            for number, raw in _lines(path):
                where = f"{path}:{number}"
                if not any(m.encode() in raw for m in MARKERS):
                    continue  # a line of no FRR message read here
                if len(raw) > MAX_LINE:
                    tl.add_unread(Unread(where, _cut(raw[:MAX_SHOWN].decode("utf-8", "replace")), "longer than 64 KiB"))
                    continue
                try:
                    text = raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError as exc:
                    tl.add_unread(Unread(where, _cut(raw.decode("utf-8", "replace")), f"not UTF-8 at byte {exc.start}"))
                    continue
                _one(text, where=where, owner=owner, scope=scope, window=window, tl=tl, zone=zone)


def _one(
    text: str, *, where: str, owner: str | None, scope: Scope, window: Window, tl: Timeline, zone: tzinfo | None
) -> None:
    read = read_line_of(text, zone)
    if isinstance(read, str):
        if "%ADJCHANGE" in text or INTF.search(text):
            tl.add_unread(Unread(where, _cut(text), read))
        return
    device = read.host or owner
    if device is not None and device not in scope.plan_devices and "." in device:
        device = device.split(".", 1)[0]  # a syslog daemon that writes the sender's FQDN: the switch's name first
    if device not in scope.plan_devices:
        if device is None:
            tl.add_unread(Unread(where, _cut(text), "whose switch: neither the line nor the file's name says"))
        return  # another machine's line (a syslog folder holds every host's)
    if device not in scope.devices or not window.holds(read.time):
        return
    found = event_of(read.message, device, where, read.time)
    if isinstance(found, str):
        tl.add_unread(Unread(where, _cut(text), found))
    elif found is not None:
        tl.events.append(found)


def zone_of(name: str) -> tzinfo:
    """An IANA zone (Europe/Berlin) or UTC."""
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise TimelineError(f"{name!r} is not a time zone (an IANA name: UTC, Europe/Berlin)") from None


# -- the whole -------------------------------------------------------------------------------------------

ORDER = {kind: i for i, kind in enumerate(KINDS)}


Counters = Callable[[Footprint, Scope, Window, Timeline], None]  # adds its events and notes to the timeline


@dataclass(frozen=True)
class Sources:
    audit_log: Path | None = None
    remediation_log: Path | None = None
    alertmanager: str | None = None
    switch_logs: tuple[Path, ...] = ()
    zone: tzinfo | None = None
    fetch: Fetch = fetch_json
    counters: Counters | None = None  # the counter jumps' reader (gpufabric/jobs/counters.py, on Prometheus)


def timeline(found: Footprint, plan_devices: Iterable[str], window: Window, sources: Sources) -> Timeline:
    """Everything the sources say touched `found` within `window`, in time order."""
    scope = scope_of(found, plan_devices)
    tl = Timeline(found.job, found.nodes, window)
    if window.until is not None and window.until < window.since:
        raise TimelineError(f"--until {iso(window.until)} is before --since {iso(window.since)}")
    for path, read, what in (
        (sources.audit_log, audit_events, "the push audit trail"),
        (sources.remediation_log, remediation_events, "the remediation trail"),
    ):
        if path is None:
            continue
        if not path.exists():
            tl.notes.append(f"nothing at {path} ({what}): nothing recorded there yet")
            continue
        read(path, scope, window, tl)
    if sources.alertmanager is not None:
        alert_events(sources.alertmanager, scope, window, tl, sources.fetch)
    else:
        tl.notes.append("no Alertmanager named (--alertmanager): no alert read")
    if sources.switch_logs:
        log_events(sources.switch_logs, scope, window, tl, sources.zone)
    else:
        tl.notes.append("no switch log named (--switch-log): no BGP or link event read")
    if sources.counters is not None:
        sources.counters(found, scope, window, tl)
    else:
        tl.notes.append("no Prometheus named (--prometheus): no counter jump read (the exporter keeps no history)")
    if tl.unread_more:
        tl.notes.append(f"{tl.unread_more} more unread line(s) not listed")
    tl.events.sort(key=lambda e: (e.time, ORDER[e.kind], e.device or "", e.node or "", e.source))
    return tl


def now() -> datetime:
    return datetime.now(UTC)


# -- the job's window, from Slurm ------------------------------------------------------------------------


def _slurm_time(value: object, what: str) -> datetime | None:
    """squeue --json's time: a number (22.05) or {set, infinite, number} (23.02 on); None when not set."""
    if isinstance(value, dict):
        if value.get("set") is False or value.get("infinite") is True:
            return None
        value = value.get("number")
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 40:
        raise TimelineError(f"{what}: not a time (seconds since 1970)")
    return None if value == 0 else datetime.fromtimestamp(value, UTC)


def slurm_start(job: str, text: str) -> datetime:
    """When a job Slurm shows running started: its `start_time` in `squeue --json` (read already, by
    slurm_job_nodes, as valid)."""
    doc = json.loads(text)
    for record in doc.get("jobs", []):
        if isinstance(record, dict) and record.get("job_id") == int(job):
            start = _slurm_time(record.get("start_time"), f"squeue --json job {job}: field 'start_time'")
            if start is None:
                break
            return start
    raise TimelineError(f"Slurm job {job}: squeue --json shows no start time; give --nodes, --since and --until")
