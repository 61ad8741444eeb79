"""Judge a CONFIG_DB document with SONiC's own YANG models (sonic-yang-models), through libyang.

CONFIG_DB keys rows `TABLE|a|b` and stores every value as a string; the models describe the same data
as `/sonic-x:sonic-x/TABLE/TABLE_LIST[a][b]` with typed leaves. This module maps one onto the other by
reading the models (never a table of its own), then lets libyang parse the result strictly: an unknown
table, key or field, a value outside its type, a dangling leafref and an unmet must/when all fail.
libyang (the C library and its Python binding) is imported on first use: rendering never needs it.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from gpufabric.errors import GpufabricError

# Tables SONiC keeps as one row of field -> value pairs that the models spell as an inner list
# (`DSCP_TO_TC_MAP_LIST[name=ROCE]/DSCP_TO_TC_MAP[dscp=26]/tc=3`): found from the models, not listed.


class ConfigDbError(ValueError, GpufabricError):
    """The document does not conform to SONiC's models: every reason, one a line."""


@cache
def models(folder: str) -> Any:
    """A libyang context with every SONiC model loaded: their must/when conditions refer across
    modules (sonic-port to sonic-device_metadata), so all are needed before any data is parsed."""
    import libyang

    ctx = libyang.Context(folder)
    for path in sorted(Path(folder).glob("*.yang")):
        ctx.load_module(path.stem)
    return ctx


def _tables(ctx: Any) -> dict[str, tuple[str, Any]]:
    """Table name -> (module, the table's container), for every module whose top container holds tables."""
    import libyang

    found: dict[str, tuple[str, Any]] = {}
    for module in ctx:
        for top in module.children():
            if top.nodetype() != libyang.SNode.CONTAINER:
                continue
            for table in top.children():
                if table.nodetype() == libyang.SNode.CONTAINER:
                    found[table.name()] = (module.name(), table)
    return found


_INTEGERS = {"int8", "int16", "int32", "uint8", "uint16", "uint32"}


def _value(snode: Any, text: Any) -> Any:
    """A CONFIG_DB string as RFC 7951 JSON encodes the leaf's type: 8-32 bit integers as numbers,
    64-bit ones and decimals as strings, booleans as true/false. A value that does not convert stays
    as it was, for libyang to refuse with its own message."""
    if not isinstance(text, str):
        return text
    return _typed(snode.type(), text)


def _typed(t: Any, text: str) -> Any:
    base = t.basename()
    if base == "leafref":
        return _typed(t.leafref_type(), text)
    if base == "union":
        for member in t.union_types():
            if member.basename() in _INTEGERS and _is_int(text):
                return int(text)
        return text
    if base in _INTEGERS and _is_int(text):
        return int(text)
    if base == "boolean" and text in ("true", "false"):
        return text == "true"
    if base == "empty":
        return [None]
    return text


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _children(snode: Any) -> dict[str, Any]:
    return {c.name(): c for c in snode.children()}


def _fields(snode: Any, row: dict[str, Any]) -> dict[str, Any]:
    """One row's fields as the list entry's or container's leaves; an unknown field is kept as is,
    and libyang's strict parse refuses it."""
    import libyang

    leaves = _children(snode)
    out: dict[str, Any] = {}
    for field, value in row.items():
        node = leaves.get(field)
        if node is None:
            out[field] = value
        elif node.nodetype() == libyang.SNode.LEAFLIST:
            items = value if isinstance(value, list) else [v for v in str(value).split(",") if v]
            out[field] = [_value(node, v) for v in items]
        else:
            out[field] = _value(node, value)
    return out


def _inner_list(lst: Any) -> Any | None:
    import libyang

    inner = [c for c in lst.children() if c.nodetype() == libyang.SNode.LIST]
    return inner[0] if len(inner) == 1 else None


def _table(name: str, container: Any, rows: dict[str, Any]) -> dict[str, Any]:
    import libyang

    children = _children(container)
    lists = [c for c in children.values() if c.nodetype() == libyang.SNode.LIST]
    out: dict[str, Any] = {}
    for key, row in rows.items():
        if key in children and children[key].nodetype() == libyang.SNode.CONTAINER:
            out[key] = _fields(children[key], row)
            continue
        parts = key.split("|")
        matching = [lst for lst in lists if len(list(lst.keys())) == len(parts)]
        if not matching:
            raise ConfigDbError(f"{name}|{key}: no list of {name} is keyed by {len(parts)} part(s)")
        lst = matching[0]
        entry = {k.name(): _value(k, v) for k, v in zip(lst.keys(), parts, strict=True)}
        inner = _inner_list(lst)
        leaves = _children(lst)
        if inner is not None and not set(row) & set(leaves):
            # a map table: each field -> value pair is one entry of the inner list
            key_leaf = next(iter(inner.keys()))
            value_leaf = next(c for c in inner.children() if c.name() != key_leaf.name())
            entry[inner.name()] = [
                {key_leaf.name(): _value(key_leaf, f), value_leaf.name(): _value(value_leaf, v)} for f, v in row.items()
            ]
        else:
            entry.update(_fields(lst, row))
        out.setdefault(lst.name(), []).append(entry)
    return out


def to_yang(ctx: Any, config: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The document as RFC 7951 JSON, and the tables no model describes."""
    tables = _tables(ctx)
    data: dict[str, Any] = {}
    unknown: list[str] = []
    for name, rows in sorted(config.items()):
        if name not in tables:
            unknown.append(name)
            continue
        module, container = tables[name]
        data.setdefault(f"{module}:{module}", {})[name] = _table(name, container, rows)
    return data, unknown


def validate(folder: Path, config: dict[str, Any]) -> None:
    """Raise ConfigDbError unless every table has a model and libyang's strict parse accepts the whole."""
    import libyang

    ctx = models(str(folder))
    data, unknown = to_yang(ctx, config)
    if unknown:
        raise ConfigDbError(f"tables no SONiC model describes: {', '.join(unknown)}")
    try:
        tree = ctx.parse_data_mem(json.dumps(data), "json", strict=True, no_state=True)
    except libyang.LibyangError as e:
        raise ConfigDbError(_reasons(ctx, e)) from None
    if tree is not None:
        tree.free()


def _reasons(ctx: Any, error: Exception) -> str:
    errors = [str(e) for e in getattr(ctx, "errors", lambda: [])()] if callable(getattr(ctx, "errors", None)) else []
    return "\n".join(errors) or str(error)
