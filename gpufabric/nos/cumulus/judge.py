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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import SchemaValidator

from gpufabric.config.context import DeviceContext
from gpufabric.nos.cumulus.verify import read_block
from gpufabric.verify.facts import Finding, read_rendered
from gpufabric.verify.yaml_block import Lines


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
    """The release's root model, its validator built; the 740 models below it are left unbuilt.

    pydantic builds a core schema and a validator for every model class as the module defines it,
    each over the models below it: most of the second it takes to import a release. The root's
    validator holds the whole tree's schema on its own (its nested objects are made without their
    classes' validators), and the key walk reads only the classes' fields, which pydantic collects
    either way; so the classes are defined with pydantic's `defer_build` and only the root is built.
    Its schema, and so its verdicts and messages, are the ones the classes would have built
    (tests/nos/cumulus/test_judge_deferred_build.py holds them equal)."""
    with _deferred_build():
        module = importlib.import_module("nvueschema.models.v" + release.replace(".", "_"))
    root: type[BaseModel] = module.NvueConfig
    if not root.__pydantic_complete__:
        root.model_rebuild(raise_errors=True)
    return root


@contextmanager
def _deferred_build() -> Iterator[None]:
    """Model classes defined meanwhile leave their schema and validator until first used: pydantic
    reads `defer_build` from the bases' config, and the generated models derive from BaseModel
    itself (no config of their own). Only while the module is imported, in this one thread."""
    saved = BaseModel.model_config
    BaseModel.model_config = ConfigDict(**saved, defer_build=True)
    try:
        yield
    finally:
        BaseModel.model_config = saved


@cache
def _screen(root: type[BaseModel]) -> SchemaValidator | None:
    """The release's model as a validator of plain dicts that refuses unknown keys: every field keeps
    the model's own schema (types, patterns, enums, NVIDIA's validators), but a model becomes a typed
    dict without defaults and without room for keys it does not declare.

    The model fills each of its fields' defaults on every object (an NVUE interface has dozens of
    fields, a switch a couple of hundred interfaces): four fifths of the time of judging a fabric's
    documents went there, and most of the rest to walking every key in Python. A document the screen
    passes has nothing for either to say: it holds only keys the model declares (where the key walk
    looks, the screen looks with the same model, as no union of the model can take a mapping), and
    the screen accepts a subset of what the model accepts. A document it refuses is judged as before,
    by the walk and the model itself, whose messages the findings quote. None where a union could take
    a mapping (no release so far): then every document is judged the slow way.
    tests/test_verify_bulk.py holds the screen and the model to the same verdicts."""
    schema = root.__pydantic_core_schema__
    return SchemaValidator(_plain(schema)) if _unions_hold_no_mapping(schema) else None


_MAPPINGS = {"model", "model-fields", "typed-dict", "dict", "definitions", "definition-ref"}


def _unions_hold_no_mapping(schema: Any, in_union: bool = False) -> bool:
    """No choice of a union holds a model or a map, however deep: where the key walk follows a model,
    the model's own validation then follows the same one."""
    if isinstance(schema, list):
        return all(_unions_hold_no_mapping(s, in_union) for s in schema)
    if not isinstance(schema, dict):
        return True
    if in_union and schema.get("type") in _MAPPINGS:
        return False
    in_union = in_union or schema.get("type") == "union"
    return all(_unions_hold_no_mapping(v, in_union) for v in schema.values())


def _plain(schema: Any) -> Any:
    """A core schema with every model (`model` around `model-fields`) made a `typed-dict`."""
    if isinstance(schema, list):
        return [_plain(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if schema.get("type") != "model" or not _plain_model(schema):
        return {key: _plain(value) for key, value in schema.items()}
    fields = {}
    for name, spec in schema["schema"]["fields"].items():
        inner = spec["schema"]
        required = inner.get("type") != "default"  # a field without a default stays required
        if set(inner) == {"type", "schema", "default"}:  # a plain default: an absent key stays absent
            inner = inner["schema"]
        field = {"type": "typed-dict-field", "schema": _plain(inner), "required": required}
        if "validation_alias" in spec:
            field["validation_alias"] = spec["validation_alias"]
        fields[name] = field
    plain = {"type": "typed-dict", "fields": fields, "extra_behavior": "forbid"}
    if "ref" in schema:
        plain["ref"] = schema["ref"]
    return plain


_MODEL_KEYS = {"type", "cls", "schema", "config", "ref", "metadata", "custom_init", "root_model"}
_FIELDS_KEYS = {"type", "fields", "model_name", "computed_fields"}
_FIELD_KEYS = {"type", "schema", "validation_alias", "serialization_alias", "metadata"}


def _plain_model(schema: dict[str, Any]) -> bool:
    """A model that only holds its fields: no own __init__, root, post-init hook, extra-key policy or
    field option beyond an alias (anything else keeps the model as it is, slower but the same)."""
    inner = schema["schema"]
    return (
        set(schema) <= _MODEL_KEYS
        and not schema.get("custom_init")
        and not schema.get("root_model")
        and set(schema.get("config") or {}) <= {"title"}
        and inner.get("type") == "model-fields"
        and set(inner) <= _FIELDS_KEYS
        and all(set(spec) <= _FIELD_KEYS for spec in inner["fields"].values())
    )


def warm(release: str) -> None:
    """The release's model and screen built before `verify` forks its workers: one build, shared."""
    _screen(model(release))


def set_tree(text: str) -> dict[str, Any]:
    """The `set` document of a startup file (a list of `- header:` and `- set:` documents)."""
    docs = yaml.load(text, Loader=NvueLoader)
    tree: dict[str, Any] = next(d["set"] for d in docs if isinstance(d, dict) and "set" in d)
    return tree


def check(tree: dict[str, Any], release: str) -> list[NvueFinding]:
    root = model(release)
    screen = _screen(root)
    if screen is not None:
        try:
            screen.validate_python(tree)
            return []  # only declared keys, every value as the model has it
        except ValidationError:
            pass  # the walk and the model itself say what is wrong, in their own words
    findings: list[NvueFinding] = []
    _walk(root, tree, "", findings)
    try:
        root.model_validate(tree)
    except ValidationError as exc:
        for err in exc.errors():
            where = nvue_path(err["loc"])
            findings.append(NvueFinding(where, err["msg"][:160]))
    return findings


# pydantic names a validator that wraps a union member in the error's location, with the function's memory
# address (`function-before[functools.partial(<function _validate_string at 0x7f..>, ...)]`): not a step of
# the NVUE path, and different on every run.
_VALIDATOR_STEP = re.compile(r"^function-(?:before|after|wrap|plain)\[")


def nvue_path(loc: tuple[int | str, ...]) -> str:
    """The NVUE path of a model error's location, without the validators pydantic names in it."""
    return "/" + "/".join(str(step) for step in loc if not _VALIDATOR_STEP.match(str(step)))


def _members(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(annotation) for m in _members(a)]
    return [annotation]


# What a mapping may be at a place in the model: a model ("model", class), a map of items ("dict",
# the items' shape), or None where the model holds no mapping (a leaf: its validation judges it).
Shape = tuple[str, Any] | None
_UNKNOWN: Shape = ("unknown", None)


@cache
def _fields(node: type[BaseModel]) -> dict[str, Shape]:
    """A model's fields by NVUE key name, each as its shape: asked for on every port of every switch,
    decided once per model (a union takes its first model or map, as NVUE's model reads it)."""
    return {(f.alias or name): _shape(f.annotation) for name, f in node.model_fields.items()}


def _shape(annotation: Any) -> Shape:
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            return ("model", member)  # its fields are looked up when a document reaches it
        if typing.get_origin(member) is dict:
            return ("dict", _shape(typing.get_args(member)[1]))
    return None


def _walk(node: type[BaseModel], data: dict[str, Any], path: str, out: list[NvueFinding]) -> None:
    fields = _fields(node)
    for key, value in data.items():
        shape = fields.get(key if type(key) is str else str(key), _UNKNOWN)
        if shape is _UNKNOWN:
            out.append(NvueFinding(f"{path}/{key}", f"not a key of {path or '/'} in this release's object model"))
        elif shape is not None and isinstance(value, dict):  # a leaf: the model's validation judges it
            _value(shape, value, f"{path}/{key}", out)


def _value(shape: tuple[str, Any], value: dict[str, Any], path: str, out: list[NvueFinding]) -> None:
    kind, target = shape
    if kind == "model":
        _walk(target, value, path, out)
    elif target is not None:  # a map whose items may hold keys of their own
        for key, sub in value.items():
            if isinstance(sub, dict):
                _value(target, sub, f"{path}/{key}", out)


def _read(text: str) -> tuple[dict[str, Any], Lines | None, int]:
    """The `set` tree, where its keys were written, and the index of the `set` document. The block
    reader is ~30x faster than PyYAML here; its values are PyYAML's, and gpufabric's writer quotes
    `on`/`off`, so both read them as text. Other YAML is read as NVUE reads it, without lines."""
    read = read_block(text)  # the reading `verify`'s reader just made of the same text
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
