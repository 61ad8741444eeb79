"""YAML loading that remembers where every field was written.

PyYAML's composed node tree carries marks; we walk it once beside the constructed
data so any error, from the schema or from a cross-field rule, can name its line.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpufabric.intent.errors import IntentError, Path, Problem

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # type: ignore[assignment]


# Bounds on what one document may cost to read: an intent is a few hundred lines; 470 bytes of
# nested aliases expand to a billion values, and a thousand nested brackets exhaust the stack.
MAX_BYTES = 4 << 20
MAX_DEPTH = 64
MAX_VALUES = 1_000_000  # after aliases are expanded


def load_yaml(text: str, file: str) -> tuple[Any, dict[Path, int]]:
    """Parse `text`; return the data and a map from field path to 1-based line."""
    if len(text) > MAX_BYTES:
        problem = Problem((), f"is {len(text) >> 20} MiB; an intent is at most {MAX_BYTES >> 20} MiB", "split it")
        raise IntentError(file, [problem])
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _bounded(node, file)
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = Problem((), f"not valid YAML: {exc.problem or exc.context}", "fix the syntax at the line shown")
        raise IntentError(file, [problem], {(): line} if line else {}) from None
    except yaml.YAMLError as exc:
        raise IntentError(file, [Problem((), f"not valid YAML: {exc}")]) from None
    except RecursionError:
        raise IntentError(file, [Problem((), f"nests deeper than {MAX_DEPTH} levels")]) from None
    finally:
        loader.dispose()
    lines: dict[Path, int] = {}
    problems: list[Problem] = []
    if node is not None:
        _walk(node, (), lines, problems, set())
    if problems:
        raise IntentError(file, problems, lines)
    return data, lines


def _bounded(root: yaml.Node, file: str) -> None:
    """Refuse, before anything is built from it, a document too deep, too large once its aliases are
    expanded, or holding an alias to one of its own ancestors. Iterative: no recursion to exhaust."""
    values: dict[int, int] = {}  # node -> values it expands to
    open_nodes: set[int] = set()
    todo: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while todo:
        node, depth, done = todo.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            values[key] = 1 + sum(values[id(c)] for c in _children(node))
            if values[key] > MAX_VALUES:
                _refuse(file, node, f"expands to more than {MAX_VALUES:,} values (nested aliases?)")
            continue
        if key in values:
            continue
        if key in open_nodes:
            _refuse(file, node, "holds an alias to one of its own enclosing entries")
        if depth > MAX_DEPTH:
            _refuse(file, node, f"nests deeper than {MAX_DEPTH} levels")
        open_nodes.add(key)
        todo.append((node, depth, True))
        todo.extend((child, depth + 1, False) for child in _children(node))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _refuse(file: str, node: yaml.Node, message: str) -> None:
    hint = "write the values out, without deep or recursive aliases"
    raise IntentError(file, [Problem((), message, hint)], {(): node.start_mark.line + 1})


def _walk(node: yaml.Node, path: Path, lines: dict[Path, int], problems: list[Problem], seen: set[int]) -> None:
    # Aliases share node objects; visiting each once keeps a self-referencing
    # document from recursing forever.
    if id(node) in seen:
        return
    seen.add(id(node))
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            child = (*path, key)
            if key in keys:
                problems.append(Problem(child, f"'{key}' is given twice", "keep one of the two entries"))
            keys.add(key)
            lines[child] = key_node.start_mark.line + 1
            _walk(value_node, child, lines, problems, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*path, i), lines, problems, seen)
