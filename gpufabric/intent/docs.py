"""docs/intent.md, generated from the schema so the reference can never drift from the code."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from gpufabric.intent.model import Intent
from gpufabric.intent.types import AsnRange, SecretRef

# Types users write as one value, though they are models inside.
_SCALAR_MODELS: dict[type, str] = {AsnRange: "ASN range `FIRST-LAST`", SecretRef: "`{env: NAME}` or `{vault: NAME}`"}


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation in _SCALAR_MODELS:
        return _SCALAR_MODELS[annotation]
    if origin is typing.Annotated:
        base = args[0]
        meta = " ".join(type(m).__name__ for m in args[1:])
        if "PlainSerializer" in meta and base is int:
            return "speed (e.g. `400G`)"
        if "PlainSerializer" in meta and base is float:
            return "ratio (e.g. `3:1`)"
        return _type_name(base)
    if origin in (typing.Union, types.UnionType):
        parts = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(parts)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"mapping {_type_name(args[0])} → {_type_name(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    return {str: "string", int: "integer", bool: "boolean", float: "number"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )


def _field_type(field: Any) -> str:
    """Pydantic moves Annotated metadata off the annotation; the validator tells speeds and ratios apart."""
    for m in field.metadata:
        func = getattr(getattr(m, "func", None), "__name__", "")
        if func == "_parse_speed":
            return "speed (e.g. `400G`)" + (" or none" if "None" in str(field.annotation) else "")
        if func == "_parse_ratio":
            return "ratio (e.g. `3:1`)"
    return _type_name(field.annotation)


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    seen: list[type[BaseModel]] = []

    def visit(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation in seen or annotation in _SCALAR_MODELS:
                return
            seen.append(annotation)
            for f in annotation.model_fields.values():
                visit(f.annotation)
            return
        for arg in typing.get_args(annotation):
            visit(arg)

    visit(root)
    return seen


def _default(field: Any) -> str:
    if field.is_required():
        return "**required**"
    value = field.default_factory() if field.default_factory is not None else field.default
    if isinstance(value, BaseModel):
        return "its own defaults"
    if value is None or value is PydanticUndefined:
        return "—"
    if value == "":
        return '`""`'
    if isinstance(value, list):
        return f"`[{', '.join(map(str, value))}]`"
    return "`{}`" if value == {} else f"`{value}`"


def _limits(field: Any) -> str:
    lo = hi = None
    for m in field.metadata:
        lo = getattr(m, "ge", lo)
        hi = getattr(m, "le", hi)
    if lo is None and hi is None:
        return ""
    return f" ({'' if lo is None else lo}..{'' if hi is None else hi})"


def _first_line(doc: str | None) -> str:
    lines = (doc or "").strip().splitlines()
    return lines[0] if lines else ""


def render() -> str:
    lines = [
        "# The intent file (`inventory/fabric.yml`)",
        "",
        "Generated from the schema by `gpufabric docs`; do not edit by hand.",
        "",
        "Every section below is a mapping; unknown fields are errors (with a 'did you mean').",
        "Rules that relate several fields are listed at the end.",
        "",
    ]
    for model in _models(Intent):
        lines += [
            f"## {model.__name__}",
            "",
            _first_line(model.__doc__),
            "",
            "| field | type | default | description |",
            "| --- | --- | --- | --- |",
        ]
        for name, field in model.model_fields.items():
            desc = (field.description or "").replace("|", "\\|")
            lines.append(f"| `{name}` | {_field_type(field)}{_limits(field)} | {_default(field)} | {desc} |")
        lines.append("")
    lines += ["## Cross-field rules", ""] + [f"- {rule}" for rule in RULES] + [""]
    return "\n".join(lines)


RULES = [
    "Server group names, and the server names their patterns make, are unique; `naming` contains `{index}`.",
    "Every plane a server group lists under `nics` is defined under `planes`; every data plane has servers.",
    "`rails` number 1..n, one per interface; the `oob` NIC set has exactly one interface.",
    "A data plane has `leaf` and `spine`; `superspine` exactly when `tiers: 3`; `border` only on business, "
    "together with the `border` section; `mgmt` only on oob.",
    "A breakout splits a port 1, 2, 4 or 8 ways; both ends of every link run at one speed "
    "(NIC = leaf downlink, leaf uplink = spine downlink, spine uplink = superspine downlink).",
    "A leaf has ports for `unit_nodes` host ports plus the uplinks the oversubscription target needs; spines "
    "(and superspines) have ports for every leaf's uplinks, spread evenly.",
    "`host_mtu` is not above the plane's `mtu` nor the leaf platform's maximum (EOS 9214).",
    "A plane with `carries_roce: true` names a QoS profile with `lossless: true`; RoCE and CNP use different "
    "DSCPs and priorities; ECN minimum is below maximum.",
    "Address pools do not overlap and are large enough (loopbacks, /31s, host ports for full units, edge "
    "links, one OOB address per switch and server); ASN pools are private, do not overlap, and hold one ASN "
    "per leaf and border plus one per spine group; edge router ASNs are outside every pool.",
    "`host_links: lacp` needs two NICs per server and a leaf platform with MLAG (cumulus, eos, nxos).",
    "Secrets are references (`{env: NAME}` or `{vault: NAME}`), never values; switches have a password or key.",
]
