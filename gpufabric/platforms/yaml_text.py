"""A small YAML writer for configuration trees (nested mappings of text and whole numbers).

Every scalar that YAML 1.1 or 1.2 could read as anything but the same text is quoted, so the
device, PyYAML and NVUE read back exactly the value written: `on` stays the text "on", a
community `'; reboot` stays one string, an address stays text. Much faster than a general dumper
on the 1,280 switches of a large fabric, and the output is stable for golden files.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
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


class Slot:
    """Where the entries a Form writes differ: a key or value of the entry, given by its position among the
    entry's values (see Filled). Each slot is written once, in the order of the indexes."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class Form:
    """The shape many entries of a document share (every host port of a leaf: its type, a description, the
    link, an address, its QoS), with Slots where the entries differ. Written once per indentation as one
    format string, so an entry costs one `%` of its own values rather than a dozen lines written one at a
    time. A form is kept by its template's content (`Form.of`), across documents."""

    __slots__ = ("slots", "template", "texts")

    def __init__(self, template: Mapping[str, Any]) -> None:
        if not template:
            raise ValueError("a form needs at least one key")
        self.template = template
        self.slots = _slot_count(template)
        self.texts: dict[str, str] = {}  # pad -> the entry's text: `%s` its key, then one `%s` a slot

    @classmethod
    def of(cls, template: Mapping[str, Any]) -> Form:
        """The form of this template, made once for all the documents whose entries have this shape."""
        key = _frozen(template)
        form = _FORMS.get(key)
        if form is None:
            if len(_FORMS) >= _FORMS_BOUND:
                _FORMS.clear()
            form = _FORMS[key] = cls(template)
        return form

    def tree(self, values: tuple[object, ...]) -> dict[str, Any]:
        """The entry as plain nested dicts, fresh ones: what a reader of the tree sees."""
        return _substituted(self.template, values)

    def text(self, pad: str) -> str:
        """The entry's text at this indentation, for `%`: its key, then its slots' values as decided."""
        found = self.texts.get(pad)
        if found is None:
            found = self.texts[pad] = self._compiled(pad)
        return found

    def _compiled(self, pad: str) -> str:
        """The entry written line by line with markers in its slots, the markers then made `%s`: so the text
        is the line-by-line writer's for any values. `%`, not `str.format`: it formats a port in 40% of
        the time."""
        markers = tuple(f"_gpufabric_slot_{i}_" for i in range(self.slots))
        lines: list[str] = []
        _emit(_substituted(self.template, markers), pad + "  ", lines, {})
        pieces = _MARKER.split("\n".join(lines))
        if len(pieces) // 2 != self.slots or pieces[1::2] != [str(i) for i in range(self.slots)]:
            # each slot once, in order: what `%` fills positionally (a template's order decides)
            raise ValueError("a form's slots must each appear once, numbered in the order they are written")
        constants = [piece.replace("%", "%%") for piece in pieces[0::2]]
        return pad.replace("%", "%%") + "%s:\n" + "%s".join(constants)


class Filled(tuple):  # type: ignore[type-arg]
    """One entry of a Form: the form, then the entry's values in slot order, `Filled((form, a, b))`. A tuple,
    made in C: a large fabric's switch has a few hundred. A count of values that is not the form's fails
    in the writer's `%`. The writer writes it in one piece; `plain` turns it into the dicts it stands for."""

    __slots__ = ()


_MARKER = re.compile(r"_gpufabric_slot_([0-9]+)_")
_FORMS: dict[tuple[object, ...], Form] = {}  # a template's content -> its form
_FORMS_BOUND = 1024  # shapes differ by release, MTU and the plane's options: a few per fabric


def _slot_count(tree: Mapping[str, Any]) -> int:
    indexes = {s.index for s in _slots(tree)}
    if indexes != set(range(len(indexes))):
        raise ValueError(f"a form's slots must be numbered from 0 without gaps: {sorted(indexes)}")
    return len(indexes)


def _slots(tree: Mapping[str, Any]) -> Iterator[Slot]:
    for key, value in tree.items():
        if isinstance(key, Slot):
            yield key
        if isinstance(value, Slot):
            yield value
        elif isinstance(value, Mapping):
            yield from _slots(value)


def _substituted(tree: Mapping[str, Any], values: tuple[object, ...]) -> dict[Any, Any]:
    return {_filled(key, values): _filled(value, values) for key, value in tree.items()}


def _filled(item: object, values: tuple[object, ...]) -> object:
    if isinstance(item, Slot):
        return values[item.index]
    if isinstance(item, Mapping):
        return _substituted(item, values)
    return item


def _frozen(tree: Mapping[str, Any]) -> tuple[object, ...]:
    """A template's content as a key: each scalar with its type (1, True and "1" are written differently),
    each slot by its index, in the order written."""
    return tuple(
        (
            ("slot", key.index) if isinstance(key, Slot) else (type(key), key),
            ("slot", value.index)
            if isinstance(value, Slot)
            else _frozen(value)
            if isinstance(value, Mapping)
            else (type(value), value),
        )
        for key, value in tree.items()
    )


def plain(tree: Mapping[str, Any]) -> dict[str, Any]:
    """The tree with every Filled entry as the dicts it stands for: what the line-by-line writer and any
    other reader take."""
    return {key: _plain_value(value) for key, value in tree.items()}


def _plain_value(value: object) -> object:
    if type(value) is Filled:
        return value[0].tree(value[1:])
    return plain(value) if isinstance(value, dict) else value


def mapping_lines(tree: Mapping[str, Any], indent: int, out: list[str]) -> None:
    _emit(tree, " " * indent, out, {})


_DECIDED: dict[object, str] = {}  # key or value -> how it is written, for the values a fabric repeats
_DECIDED_BOUND = 1 << 16


def _remember(item: object) -> str:
    """Keys and values repeat across a fabric's documents (`type`, `swp`, `mtu`, a peer's name on each of
    its neighbours): each is decided once. The table is emptied when full, so the values only one switch
    has (its name, a peer's name on a few switches) do not keep the later switches' repeated ones out."""
    if type(item) is not str:
        # not kept: True, 1 and 1.0 are one key to a dict (a whole number, a session's remote AS, is its digits)
        return str(item) if type(item) is int else scalar(item)
    # Not kept either, what each port has its own of: an address (plain, see _ADDRESS), a description (a
    # text with a space, never plain: quoted as _text would). Keeping them cost as much again as deciding
    # them, for nothing.
    if " " in item:  # the more common of the two: before the pattern's call
        return "'" + item.replace("'", "''") + "'" if item.isascii() and item.isprintable() else _text(item)
    if _ADDRESS.match(item):
        return item
    written = _text(item)
    if len(_DECIDED) >= _DECIDED_BOUND:
        _DECIDED.clear()
    _DECIDED[item] = written
    return written


def _emit(tree: Mapping[str, Any], pad: str, out: list[str], shared: dict[tuple[int, str], list[str]]) -> None:
    # The hot loop of a large fabric's render (about 2,000 lines per switch): locals, f-strings and
    # one dict lookup per key and value instead of calls; text first, as most values are text, then
    # the ports' and sessions' pieces, most of a large switch's entries.
    get, deeper, append = _DECIDED.get, pad + "  ", out.append
    for key, value in tree.items():
        k = get(key) or _remember(key)
        kind = type(value)
        if kind is str:
            append(f"{pad}{k}: {get(value) or _remember(value)}")
        elif kind is Filled:
            # One entry of a shared shape: its key and values decided as any line's, the rest its form's
            # text. A port has one or two values, a BGP session two: those without a comprehension's call.
            form = value[0]
            text = form.texts.get(pad) or form.text(pad)
            if len(value) == 3:
                _, a, b = value
                append(text % (k, get(a) or _remember(a), get(b) or _remember(b)))
            elif len(value) == 2:
                a = value[1]
                append(text % (k, get(a) or _remember(a)))
            else:
                append(text % (k, *[get(v) or _remember(v) for v in value[1:]]))
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
