"""The loop's record file (which alert holds which node, under which mark, since when resolved), read
back at start and checked whole before the loop trusts a field of it.

The record is written by the loop, but it is a file on disk a person may edit, and the hold-down thread
does arithmetic on it: `"resolved_at": "soon"` or `"nodes": "gpu01"` (five one-letter nodes) would end
that thread, or resume nodes nobody drained. So every field is checked for its type and form (names by
the scheduler's node pattern, alerts as the webhook's reader takes them, times that parse, a finite
resolved time no later than a day ahead), counts and size are bounded, and an out node must be held by
an alert the record holds (else no hold-down would ever put it back). Every problem is reported with
its field and line, and the receiver does not start (exit 2): nothing is guessed from a record that is
not one.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from gpufabric.errors import LocatedError, Problem
from gpufabric.errors import Path as FieldPath
from gpufabric.inputs import MiB, json_text, read_text
from gpufabric.remediate.payload import (
    ALERT_NAME,
    FINGERPRINT,
    LABEL_NAME,
    MAX_LABELS,
    MAX_VALUE,
    STATUSES,
    TIME,
)
from gpufabric.scheduler import Mark
from gpufabric.scheduler.model import NODE

VERSION = 1
OWNER = "remediate"
MAX_BYTES = 16 * MiB  # a record of tens of thousands of held nodes is a few MiB
MAX_ENTRIES = 100_000  # alerts held, nodes out, nodes per alert
MAX_SCHEDULERS = 8
MAX_PART = 256
AHEAD = 86_400.0  # seconds: a resolved time later than this from now is no clock's
KIND = r"[a-z][a-z0-9-]{0,31}"


class RecordError(LocatedError):
    """A record file that is not one the loop wrote: every problem located (field, line)."""

    OUTCOME = "the receiver did not start; fix the fields shown, or move the file aside to start afresh"


@dataclass
class Held:
    """An alert that holds nodes out."""

    alert: dict[str, Any]
    part: str
    nodes: list[str]
    resolved_at: float | None = None  # when it was last seen resolved; None while it fires


@dataclass
class Out:
    """A node the loop took out (in `ours`' schedulers), under `mark`, held by `holders` (alert keys)."""

    mark: str
    ours: list[str] = field(default_factory=list)  # the schedulers in which we set the drain
    holders: list[str] = field(default_factory=list)
    dry: bool = False


class _Checker:
    """Collects the problems of one record; each check returns the value when it is right, else None."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.problems: list[Problem] = []

    def bad(self, where: FieldPath, message: str, hint: str) -> None:
        self.problems.append(Problem(where, message, hint))

    def fields(self, value: object, where: FieldPath, names: tuple[str, ...]) -> dict[str, Any] | None:
        """`value` as an object with exactly `names`."""
        if not isinstance(value, dict):
            self.bad(where, f"an object is expected, not {_type(value)}", f"an object with {', '.join(names)}")
            return None
        for name in names:
            if name not in value:
                self.bad(where, f"{name!r} is missing", f"an object with {', '.join(names)}")
        for name in value:
            if name not in names:
                self.bad((*where, str(name)), "is not a field of the record", f"remove it (fields: {', '.join(names)})")
        return value if all(n in value for n in names) else None

    def text(self, value: object, where: FieldPath, pattern: str | None = None, limit: int = MAX_VALUE) -> str | None:
        if not isinstance(value, str):
            self.bad(where, f"a string is expected, not {_type(value)}", "a string in double quotes")
            return None
        if len(value) > limit or not value.isprintable() or (pattern and not re.fullmatch(pattern, value)):
            form = f"matching {pattern}" if pattern else "printable"
            self.bad(where, f"{value[:64]!r} is not a right value here", f"a string {form}, at most {limit} characters")
            return None
        return value

    def listed(self, value: object, where: FieldPath, pattern: str, limit: int) -> list[str] | None:
        if not isinstance(value, list):
            hint = f'a list of strings matching {pattern}: ["gpu01"], not "gpu01"'
            self.bad(where, f"a list is expected, not {_type(value)}", hint)
            return None
        if len(value) > limit:
            self.bad(where, f"{len(value)} entries, more than {limit}", "a record the loop wrote")
            return None
        items = [self.text(v, (*where, i), pattern) for i, v in enumerate(value)]
        if any(v is None for v in items):
            return None
        if len(set(items)) != len(items):
            self.bad(where, "names an entry twice", "each entry once")
            return None
        return [v for v in items if v is not None]

    def mapping(self, value: object, where: FieldPath, key: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.bad(where, f"an object is expected, not {_type(value)}", "an object keyed by " + key)
            return {}
        if len(value) > MAX_ENTRIES:
            self.bad(where, f"{len(value)} entries, more than {MAX_ENTRIES}", "a record the loop wrote")
            return {}
        return value

    def when(self, value: object, where: FieldPath) -> float | None:
        hint = "null while the alert fires, else the seconds since 1970 when it resolved (a number, as 1790000000.5)"
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.bad(where, f"a number or null is expected, not {_type(value)}", hint)
            return None
        moment = float(value)
        if not math.isfinite(moment) or moment < 0:
            self.bad(where, f"{value!r} is not a time", hint)
        elif moment > self.now + AHEAD:
            self.bad(where, f"{value!r} is more than a day ahead of this machine's clock", hint)
        return moment

    def alert(self, value: object, where: FieldPath, key: str) -> dict[str, Any] | None:
        alert = self.fields(value, where, ("name", "status", "fingerprint", "starts_at", "labels"))
        if alert is None:
            return None
        ok = self.text(alert["name"], (*where, "name"), ALERT_NAME.pattern) is not None
        if alert["status"] not in STATUSES:
            self.bad((*where, "status"), f"{str(alert['status'])[:32]!r} is not a status", "'firing' or 'resolved'")
            ok = False
        if alert["fingerprint"] != key:
            self.bad((*where, "fingerprint"), "is not the key the alert is held under", f"{key!r}")
            ok = False
        starts = self.text(alert["starts_at"], (*where, "starts_at"), limit=64)
        if starts is not None and not _parses(starts):
            self.bad((*where, "starts_at"), f"{starts!r} is not a time", "an RFC 3339 time: 2026-11-25T15:00:00Z")
            ok = False
        labels = alert["labels"]
        if not isinstance(labels, dict) or len(labels) > MAX_LABELS:
            self.bad((*where, "labels"), "an object of at most 64 labels is expected", "label names to strings")
            return None
        for name, text in labels.items():
            if not LABEL_NAME.fullmatch(name):
                self.bad((*where, "labels"), f"{name[:64]!r} is not a label name", "letters, digits and '_'")
                ok = False
            elif self.text(text, (*where, "labels", name)) is None:
                ok = False
        return alert if ok and starts is not None else None


def _type(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true or false", type(None): "null"}
    return names.get(type(value), "a number")


def _parses(text: str) -> bool:
    if not TIME.fullmatch(text):
        return False
    head, _, rest = text.partition(".")  # Python reads at most microseconds: Alertmanager writes nanoseconds
    if rest:
        digits = rest.rstrip("Z").split("+")[0].split("-")[0]
        text = f"{head}.{digits[:6]}{rest[len(digits) :]}"
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _held(check: _Checker, data: dict[str, Any]) -> dict[str, Held]:
    out: dict[str, Held] = {}
    for key, value in check.mapping(data["held"], ("held",), "the alerts' fingerprints").items():
        where: FieldPath = ("held", key)
        if not FINGERPRINT.fullmatch(key):
            check.bad(where, f"{key[:64]!r} is not an alert's fingerprint", "lower-case hexadecimal, as Alertmanager's")
            continue
        entry = check.fields(value, where, ("alert", "part", "nodes", "resolved_at"))
        if entry is None:
            continue
        alert = check.alert(entry["alert"], (*where, "alert"), key)
        part = check.text(entry["part"], (*where, "part"), limit=MAX_PART)
        nodes = check.listed(entry["nodes"], (*where, "nodes"), NODE.pattern, MAX_ENTRIES)
        count = len(check.problems)
        resolved = check.when(entry["resolved_at"], (*where, "resolved_at"))
        if alert is not None and part is not None and nodes is not None and len(check.problems) == count:
            out[key] = Held(alert, part, nodes, resolved)
    return out


def _out(check: _Checker, data: dict[str, Any], held: dict[str, Held]) -> dict[str, Out]:
    out: dict[str, Out] = {}
    for node, value in check.mapping(data["out"], ("out",), "node names").items():
        where: FieldPath = ("out", node)
        if not NODE.fullmatch(node):
            check.bad(where, f"{node[:64]!r} is not a node name", "letters, digits, '.', '_' and '-'")
            continue
        entry = check.fields(value, where, ("mark", "ours", "holders", "dry"))
        if entry is None:
            continue
        mark = check.text(entry["mark"], (*where, "mark"))
        parsed = Mark.parse(mark) if mark is not None else None
        if mark is not None and (parsed is None or parsed.owner != OWNER):
            check.bad((*where, "mark"), f"{mark[:64]!r} is not the loop's mark", "gpufabric remediate: <alert>@<part>")
        ours = check.listed(entry["ours"], (*where, "ours"), KIND, MAX_SCHEDULERS)
        holders = check.listed(entry["holders"], (*where, "holders"), FINGERPRINT.pattern, MAX_ENTRIES)
        if not isinstance(entry["dry"], bool):
            check.bad((*where, "dry"), f"true or false is expected, not {_type(entry['dry'])}", "true or false")
            continue
        for i, key in enumerate(holders or []):
            if key in held and node not in held[key].nodes:
                check.bad((*where, "holders", i), f"alert {key} does not list {node} in its nodes", "held.<key>.nodes")
            elif key not in held and key in data["held"]:
                pass  # that alert's entry is wrong: reported where it is
            elif key not in held:
                check.bad((*where, "holders", i), f"no alert {key} is held", "a key of `held`")
        if mark is not None and parsed is not None and ours is not None and holders is not None:
            out[node] = Out(mark, ours, holders, entry["dry"])
    return out


_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _lines(text: str) -> dict[FieldPath, int]:
    """Each field's line (a key's, a list item's), for the error only. Walks text that json_text has
    already read (so its nesting is bounded); a surprise ends the walk with the lines found so far."""
    breaks = [m.start() for m in re.finditer("\n", text)]
    lines: dict[FieldPath, int] = {}

    def line(at: int) -> int:
        return bisect.bisect_left(breaks, at) + 1

    def skip(at: int) -> int:
        found = _SPACE.match(text, at)
        return found.end() if found else at

    def value(at: int, where: FieldPath) -> int:
        at = skip(at)
        lines.setdefault(where, line(at))
        opening = text[at]
        if opening in "{[":
            closing, index = ("}" if opening == "{" else "]"), 0
            at = skip(at + 1)
            while text[at] != closing:
                if opening == "{":
                    key, after = _DECODER.raw_decode(text, at)
                    lines[(*where, key)] = line(at)
                    at = value(skip(after) + 1, (*where, key))  # past the colon
                else:
                    at = value(at, (*where, index))
                    index += 1
                at = skip(at)
                if text[at] == ",":
                    at = skip(at + 1)
            return at + 1
        return int(_DECODER.raw_decode(text, at)[1])  # a string, a number, true, false or null

    with contextlib.suppress(ValueError, IndexError):
        value(0, ())
    return lines


def read_record(path: Path, now: float) -> tuple[dict[str, Held], dict[str, Out]]:
    """The held alerts and out nodes of the record at `path`, or RecordError naming every problem.
    Read as outside input: a regular file (never through a link), at most MAX_BYTES, strict JSON."""
    text = read_text(path, what="the remediation record", max_bytes=MAX_BYTES, follow_links=False)
    data = json_text(text, path, "the remediation record")
    check = _Checker(now)
    top = check.fields(data, (), ("version", "held", "out"))
    version = data.get("version") if isinstance(data, dict) else None
    if isinstance(data, dict) and (isinstance(version, bool) or version != VERSION):
        check.bad(("version",), f"{str(version)[:16]} is not a remediation record's version", f"{VERSION}")
    held: dict[str, Held] = {}
    out: dict[str, Out] = {}
    if top is not None and not check.problems:
        held = _held(check, top)
        out = _out(check, top, held)
    if check.problems:
        raise RecordError(str(path), check.problems, _lines(text))
    return held, out
