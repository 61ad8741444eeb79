"""A fast reader for the plain block-style YAML that configuration trees are written in.

PyYAML builds a Python node, resolves a tag and constructs a value for every scalar: about 50 ms
for one NVUE startup document of a large leaf, a minute for a 32k-GPU fabric. NVUE documents
(ours, and what `nv config show -o yaml` prints) use a small part of YAML: one mapping entry
per line, indentation for nesting, a top-level sequence, `{}` for an empty object, plain or
quoted scalars. This reader takes that part line by line, recording each key's line as it goes.

Anything else (flow collections, block scalars, anchors, tags, comments after a value, a
duplicated key, tabs) makes it return None, and the caller reads the text with PyYAML. Plain
scalars are typed by PyYAML itself (once per distinct text), so both readers agree on every value;
tests hold the two to the same result on every rendered document.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Every line is one of: blank, a comment, `key:` or `key: value` (or `- key...` at the top), one
# match per line, in C. Keys and values are then checked by what they start with and contain.
_LINE = re.compile(r"^( *)(?:(- )?('(?:[^'\n]|'')*'|[^\s#:'][^:\n]*):(?: ([^\n]*))?|#[^\n]*|)$", re.M)
# What a plain scalar must not contain or start with to mean exactly its text (else: PyYAML decides).
_PLAIN_UNSAFE = re.compile(r"^[\-?:,\[\]{}#&*!|>'\"%@`]|: | #|:\Z|\t|\s\Z")
_SINGLE = re.compile(r"'(?:[^']|'')*'\Z")


class NotBlockYamlError(Exception):
    """The text uses YAML this reader leaves to PyYAML."""


class Lines:
    """Where each key and item was written, kept per mapping (no path tuple per key: a 32k fabric's
    documents have millions of keys, and only a finding asks for a line)."""

    def __init__(self, root: Any, by_container: dict[int, dict[Any, int]], first: int) -> None:
        self.root, self.by_container, self.first = root, by_container, first

    def line(self, path: tuple[Any, ...]) -> int | None:
        """The line of `path`, else of its nearest ancestor that has one."""
        node, found, by_container = self.root, self.first, self.by_container
        for part in path:
            where = by_container.get(id(node))
            number = where.get(part) if where is not None else None
            if number is None:
                break
            found, node = number, node[part]
        return found

    def lines_in(self, node: Any) -> dict[Any, int] | None:
        """The line of each key (or item) of `node`, a mapping or list of the data read."""
        return self.by_container.get(id(node))

    def as_dict(self) -> dict[tuple[Any, ...], int]:
        """Every path and its line, as gpufabric.intent.yaml_lines.load_yaml maps them."""
        out: dict[tuple[Any, ...], int] = {(): self.first}
        todo: list[tuple[Any, tuple[Any, ...]]] = [(self.root, ())]
        while todo:
            node, path = todo.pop()
            for part, number in self.by_container.get(id(node), {}).items():
                out[(*path, part)] = number
                todo.append((node[part], (*path, part)))
        return out


def load_block_yaml(text: str) -> tuple[Any, Lines] | None:
    """The data and where each part of it was written; None when the text is not in the subset
    (read it with PyYAML then)."""
    try:
        return _read(text)
    except NotBlockYamlError:
        return None


_KEYS: dict[str, str] = {}  # raw key -> key, for the keys every document repeats (bounded)
_VALUES: dict[str, Any] = {}


def _read(text: str) -> tuple[Any, Lines]:
    rows = _LINE.findall(text)
    if len(rows) != text.count("\n") + 1:
        raise NotBlockYamlError  # some line is none of the forms above
    keys_get, values_get = _KEYS.get, _VALUES.get
    by_container: dict[int, dict[Any, int]] = {}  # id(mapping or list) -> its keys' or items' lines
    root: Any = None
    first = 0
    items: list[Any] | None = None  # the top-level sequence, when the text is one
    top: dict[str, Any] = {}  # the top-level mapping, when the text is one
    # The open mappings, innermost last, with their keys' indent; the innermost is also kept in
    # level, parent and where: most lines add a key to the same mapping as the line before and skip
    # the branches below. One loop, no calls: it runs for every line of every rendered file.
    stack: list[tuple[int, dict[str, Any], dict[Any, int]]] = []
    level, parent, where = -1, top, by_container.setdefault(id(top), {})
    pending: str | None = None  # a `key:` of parent still waiting for its value
    number = 0
    for spaces, item, raw_key, raw_value in rows:
        number += 1
        if not raw_key:
            continue  # blank or comment
        if item:  # `- key...`: a new mapping in the top-level sequence
            if spaces or (root is not None and items is None):
                raise NotBlockYamlError  # only a top-level sequence of mappings
            if items is None:
                root = items = []
                first = number
                by_container[id(items)] = {}
            by_container[id(items)][len(items)] = number
            parent, where, level, pending = {}, {}, 2, None
            by_container[id(parent)] = where
            items.append(parent)
            stack = [(level, parent, where)]
        elif pending is not None or len(spaces) != level:
            indent = len(spaces)
            if pending is not None and indent > level:  # the first key of pending's mapping
                child: dict[str, Any] = {}
                parent[pending] = child
                where = by_container[id(child)] = {}
                level, parent = indent, child
                stack.append((level, parent, where))
            elif indent != level:  # back out to the mapping this key belongs to
                while stack and stack[-1][0] > indent:
                    stack.pop()
                if not stack:
                    if root is not None:
                        raise NotBlockYamlError
                    root, first = top, number
                    stack.append((indent, top, by_container[id(top)]))
                level, parent, where = stack[-1]
                if level != indent:
                    raise NotBlockYamlError
            pending = None
        key = keys_get(raw_key) or _key(raw_key)
        if key in parent:
            raise NotBlockYamlError  # PyYAML's reader reports the duplicate where it is
        where[key] = number
        if raw_value:
            value = values_get(raw_value)
            parent[key] = _value(raw_value) if value is None else value
        else:
            parent[key] = None
            pending = key
    return root, Lines(root, by_container, first or 1)


def _key(raw: str) -> str:
    if raw.startswith("'"):
        if not _SINGLE.match(raw):
            raise NotBlockYamlError
        return raw[1:-1].replace("''", "'")
    value = _plain(raw)
    if not isinstance(value, str):
        raise NotBlockYamlError  # a key PyYAML would read as a number or a boolean: leave it to PyYAML
    if len(_KEYS) < 1 << 13:
        _KEYS[raw] = value
    return value


def _value(raw: str) -> Any:
    if raw == "{}":
        return {}  # a new object each time: never cached
    if raw.startswith("'"):
        if not _SINGLE.match(raw):
            raise NotBlockYamlError
        return raw[1:-1].replace("''", "'")
    value = _plain(raw)
    if len(_VALUES) < 1 << 13 and value is not None:
        _VALUES[raw] = value
    return value


# PyYAML's own implicit resolvers (first character -> tag patterns): a plain scalar none of them
# claims is text, which is most of a configuration; the others are constructed by PyYAML.
_RESOLVERS: dict[str | None, list[tuple[str, re.Pattern[str]]]] = yaml.resolver.Resolver.yaml_implicit_resolvers


def _plain(raw: str) -> Any:
    """What YAML makes of a plain scalar: PyYAML's resolver decides, its constructor builds non-text."""
    if _PLAIN_UNSAFE.search(raw):
        raise NotBlockYamlError
    if not any(pattern.match(raw) for _, pattern in (*_RESOLVERS.get(raw[0], ()), *_RESOLVERS.get(None, ()))):
        return raw
    value = yaml.load(raw, Loader=_Loader)  # the safe (C) loader
    if isinstance(value, (dict, list)) or (value is None and raw not in ("null", "~", "Null", "NULL")):
        raise NotBlockYamlError
    return value
