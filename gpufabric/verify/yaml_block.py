"""A fast reader for the plain block-style YAML that configuration trees are written in.

PyYAML builds a Python node, resolves a tag and constructs a value for every scalar: about 50 ms
for one NVUE startup document of a large leaf, a minute for a 32k-GPU fabric. NVUE documents
(ours, and what `nv config show -o yaml` prints) use a small part of YAML: one mapping entry
per line, indentation for nesting, a top-level sequence, `{}` for an empty object, plain or
quoted scalars. This reader takes that part line by line, recording each key's line as it goes.
Configuration text says the same lines over and over (`type: swp` on every port of every switch):
each distinct line is matched and typed once, then looked up.

Anything else (flow collections, block scalars, anchors, tags, comments after a value, a
duplicated key, tabs) makes it return None, and the caller reads the text with PyYAML. Plain
scalars are typed by PyYAML itself (once per distinct line), so both readers agree on every value;
tests hold the two to the same result on every rendered document.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from gpufabric.errors import GpufabricError

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# What a plain scalar must not contain or start with to mean exactly its text (else: PyYAML decides).
_PLAIN_UNSAFE = re.compile(r"^[\-?:,\[\]{}#&*!|>'\"%@`]|: | #|:\Z|\t|\s\Z")
_SINGLE = re.compile(r"'(?:[^']|'')*'\Z")


class NotBlockYamlError(GpufabricError):
    """The text uses YAML this reader leaves to PyYAML."""


class Lines:
    """Where each key and item was written, kept per mapping (no path tuple per key: a 32k fabric's
    documents have millions of keys, and only a finding asks for a line)."""

    def __init__(self, root: Any, by_container: dict[int, dict[Any, int]], first: int) -> None:
        self.root, self.by_container, self.first = root, by_container, first

    @classmethod
    def of_paths(cls, root: Any, paths: dict[tuple[Any, ...], int]) -> Lines:
        """The same from a path -> line map (PyYAML's reader, gpufabric.yaml_lines). Its paths
        name keys by their text; a key whose text differs from its value (`on:` is True) takes the
        line of its mapping. Every key of every mapping or list has a line."""
        by_container: dict[int, dict[Any, int]] = {}
        todo: list[tuple[Any, tuple[Any, ...], int]] = [(root, (), paths.get((), 1))]
        while todo:
            node, path, number = todo.pop()
            if id(node) in by_container or not isinstance(node, (dict, list)):
                continue  # a scalar, or a node seen through an alias
            where = by_container[id(node)] = {}
            for key, child in node.items() if isinstance(node, dict) else enumerate(node):
                child_path = (*path, key if isinstance(node, list) else str(key))
                where[key] = paths.get(child_path, number)
                todo.append((child, child_path, where[key]))
        return cls(root, by_container, paths.get((), 1))

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

    def line_in(self, node: Any, key: Any) -> int:
        """The line of `key` in `node`, a mapping or list of the data read that holds it."""
        return self.by_container[id(node)][key]

    def as_dict(self) -> dict[tuple[Any, ...], int]:
        """Every path and its line, as gpufabric.yaml_lines.load_yaml maps them."""
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


# One line of the subset, matched whole: `key:`, `key: value`, `- key...` at the top, blank or comment.
# Keys and values are then checked by what they start with and contain.
_ROW = re.compile(r"( *)(?:(- )?('(?:[^'\n]|'')*'|[^\s#:'][^:\n]*):(?: ([^\n]*))?|#[^\n]*|)")
_OPEN = object()  # the value of a `key:` line: a mapping follows (or nothing, and it is null)
_EMPTY = object()  # `{}`: a new mapping each time it is read, never a shared one
Row = tuple[int, bool, "str | None", Any]  # indent, `- ` item, key (None: blank or comment), value
# Rows of the lines seen before: configuration text repeats the same lines (`type: swp`, `up: {}`)
# from port to port and switch to switch, and one look-up replaces matching and typing the line.
_ROWS: dict[str, Row] = {}
ROWS_KEPT = 1 << 15  # lines (a few MB): then the rows are dropped, and the lines that repeat return
ROW_KEPT_CHARS = 100  # longer lines are read each time
_KEYS: dict[str, str] = {}  # raw key -> key: the keys of the lines not kept whole


def _row(line: str) -> Row:
    m = _ROW.fullmatch(line)
    if m is None:
        raise NotBlockYamlError  # the line is none of the forms above
    spaces, item, raw_key, raw_value = m.groups("")
    row: Row
    if not raw_key:
        row = (0, False, None, None)
    else:
        key = _KEYS.get(raw_key) or _key(raw_key)
        value = _OPEN if not raw_value else _EMPTY if raw_value == "{}" else _value(raw_value)
        row = (len(spaces), bool(item), key, value)
    if len(line) <= ROW_KEPT_CHARS:
        if len(_ROWS) >= ROWS_KEPT:
            _ROWS.clear()  # the lines that repeat come back at once; the others had their chance
        _ROWS[line] = row
    return row


def _read(text: str) -> tuple[Any, Lines]:
    rows_get = _ROWS.get
    by_container: dict[int, dict[Any, int]] = {}  # id(mapping or list) -> its keys' or items' lines
    root: Any = None
    first = 0
    items: list[Any] | None = None  # the top-level sequence, when the text is one
    top: dict[str, Any] = {}  # the top-level mapping, when the text is one
    # The open mappings, innermost last, with their keys' indent; the innermost is also kept in
    # level, parent and where: most lines add a key to the same mapping as the line before and skip
    # the branches below. One loop, one look-up per line: it runs for every line of every rendered file.
    stack: list[tuple[int, dict[str, Any], dict[Any, int]]] = []
    level, parent, where = -1, top, by_container.setdefault(id(top), {})
    pending: str | None = None  # a `key:` of parent still waiting for its value
    number = 0
    for line in text.split("\n"):
        number += 1
        indent, item, key, value = rows_get(line) or _row(line)
        if key is None:
            continue  # blank or comment
        if item:  # `- key...`: a new mapping in the top-level sequence
            if indent or (root is not None and items is None):
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
        elif pending is not None or indent != level:
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
        if key in parent:
            raise NotBlockYamlError  # PyYAML's reader reports the duplicate where it is
        where[key] = number
        if value is _OPEN:
            parent[key] = None
            pending = key
        elif value is _EMPTY:
            parent[key] = {}
        else:
            parent[key] = value
    return root, Lines(root, by_container, first or 1)


def _quoted(raw: str) -> str:
    inner = raw[1:-1]
    if len(raw) > 1 and raw[-1] == "'" and "'" not in inner:
        return inner  # the common case, without the pattern
    if not _SINGLE.match(raw):
        raise NotBlockYamlError
    return inner.replace("''", "'")


def _key(raw: str) -> str:
    if raw[0] == "'":
        return _quoted(raw)
    value = _plain(raw)
    if not isinstance(value, str):
        raise NotBlockYamlError  # a key PyYAML would read as a number or a boolean: leave it to PyYAML
    if len(_KEYS) < 1 << 13:
        _KEYS[raw] = value
    return value


def _value(raw: str) -> Any:
    if raw[0] == "'":
        return _quoted(raw)
    return _plain(raw)


# PyYAML's own implicit resolvers, as one pattern: a plain scalar none of them matches is text,
# which is most of a configuration; the others are typed by PyYAML. Each resolver is filed under
# the first characters it can match, and its pattern says so itself: the union claims no less.
_RESOLVERS: dict[str | None, list[tuple[str, re.Pattern[str]]]] = yaml.resolver.Resolver.yaml_implicit_resolvers
_IMPLICIT = re.compile(
    "|".join(
        sorted(
            {f"(?x:{p.pattern})" if p.flags & re.X else f"(?:{p.pattern})" for rs in _RESOLVERS.values() for _, p in rs}
        )
    )
)


def _plain(raw: str) -> Any:
    """What YAML makes of a plain scalar: PyYAML's resolver decides, its constructor builds non-text."""
    if _PLAIN_UNSAFE.search(raw):
        raise NotBlockYamlError
    if _IMPLICIT.match(raw) is None:
        return raw
    if raw.isdigit() and raw.isascii() and (raw[0] != "0" or len(raw) == 1):
        return int(raw)  # a decimal integer (a leading 0 is YAML 1.1's octal: PyYAML's to read)
    try:
        value = yaml.load(raw, Loader=_Loader)  # the safe (C) loader
    except yaml.YAMLError as exc:  # `<<` or `=` alone: a tag the safe loader has no constructor for
        raise NotBlockYamlError from exc
    if isinstance(value, (dict, list)) or (value is None and raw not in ("null", "~", "Null", "NULL")):
        raise NotBlockYamlError
    return value
