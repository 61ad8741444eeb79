"""docs/intent.md, generated from the schema so the reference can never drift from the code."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from gpufabric.intent.model import Intent
from gpufabric.intent.rules import MAX_GPU_SERVERS, MAX_OTHER_SERVERS
from gpufabric.intent.types import AsnRange, SecretRef
from gpufabric.platforms import names as platform_names

# Storage quantities (gpufabric/intent/storage.py), by the validator that reads them.
_QUANTITIES = {
    "_parse_size": "size (e.g. `40TB`)",
    "_parse_rate": "rate (e.g. `2GB/s`)",
    "_parse_duration": "duration (e.g. `60s`)",
}
# Types users write as one value, though they are models inside.
_SCALAR_MODELS: dict[type, str] = {AsnRange: "ASN range `FIRST-LAST`", SecretRef: "`{env: NAME}` or `{vault: NAME}`"}


def _validator_names(metadata: typing.Iterable[Any]) -> set[str]:
    return {getattr(getattr(m, "func", None), "__name__", "") for m in metadata}


def _platforms() -> str:
    """A platform is a string the registry knows: the reference lists the ones registered where it is generated."""
    return " \\| ".join(f"`{n}`" for n in platform_names())


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation in _SCALAR_MODELS:
        return _SCALAR_MODELS[annotation]
    if origin is typing.Annotated:
        base = args[0]
        if "_registered_platform" in _validator_names(args[1:]):
            return _platforms()
        quantity = next((_QUANTITIES[n] for n in _validator_names(args[1:]) if n in _QUANTITIES), None)
        if quantity is not None:
            return quantity
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
    if "_registered_platform" in _validator_names(field.metadata):
        return _platforms()
    for m in field.metadata:
        func = getattr(getattr(m, "func", None), "__name__", "")
        if func == "_parse_speed":
            return "speed (e.g. `400G`)" + (" or none" if "None" in str(field.annotation) else "")
        if func == "_parse_ratio":
            return "ratio (e.g. `3:1`)"
        if func in _QUANTITIES:
            return _QUANTITIES[func]
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
        *EDITORS,
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
    lines += ["## YAML 1.2 and strict types", "", *YAML12, ""]
    lines += ["## Warnings", "", *WARNINGS_INTRO, ""] + [f"- {w}" for w in WARNINGS] + [""]
    return "\n".join(lines)


EDITORS = [
    "In an editor: `gpufabric schema` prints the intent's JSON Schema (draft 2020-12). Save it beside the "
    "intent and name it on the intent's first line, and an editor with the YAML language server (VS Code's "
    "YAML extension, Neovim's yamlls, ...) completes the fields and marks a wrong one as it is typed:",
    "",
    "```",
    "gpufabric schema > inventory/fabric.schema.json",
    "```",
    "",
    "```yaml",
    "# yaml-language-server: $schema=fabric.schema.json",
    "fabric:",
    "  name: lab",
    "```",
    "",
    "The path is relative to the intent file. The schema checks each field on its own (speeds such as "
    "`400G`, ratios such as `3:1`, patterns, ranges, unknown fields); the cross-field rules below are "
    "checked by `gpufabric check`. Print it again after upgrading gpufabric: the platforms it lists are "
    "the ones installed where it is printed.",
]

RULES = [
    "Server group names, and the server names their patterns make, are unique; `naming` contains `{index}` "
    "and never makes an all-numeric host name (RFC 1123).",
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
    "DSCPs and priorities; ECN minimum is below maximum. No profile is named like a YAML 1.1 boolean or null "
    "(`no`, `off`, `yes`, `true`, `null`, `none`, ...): `qos: no` would read as no QoS yet apply it.",
    "Address pools do not overlap and are large enough (loopbacks, /31s, host ports for full units, edge "
    "links, one OOB address per switch and server); ASN pools are private, do not overlap, and hold one ASN "
    "per leaf and border plus one per spine group; edge router ASNs are outside every pool. No ASN is "
    "reserved: 0 (RFC 7607), AS_TRANS 23456 (RFC 6793), 65535 and 4294967295 (RFC 7300), the documentation "
    "ranges 64496-64511 and 65536-65551 (RFC 5398).",
    "`routing.keepalive` and `routing.hold` are set together, the hold above the keepalive. With "
    "`routing.bfd.enabled`, the interval and multiplier are within what every platform of the plane takes "
    "(docs/configs.md); the refusal names the platform. `routing.max_med_on_startup` only on a plane whose "
    "switches' platform renders it (frr, sonic); the refusal names the others.",
    "`host_links: lacp` needs two NICs per server and a leaf platform with MLAG (cumulus, eos, nxos).",
    "`multiplane` is only on the compute plane, with `host_links: routed`; every group's compute interfaces "
    "divide evenly over its planes, without `rails`; every address pool cuts into one share of at least a "
    "/31 per plane (2, 4 or 8 shares) and the ASN pool holds at least one ASN per plane.",
    f"At most {MAX_GPU_SERVERS:,} GPU servers per intent ({MAX_GPU_SERVERS * 8:,} GPUs at 8 each, the "
    f"largest example) and {MAX_OTHER_SERVERS:,} storage and CPU servers beside them, counted at `build_out`; "
    "the counts are checked before any server is built.",
    "Pools and service addresses (NTP, syslog, DNS, the OOB gateway) are unicast: nothing in 0.0.0.0/8, "
    "127.0.0.0/8 (syslog excepted: it warns), 169.254.0.0/16, 224.0.0.0/4 or 240.0.0.0/4 (with "
    "255.255.255.255); no service on the management subnet's network or broadcast address.",
    "Servers, switches and edge routers have distinct names: they are hosts of one inventory.",
    "NIC names are not `lo`, `all` or `default` (the kernel's loopback and all-interface settings).",
    "No value holds template syntax (`{{`, `{%`, `{#`): Ansible would evaluate it when it reads the "
    "inventory. Exported inventories mark such text unsafe for Ansible all the same.",
    "Secrets are references (`{env: NAME}` or `{vault: NAME}`), never values; switches have a password or key.",
    "The SNMP `location` is text every platform of the fabric reads back exactly: no `;` with NX-OS switches "
    "(its command separator).",
]

YAML12 = [
    "The intent is read as YAML 1.2's core schema, not YAML 1.1 as PyYAML and Ansible read it, and every "
    "field has one type, never converted:",
    "",
    "- `yes`, `no`, `on`, `off` are text: `count: yes` or `roce_priority: on` is an error; booleans are "
    "`true` and `false`.",
    "- A number with a leading zero is refused (`roce_dscp: 024` was octal 20 in YAML 1.1): write `24`.",
    "- `1:30` is text, not the base-60 number 90; an unquoted `3:1` is an oversubscription ratio.",
    "- Whole-number fields take whole numbers only: `count: 4.0` and `count: '4'` are errors; a boolean "
    "field takes `true`/`false`, not `1`.",
    "- Tags beyond the core ones (`!!set`, `!!binary`, `!!timestamp`, `!!omap`, `!!python/...`) are refused; "
    "a `!!set` of interfaces would change rail order from run to run.",
    "- The file must be a regular file of at most 4 MiB (a FIFO or a device is refused before it is read).",
    "",
    "Error messages show control characters and terminal escape sequences escaped (`\\x1b`).",
]

WARNINGS_INTRO = [
    "Valid but dubious intents plan with a warning on stderr that names the file, line, field and the "
    "risk. Commands that read an intent (`check`, `plan`, `render`, `verify`, `export`) take `--strict` "
    "to exit 3 when there is any warning (after doing their work; errors still exit 2). Warnings:",
]

WARNINGS = [
    "An address listed twice under `ntp_servers`, `syslog_servers` or `dns_servers`.",
    "`ecn_min_bytes` under two frames of the plane's `host_mtu`, or further than 100 µs of queue at the "
    "plane's slowest RoCE port speed.",
    "`host_mtu` equal to the plane's `mtu`: no room for a tag or an encapsulation header.",
    "A `management_prefixes` entry wider than the OOB subnet it contains, or shorter than /8, or reaching "
    "into one of the fabric's own pools (its servers and switches would reach switch management).",
    "A port listed twice under `api_ports`.",
    "An NTP or syslog server in a data-plane pool (the management VRF has no route there) or named "
    "without an oob plane.",
    "A service address that is a switch's own loopback; syslog to 127.0.0.0/8.",
    "Non-ASCII look-alike letters (Cyrillic, Greek, fullwidth, ...) in `description` or the SNMP `location`.",
    "Plan warnings: oversubscription above its target, ECMP narrower than a leaf's uplinks, no `salt_key`.",
]
