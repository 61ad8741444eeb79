"""A small YAML writer for configuration trees (nested mappings of text and whole numbers).

Every scalar that YAML 1.1 or 1.2 could read as anything but the same text is quoted, so the
device, PyYAML and NVUE read back exactly the value written: `on` stays the text "on", a
community `'; reboot` stays one string, an address stays text. Much faster than a general dumper
on the 1,280 switches of a large fabric, and the output is stable for golden files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# Plain (unquoted) only when nothing could read it as another type or as YAML syntax.
# \Z, not $: `$` also matches before a final newline, which would then be written plain and lost.
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./:-]*\Z|^[0-9][0-9A-Za-z_./:-]*[A-Za-z/:_-][0-9A-Za-z_./:-]*\Z")
_AMBIGUOUS = frozenset(["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "nan", "inf"])
# Written escaped in double quotes: what YAML does not allow as is (C0/C1 controls, surrogates,
# U+FFFE/U+FFFF) and the line breaks a quoted scalar would fold.
_CONTROL = re.compile("[^\\x20-\\x7e\\xa0-\\ud7ff\\ue000-\\ufffd\\U00010000-\\U0010ffff]|[\\x85\\u2028\\u2029]")


def scalar(value: object) -> str:
    if type(value) is str:
        return _text(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return _text(str(value))


def _text(text: str) -> str:
    # No text with a space is plain (the plain pattern has none): a description skips the pattern.
    if " " not in text and _SAFE.match(text) and text.lower() not in _AMBIGUOUS:
        return text
    # Printable ASCII is the common case (descriptions): str's own test, not the control-character scan.
    if (text.isascii() and text.isprintable()) or not _CONTROL.search(text):
        return "'" + text.replace("'", "''") + "'"
    return '"' + "".join(_escape(c) for c in text) + '"'


# Sexagesimal (1:20), dates, integers and floats (YAML 1.1 allows `_` in both: `0_` is 0) and 0x/0o/0b
# literals are numbers to YAML 1.1 readers: never plain.
_NUMERIC = r"[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?\Z|[0-9][0-9_]*\Z|[0-9][0-9_]*[-.eE][0-9_.eE+-]*\Z|0[xob]"
# ...nor anything ending in `:` (YAML would read a mapping). The plain pattern is tried first: most
# text that is not plain (a description, with its spaces) fails it at once, before the other scans.
_SAFE = re.compile(f"(?=(?:{_PLAIN.pattern}))(?!{_NUMERIC})(?!.*:\\Z)", re.DOTALL)


# An IPv4 prefix, `10.0.0.1/31`, is plain to _SAFE (it starts with a digit and holds a `/`, which no number
# does, and no `:`); this pattern says so in a third of _SAFE's time.
_ADDRESS = re.compile(r"[0-9]+(?:\.[0-9]+){3}/[0-9]+\Z")


def _escape(c: str) -> str:
    if c in {'"', "\\"}:
        return "\\" + c
    return f"\\u{ord(c):04x}" if _CONTROL.match(c) else c


class Shared(dict):  # type: ignore[type-arg]
    """A subtree that stands in many places of one document (every port's `link: state: up`): written
    once per indentation and copied after that. A plain dict to every reader."""


def mapping_lines(tree: Mapping[str, Any], indent: int, out: list[str]) -> None:
    _emit(tree, " " * indent, out, {})


_DECIDED: dict[object, str] = {}  # key or value -> how it is written, for the values a fabric repeats
_DECIDED_BOUND = 1 << 16


def _remember(item: object) -> str:
    """Keys and values repeat across a fabric's documents (`type`, `swp`, `mtu`, a peer's name on each of
    its neighbours): each is decided once. The table is emptied when full, so the values only one switch
    has (its name, a peer's name on a few switches) do not keep the later switches' repeated ones out."""
    if type(item) is not str:
        return scalar(item)  # not kept: True, 1 and 1.0 are one key to a dict
    # Not kept either, what each port has its own of: an address (plain, see _ADDRESS), a description (a
    # text with a space). Keeping them cost as much again as deciding them, for nothing.
    if _ADDRESS.match(item):
        return item
    written = _text(item)
    if " " in item:
        return written
    if len(_DECIDED) >= _DECIDED_BOUND:
        _DECIDED.clear()
    _DECIDED[item] = written
    return written


def _emit(tree: Mapping[str, Any], pad: str, out: list[str], shared: dict[tuple[int, str], list[str]]) -> None:
    # The hot loop of a large fabric's render (about 2,000 lines per switch): locals, f-strings and
    # one dict lookup per key and value instead of calls; text first, as most values are text.
    get, deeper, append = _DECIDED.get, pad + "  ", out.append
    for key, value in tree.items():
        k = get(key) or _remember(key)
        kind = type(value)
        if kind is str:
            append(f"{pad}{k}: {get(value) or _remember(value)}")
        elif kind is dict:
            if not value:
                append(f"{pad}{k}: {{}}")
                continue
            append(f"{pad}{k}:")
            if len(value) == 1:
                # NVUE's one-item sets (`address: {10.0.0.0/31: {}}`), on every port: no call for them
                ((item, inner),) = value.items()
                if type(inner) is dict and not inner:
                    append(f"{deeper}{get(item) or _remember(item)}: {{}}")
                    continue
            _emit(value, deeper, out, shared)
        elif kind is Shared:
            append(f"{pad}{k}:" if value else f"{pad}{k}: {{}}")
            lines = shared.get((id(value), deeper))
            if lines is None:
                lines = shared[(id(value), deeper)] = []
                _emit(value, deeper, lines, shared)
            out.extend(lines)
        elif kind is int:  # bool is not int here: type() is exact
            append(f"{pad}{k}: {value}")
        else:
            append(f"{pad}{k}: {get(value) or _remember(value)}")
