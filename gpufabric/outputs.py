"""Writing for strict readers: JSON without NaN or Infinity, XML with only the characters XML 1.0 allows.

The counterpart of inputs.py. Python's json module writes `NaN` and `Infinity` by default, which are not
JSON (RFC 8259): jq, Go, JavaScript's JSON.parse and most CI tools refuse the whole document. And
ElementTree escapes `<`, `&` and quotes but writes control characters as they are, which no XML 1.0
parser accepts: a switch's answer holding ESC or NUL would make a JUnit file no CI system can read.
Every JSON and XML writer of gpufabric goes through here.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from json.encoder import encode_basestring_ascii
from typing import Any

from gpufabric.errors import GpufabricError

# Beside a value that JSON cannot hold (now null), this field says what it was.
NOTE_SUFFIX = "_not_finite"


def json_dumps(
    value: Any,
    *,
    indent: int | None = None,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
) -> str:
    """`json.dumps` for strict readers: a non-finite float becomes null and, inside an object, a sibling
    field `<key>_not_finite` says which it was ("nan", "inf", "-inf"). Other values are written as
    json.dumps writes them, so the common case (all finite) costs one plain dump."""
    try:
        if indent is not None:
            with contextlib.suppress(_UnusualError):
                return _indented(value, indent, sort_keys, separators or (",", ": "))
        return json.dumps(value, indent=indent, sort_keys=sort_keys, separators=separators, allow_nan=False)
    except ValueError as exc:
        if "Out of range float values" not in str(exc):
            raise  # a circular reference: not ours to mend
    return json.dumps(_finite(value), indent=indent, sort_keys=sort_keys, separators=separators, allow_nan=False)


class _UnusualError(GpufabricError):
    """A value _indented leaves to json.dumps: not a plain dict with text keys, list, tuple, text, number,
    boolean or None, or a float that is not finite."""


def _indented(value: Any, indent: int | str, sort_keys: bool, separators: tuple[str, str]) -> str:
    """json.dumps's text for an indented document of plain values, written in one pass. json.dumps writes
    an indented document with its pure-Python encoder (its C encoder only writes without indent), a
    generator a value deep: the structured configs of the 32k example's 1,366 switches took 21 s of
    json.dumps under cProfile. Anything unusual raises _UnusualError, and json.dumps writes that document."""
    step = " " * indent if isinstance(indent, int) else indent
    item_sep, key_sep = separators
    text = encode_basestring_ascii  # json.dumps's own escaping (ensure_ascii), in C
    parts: list[str] = []
    add = parts.append

    def scalar(o: Any) -> str:
        kind = type(o)
        if kind is str:
            return text(o)
        if kind is int:
            return int.__repr__(o)
        if kind is bool:
            return "true" if o else "false"
        if o is None:
            return "null"
        if kind is float and math.isfinite(o):
            return float.__repr__(o)
        raise _UnusualError

    def write(o: Any, here: str) -> None:  # `here`: a newline and the indent of the line `o` starts on
        kind = type(o)
        if kind is dict:
            if not o:
                add("{}")
                return
            inner = here + step
            sep = item_sep + inner
            add("{")
            lead = inner
            for key, item in sorted(o.items()) if sort_keys else o.items():
                if type(key) is not str:
                    raise _UnusualError
                add(lead)
                lead = sep
                add(text(key))
                add(key_sep)
                if type(item) in _NESTED:
                    write(item, inner)
                else:
                    add(scalar(item))
            add(here)
            add("}")
        elif kind is list or kind is tuple:
            if not o:
                add("[]")
                return
            inner = here + step
            sep = item_sep + inner
            add("[")
            lead = inner
            for item in o:
                add(lead)
                lead = sep
                if type(item) in _NESTED:
                    write(item, inner)
                else:
                    add(scalar(item))
            add(here)
            add("]")
        else:
            add(scalar(o))

    try:
        write(value, "\n")
    except (TypeError, RecursionError) as exc:  # keys sorted that cannot be, a circle: json.dumps says it
        raise _UnusualError from exc
    return "".join(parts)


_NESTED = frozenset({dict, list, tuple})


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            out[key] = _finite(item)
            if isinstance(item, float) and not math.isfinite(item):
                note = f"{key}{NOTE_SUFFIX}"
                if note not in value:
                    out[note] = repr(item)  # 'nan', 'inf' or '-inf'
        return out
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]  # a list has no room for a note: null alone
    return value


def json_number(value: float | int) -> str:
    """One number as JSON text, for writers that assemble JSON by hand: null when it is not finite."""
    if isinstance(value, float) and not math.isfinite(value):
        return "null"
    return json.dumps(value)


# XML 1.0 (section 2.2): tab, LF, CR, U+0020-U+D7FF, U+E000-U+FFFD, U+10000-U+10FFFF. Everything else (the C0
# controls, lone surrogates, U+FFFE and U+FFFF) is refused by every conforming parser, even as &#1;.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """`text` with every character XML 1.0 forbids written as a visible escape (`\\x1b`, `\\x00`, `\\ud800`),
    so the reader sees that something was there. Markup (`<`, `&`, `]]>`) is the XML writer's to escape."""
    return _NOT_XML.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    return _escape(match.group())


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def shown(text: str, limit: int = 500) -> str:
    """Text from outside (a switch's answer, a process's message) as an error or a log may show it: every
    control or formatting character escaped (a terminal escape in stderr must not drive the operator's
    terminal, a `\\r` must not hide what came before it), one line, at most `limit` characters. Markup-looking
    text stays as it is: whoever prints an error prints it as text (rich's `markup=False`, or a Text cell),
    never as markup."""
    out: list[str] = []
    size = 0
    for ch in text:
        piece = ch if ch.isprintable() else _ESCAPES.get(ch) or _escape(ch)
        out.append(piece)
        size += len(piece)
        if size > limit:
            return "".join(out)[:limit] + "..."
    return "".join(out)


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
