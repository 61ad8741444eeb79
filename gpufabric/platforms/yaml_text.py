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
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./:-]*$|^[0-9][0-9A-Za-z_./:-]*[A-Za-z/:_-][0-9A-Za-z_./:-]*$")
_AMBIGUOUS = frozenset(["y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "nan", "inf"])
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]")


def scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _AMBIGUOUS and not _looks_numeric(text):
        return text
    if _CONTROL.search(text):
        return '"' + "".join(_escape(c) for c in text) + '"'
    return "'" + text.replace("'", "''") + "'"


def _looks_numeric(text: str) -> bool:
    """Sexagesimal (1:20), dates and floats are numbers to YAML 1.1 readers."""
    return bool(re.match(r"^[0-9][0-9_]*(:[0-5]?[0-9])+$|^[0-9]+[-.eE][0-9.eE+-]*$|^0[xob]", text))


def _escape(c: str) -> str:
    if c in {'"', "\\"}:
        return "\\" + c
    return f"\\u{ord(c):04x}" if _CONTROL.match(c) else c


def mapping_lines(tree: Mapping[str, Any], indent: int, out: list[str]) -> None:
    pad = " " * indent
    for key, value in tree.items():
        k = scalar(key)
        if isinstance(value, Mapping):
            if value:
                out.append(f"{pad}{k}:")
                mapping_lines(value, indent + 2, out)
            else:
                out.append(f"{pad}{k}: {{}}")
        else:
            out.append(f"{pad}{k}: {scalar(value)}")
