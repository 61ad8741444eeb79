"""YAML loading that remembers where every field was written.

PyYAML's composed node tree carries marks; we walk it once beside the constructed
data so any error, from the schema or from a cross-field rule, can name its line.
"""

from __future__ import annotations

from typing import Any

import yaml

from gpufabric.intent.errors import IntentError, Path, Problem

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # type: ignore[assignment]


def load_yaml(text: str, file: str) -> tuple[Any, dict[Path, int]]:
    """Parse `text`; return the data and a map from field path to 1-based line."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = Problem((), f"not valid YAML: {exc.problem or exc.context}", "fix the syntax at the line shown")
        raise IntentError(file, [problem], {(): line} if line else {}) from None
    except yaml.YAMLError as exc:
        raise IntentError(file, [Problem((), f"not valid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    lines: dict[Path, int] = {}
    problems: list[Problem] = []
    if node is not None:
        _walk(node, (), lines, problems, set())
    if problems:
        raise IntentError(file, problems, lines)
    return data, lines


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
