"""YAML for the exports (containerlab, Ansible inventory, Kubernetes labels), written line by line.

PyYAML's representer is Python even with libyaml's emitter: on a 32k-GPU fabric it spent 8-14 s
per export walking a million nodes. The exports hold only mappings, lists, text, whole numbers,
booleans and null, which this writer emits in PyYAML's block style (lists at their key's
indentation, keys in the order given). Text goes through the NVUE writer's quoting, so every
value reads back as exactly what was written (the tests hold it to PyYAML).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import yaml

from gpufabric.platforms.yaml_text import scalar


def dump_yaml(data: Any) -> str:
    """`data` as a YAML block document (a mapping or a list at the top), ending in a newline."""
    out: list[str] = []
    if isinstance(data, Mapping):
        _mapping(data, "", out) if data else out.append("{}")
    elif isinstance(data, list):
        _sequence(data, "", out) if data else out.append("[]")
    else:
        out.append(_scalar(data))
    return "\n".join(out) + "\n"


class UnsafeText(str):
    """Text Ansible must take literally, never as a template: written with YAML's `!unsafe` tag."""

    __slots__ = ()


def _scalar(value: object) -> str:
    if isinstance(value, UnsafeText):
        return "!unsafe " + scalar(str(value))
    if value is None:
        return "null"
    if type(value) is float:
        return _float(value)
    if isinstance(value, str | int):  # bool is an int: scalar() writes true/false
        return scalar(value)
    raise TypeError(f"the export writer takes mappings, lists, text, numbers, booleans and null, not {type(value)}")


def _float(value: float) -> str:
    """As PyYAML writes it (`.inf`, `1.0e+20`): YAML 1.1 readers need the dot and the signed exponent."""
    if math.isfinite(value) and "e" not in repr(value):
        return repr(value)
    return str(yaml.safe_dump(value)).removesuffix("\n...\n").strip()


def _key(key: object) -> str:
    if type(key) is str:
        return scalar(key)
    if key is None or isinstance(key, int | float):
        return _scalar(key)
    raise TypeError(f"the export writer takes text and number keys, not {type(key)}")


def _mapping(tree: Mapping[Any, Any], pad: str, out: list[str]) -> None:
    deeper = pad + "  "
    for key, value in tree.items():
        head = f"{pad}{_key(key)}:"
        if isinstance(value, Mapping):
            if value:
                out.append(head)
                _mapping(value, deeper, out)
            else:
                out.append(head + " {}")
        elif isinstance(value, list):
            if value:
                out.append(head)
                _sequence(value, pad, out)  # PyYAML's style: a list sits at its key's indentation
            else:
                out.append(head + " []")
        else:
            out.append(f"{head} {_scalar(value)}")


def _sequence(items: list[Any], pad: str, out: list[str]) -> None:
    for item in items:
        if isinstance(item, Mapping) and item:
            # The first key shares the dash's line; the rest line up under it.
            inner: list[str] = []
            _mapping(item, pad + "  ", inner)
            out.append(f"{pad}- {inner[0][len(pad) + 2 :]}")
            out.extend(inner[1:])
        elif isinstance(item, list) and item:
            inner = []
            _sequence(item, pad + "  ", inner)
            out.append(f"{pad}- {inner[0][len(pad) + 2 :]}")
            out.extend(inner[1:])
        elif isinstance(item, Mapping):
            out.append(f"{pad}- {{}}")
        elif isinstance(item, list):
            out.append(f"{pad}- []")
        else:
            out.append(f"{pad}- {_scalar(item)}")
