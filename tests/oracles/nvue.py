"""NVIDIA's NVUE object model as the judge of NVUE documents (PyPI `nvueschema`).

`nvueschema` holds pydantic models generated from NVIDIA's NVUE OpenAPI documents, one module per
Cumulus Linux release. pydantic ignores keys a model does not declare, so the tree is first walked
key by key (by the model's aliases, which are NVUE's key names); then the model validates every
value. The document is read as NVUE reads it: `on`/`off` stay text, only true/false are booleans.
"""

from __future__ import annotations

import importlib
import re
import types
import typing
from dataclasses import dataclass
from functools import cache
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError


class NvueLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """YAML 1.2's booleans: `on`, `off`, `yes` and `no` are text, as NVUE's model expects."""


NvueLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
NvueLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|false)$"), list("tf"))


@dataclass(frozen=True)
class NvueFinding:
    path: str  # NVUE path, e.g. /interface/swp1/ip
    problem: str


@cache
def model(release: str) -> type[BaseModel]:
    module = importlib.import_module("nvueschema.models.v" + release.replace(".", "_"))
    root: type[BaseModel] = module.NvueConfig
    return root


def set_tree(text: str) -> dict[str, Any]:
    """The `set` document of a startup file (a list of `- header:` and `- set:` documents)."""
    docs = yaml.load(text, Loader=NvueLoader)
    return next(d["set"] for d in docs if isinstance(d, dict) and "set" in d)


def check(tree: dict[str, Any], release: str) -> list[NvueFinding]:
    findings: list[NvueFinding] = []
    _walk(model(release), tree, "", findings)
    try:
        model(release).model_validate(tree)
    except ValidationError as exc:
        for err in exc.errors():
            where = "/" + "/".join(str(p) for p in err["loc"])
            findings.append(NvueFinding(where, err["msg"][:160]))
    return findings


def _members(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) for m in _members(a)]
    return [annotation]


def _walk(node: type[BaseModel], data: dict[str, Any], path: str, out: list[NvueFinding]) -> None:
    fields = {(f.alias or name): f for name, f in node.model_fields.items()}
    for key, value in data.items():
        field = fields.get(str(key))
        if field is None:
            out.append(NvueFinding(f"{path}/{key}", f"not a key of {path or '/'} in this release's object model"))
            continue
        _value(field.annotation, value, f"{path}/{key}", out)


def _value(annotation: Any, value: Any, path: str, out: list[NvueFinding]) -> None:
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel) and isinstance(value, dict):
            _walk(member, value, path, out)
            return
        if typing.get_origin(member) is dict and isinstance(value, dict):
            item = typing.get_args(member)[1]
            for key, sub in value.items():
                _value(item, sub, f"{path}/{key}", out)
            return
