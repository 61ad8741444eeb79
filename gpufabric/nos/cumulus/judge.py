"""NVIDIA's NVUE object model as the judge of NVUE documents (PyPI `nvueschema`, optional).

`nvueschema` holds pydantic models generated from NVIDIA's NVUE OpenAPI documents, one module per
Cumulus Linux release. pydantic ignores keys a model does not declare, so the tree is first walked
key by key (by the model's aliases, which are NVUE's key names); then the model validates every
value. The test suite judges every rendered document with it; `verify` judges the files on disk.
"""

from __future__ import annotations

import importlib
import re
import types
import typing
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from gpufabric.config.context import DeviceContext
from gpufabric.verify.facts import Finding, read_rendered
from gpufabric.verify.yaml_block import Lines, load_block_yaml


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
    tree: dict[str, Any] = next(d["set"] for d in docs if isinstance(d, dict) and "set" in d)
    return tree


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


@cache
def _fields(node: type[BaseModel]) -> dict[str, FieldInfo]:
    """A model's fields by NVUE key name: asked for on every port of every switch, built once."""
    return {(f.alias or name): f for name, f in node.model_fields.items()}


def _walk(node: type[BaseModel], data: dict[str, Any], path: str, out: list[NvueFinding]) -> None:
    fields = _fields(node)
    for key, value in data.items():
        field = fields.get(str(key))
        if field is None:
            out.append(NvueFinding(f"{path}/{key}", f"not a key of {path or '/'} in this release's object model"))
            continue
        _value(field.annotation, value, f"{path}/{key}", out)


def _value(annotation: Any, value: Any, path: str, out: list[NvueFinding]) -> None:
    if not isinstance(value, dict):
        return  # a leaf: the model's validation judges it
    for kind, target in _shapes(annotation):
        if kind == "model":
            _walk(target, value, path, out)
            return
        for key, sub in value.items():
            _value(target, sub, f"{path}/{key}", out)
        return


_SHAPES: dict[int, tuple[tuple[str, Any], ...]] = {}


def _shapes(annotation: Any) -> tuple[tuple[str, Any], ...]:
    """What a mapping may be under `annotation`: a model ("model", class) or a map of items ("dict",
    item annotation), in the union's order. Decided once per annotation: a leaf has thousands of keys."""
    found = _SHAPES.get(id(annotation))
    if found is None:
        shapes = []
        for member in _members(annotation):
            if isinstance(member, type) and issubclass(member, BaseModel):
                shapes.append(("model", member))
            elif typing.get_origin(member) is dict:
                shapes.append(("dict", typing.get_args(member)[1]))
        found = _SHAPES[id(annotation)] = tuple(shapes)
        _KEEP.append(annotation)  # an id is only unique while its object lives
    return found


_KEEP: list[Any] = []


def _read(text: str) -> tuple[dict[str, Any], Lines | None, int]:
    """The `set` tree, where its keys were written, and the index of the `set` document. The block
    reader is ~30x faster than PyYAML here; its values are PyYAML's, and gpufabric's writer quotes
    `on`/`off`, so both read them as text. Other YAML is read as NVUE reads it, without lines."""
    read = load_block_yaml(text)
    if read is not None:
        data, lines = read
        for index, doc in enumerate(data if isinstance(data, list) else []):
            if isinstance(doc, dict) and isinstance(doc.get("set"), dict):
                return doc["set"], lines, index
    return set_tree(text), None, 0


def _line(lines: Lines | None, tree: dict[str, Any], index: int, path: str) -> int:
    """The line of an NVUE path (`/interface/swp1/link/mtu`), else of its nearest written ancestor."""
    if lines is None:
        return 1
    keys: list[Any] = [index, "set"]
    node: Any = tree
    for part in path.strip("/").split("/"):
        if not isinstance(node, dict):
            break
        key = next((k for k in node if str(k) == part), None)
        if key is None:
            break
        keys.append(key)
        node = node[key]
    return lines.line(tuple(keys)) or 1


def judge(ctx: DeviceContext, path: Path) -> list[Finding]:
    """NVIDIA's model of the pinned release on the file: one finding per key or value it refuses, at its line."""
    device, release, text = ctx.device.name, ctx.release, read_rendered(path)
    try:
        tree, lines, index = _read(text)
    except (yaml.YAMLError, StopIteration, TypeError):
        return []  # not a startup document: `verify`'s own reader reports the parse error
    return [
        Finding(
            "vendor-nvue",
            device,
            path.name,
            _line(lines, tree, index, f.path),
            f"{f.path} as NVIDIA's NVUE object model of Cumulus Linux {release} has it",
            f.problem,
        )
        for f in check(tree, release)
    ]
