"""Which changes disturb traffic: the closed set of reasons, and the rule engine each OS classifies its diffs with.

A push reads every switch's diff before anything changes (the driver's own `compare_config`). Each OS
knows what its diff lines do to a running switch: a new description changes nothing in the data
path, a new ASN resets every BGP session, a new buffer profile reprograms the ASIC. `Platform.disruptions`
(gpufabric/platforms/spec.py) answers with the reasons a change is disruptive, or none when it is hitless;
`nornir push --drain auto` drains exactly the switches with a reason.

An OS writes its knowledge as `Rule`s over its diff's form (`DiffForm`: how an added and a removed line
start). The engine runs the rules as one regular expression over the whole diff text (C speed: a
1,200-line diff costs about half a millisecond) and, where the OS asks for it, one more that finds a
changed line no rule knows: such a change is not known to be hitless, so it counts as disruptive
(`UNCLASSIFIED`), the safe side.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class Reason(StrEnum):
    """Why a change is disruptive: a closed set, the same for every OS."""

    BGP_RESET = "bgp-reset"  # BGP sessions go down (ASN, router-id, a neighbor's address or remote-as)
    AGENT_RESTART = "agent-restart"  # a forwarding or routing agent restarts (switchd, FRR, syncd, ...)
    BUFFERS = "buffers"  # buffers or QoS reprogrammed in the ASIC (PFC, headroom, pools)
    PORT_SPEED = "port-speed"  # a port's speed, lanes or breakout changes: the port goes down
    MTU = "mtu"  # a port's MTU changes
    REBOOT = "reboot"  # the change takes effect only after a reboot or a reload
    UNCLASSIFIED = "unclassified"  # a change the platform does not know to be hitless


@dataclass(frozen=True)
class Disruption:
    """One reason a switch's change is disruptive, with what shows it (a line of the diff)."""

    reason: Reason
    detail: str

    def __str__(self) -> str:
        return f"{self.reason}: {self.detail}"


@dataclass(frozen=True)
class DiffForm:
    """How a diff marks a line the change adds or removes: regular expressions matched where a line
    starts (the engine adds `^`, multi-line), each followed by the line's content."""

    added: str
    removed: str


@dataclass(frozen=True)
class Rule:
    """Lines whose content (after the form's mark) matches `body` are `reason` (None: known hitless).
    `on`: which lines the rule reads, "+" added, "-" removed, or both."""

    body: str
    reason: Reason | None
    what: str = ""
    on: str = "+-"


DETAIL_CHARS = 160  # a detail quotes at most this much of its line


class Classifier:
    """An OS's rules over its diff form, compiled once. `catch_all`: a changed line no rule knows counts
    as UNCLASSIFIED (else every line the rules do not name is taken as hitless)."""

    def __init__(self, form: DiffForm, rules: Sequence[Rule], *, catch_all: bool = True) -> None:
        self.rules = tuple(rules)
        # One pattern for every disruptive rule, the line's mark read once: `^` fails at once where no line
        # starts, so the text is scanned once whatever the number of rules (10 searches cost 5x more).
        self._disruptive = [r for r in self.rules if r.reason is not None]
        branches = []
        for sign, mark, tag in (("+", form.added, "a"), ("-", form.removed, "d")):
            alternatives = [f"(?P<{tag}{i}>{r.body})" for i, r in enumerate(self._disruptive) if sign in r.on]
            if alternatives:
                branches.append(f"(?:{mark})(?:{'|'.join(alternatives)})")
        self._any = re.compile("^(?:" + "|".join(branches) + ").*", re.M) if branches else None
        self._unknown: re.Pattern[str] | None = None
        if catch_all:
            known_added = "|".join(f"(?:{r.body})" for r in self.rules if "+" in r.on) or "(?!)"
            known_removed = "|".join(f"(?:{r.body})" for r in self.rules if "-" in r.on) or "(?!)"
            self._unknown = re.compile(
                f"^(?:(?:{form.added})(?!{known_added})|(?:{form.removed})(?!{known_removed})).*", re.M
            )

    def __call__(self, diff: str) -> tuple[Disruption, ...]:
        first: dict[int, str] = {}  # rule -> the first line it matched
        if self._any is not None:
            for m in self._any.finditer(diff):
                rule = int((m.lastgroup or "a0")[1:])
                first.setdefault(rule, m.group(0))
                if len(first) == len(self._disruptive):
                    break
        found = [
            Disruption(r.reason, _detail(r.what, first[i]))
            for i, r in enumerate(self._disruptive)
            if i in first and r.reason is not None
        ]
        if self._unknown is not None and not found:  # already disruptive: the reasons found say why
            unknown = self._unknown.search(diff)
            if unknown is not None:
                found.append(Disruption(Reason.UNCLASSIFIED, _detail("not known to be hitless", unknown.group(0))))
        return tuple(found)


def _detail(what: str, line: str) -> str:
    shown = line.strip()
    if len(shown) > DETAIL_CHARS:
        shown = shown[: DETAIL_CHARS - 3] + "..."
    return f"{what} [{shown}]" if what else shown


def merge(*parts: tuple[Disruption, ...]) -> tuple[Disruption, ...]:
    """The disruptions of several parts of one diff, each (reason, detail) once, in order."""
    return tuple(dict.fromkeys(d for part in parts for d in part))
