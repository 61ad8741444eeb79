"""YAML loading that remembers where every field was written.

PyYAML's composed node tree carries marks; we walk it once beside the constructed
data so any error, from the schema or from a cross-field rule, can name its line.

The intent is read as YAML 1.2's core schema, not PyYAML's YAML 1.1: `yes`, `on` and `off`
are text, not booleans; `024` is not the octal 20, `1:30` not the base-60 number 90. Such
plain values stay text here, and the schema refuses text where it wants a number or a
boolean, saying what to write. Explicit tags beyond the core ones (`!!set`, `!!binary`,
`!!timestamp`, `!!python/...`) are refused before anything is built from them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import yaml

from gpufabric.errors import IntentError, Path, Problem

if TYPE_CHECKING:
    _Base = yaml.SafeLoader
else:
    _Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_TAG = "tag:yaml.org,2002:"
NULL, BOOL, INT, FLOAT, STR, SEQ, MAP = (_TAG + t for t in ("null", "bool", "int", "float", "str", "seq", "map"))
CORE_TAGS = frozenset({NULL, BOOL, INT, FLOAT, STR, SEQ, MAP})

# YAML 1.2.2, 10.3.2 (core schema), with two narrowings: a decimal with a leading zero (`024`) stays
# text, because YAML 1.1 readers (Ansible, PyYAML) take it for octal, and the schema then asks for `24`;
# hexadecimal and octal forms (0x1A, 0o17) stay text too, which no field of the intent takes.
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
# At most 20 digits: Python refuses to convert 4,300 digits or more (a ValueError, not a YAML error).
_INT = re.compile(r"^[-+]?(?:0|[1-9][0-9]{0,19})$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
# Template syntax Ansible evaluates on the controller wherever a value reaches its inventory.
TEMPLATE_MARKERS = ("{{", "{%", "{#")

# What a tag outside the core schema would have made, and what to write instead.
_OTHER_TAGS = {
    "set": ("a set, whose order changes from run to run (NIC order is rail order)", "write a list"),
    "binary": ("bytes decoded from base64", "write the text itself"),
    "timestamp": ("a date", "write the value as quoted text"),
    "omap": ("an ordered mapping", "write a plain mapping"),
    "pairs": ("a list of pairs", "write a plain mapping"),
    "merge": ("a merge of mappings", "write the fields out"),
}


class _CoreLoader(_Base):
    """PyYAML's safe loader, resolving and constructing plain values by YAML 1.2's core schema."""

    # Class-level tables, as PyYAML keeps them: empty here, so nothing of YAML 1.1 is inherited.
    yaml_implicit_resolvers = {}  # type: ignore[var-annotated] # noqa: RUF012
    yaml_constructors = {}  # type: ignore[var-annotated] # noqa: RUF012


def _construct_null(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> None:
    if not _NULL.match(node.value):
        _bad_scalar(node, "null")


def _construct_bool(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> bool:
    if not _BOOL.match(node.value):
        _bad_scalar(node, "true or false")
    return bool(node.value.lower() == "true")


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    if not _INT.match(node.value):
        _bad_scalar(node, "a whole number in decimal, without a leading zero")
    return int(node.value)


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    text = str(node.value)
    if _INT.match(text):
        return float(text)
    if not _FLOAT.match(text):
        _bad_scalar(node, "a decimal number such as 1.5")
    lowered = text.lower()
    if lowered.endswith((".inf", ".nan")):
        return float(lowered.replace(".", ""))
    return float(text)


def _bad_scalar(node: yaml.ScalarNode, expected: str) -> None:
    raise yaml.constructor.ConstructorError(
        None, None, f"{node.value!r} is tagged {node.tag.removeprefix(_TAG)} but is not {expected}", node.start_mark
    )


for _first, _regex, _tag in (
    ("~nN", _NULL, NULL),
    ("tTfF", _BOOL, BOOL),
    ("-+0123456789", _INT, INT),
    ("-+0123456789.", _FLOAT, FLOAT),
):
    _CoreLoader.add_implicit_resolver(_tag, _regex, list(_first))
_CoreLoader.add_implicit_resolver(NULL, _NULL, [""])
_CoreLoader.add_constructor(NULL, _construct_null)
_CoreLoader.add_constructor(BOOL, _construct_bool)
_CoreLoader.add_constructor(INT, _construct_int)
_CoreLoader.add_constructor(FLOAT, _construct_float)
_CoreLoader.add_constructor(STR, _Base.construct_yaml_str)  # type: ignore[type-var]
_CoreLoader.add_constructor(SEQ, _Base.construct_yaml_seq)  # type: ignore[type-var]
_CoreLoader.add_constructor(MAP, _Base.construct_yaml_map)  # type: ignore[type-var]


# Bounds on what one document may cost to read: an intent is a few hundred lines; 470 bytes of
# nested aliases expand to a billion values, and a thousand nested brackets exhaust the stack.
MAX_BYTES = 4 << 20
MAX_DEPTH = 64
MAX_VALUES = 1_000_000  # after aliases are expanded


def load_yaml(text: str, file: str, *, core_schema: bool = False) -> tuple[Any, dict[Path, int]]:
    """Parse `text`; return the data and a map from field path to 1-based line.

    With `core_schema` (the intent), values follow YAML 1.2's core schema and tags or template
    syntax outside it are refused; without it (rendered NVUE files), PyYAML's YAML 1.1 reading."""
    if len(text) > MAX_BYTES:
        problem = Problem((), f"is {len(text) >> 20} MiB; an intent is at most {MAX_BYTES >> 20} MiB", "split it")
        raise IntentError(file, [problem])
    loader = _CoreLoader(text) if core_schema else _Base(text)
    lines: dict[Path, int] = {}
    problems: list[Problem] = []
    try:
        node = loader.get_single_node()
        if node is not None:
            _bounded(node, file)
            # Located problems of the text itself (duplicate keys, tags, template syntax) come first:
            # nothing is built from a document that has them.
            _walk(node, (), lines, problems, set(), core_schema)
            if problems:
                raise IntentError(file, problems, lines)
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        said = exc.problem or exc.context or ""
        if "nesting depth" in said:  # libyaml 0.2.5+ stops at its own depth limit (PyYAML 6.0.4's wheels)
            problem = Problem((), f"nests deeper than {MAX_DEPTH} levels", "flatten the document")
        else:
            problem = Problem((), f"not valid YAML: {said}", "fix the syntax at the line shown")
        raise IntentError(file, [problem], {(): line} if line else {}) from None
    except yaml.YAMLError as exc:
        raise IntentError(file, [Problem((), f"not valid YAML: {exc}")]) from None
    except RecursionError:
        raise IntentError(file, [Problem((), f"nests deeper than {MAX_DEPTH} levels")]) from None
    finally:
        loader.dispose()
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


def _walk(  # noqa: PLR0917 (recursive helper: the accumulators travel with it)
    node: yaml.Node, path: Path, lines: dict[Path, int], problems: list[Problem], seen: set[int], core: bool
) -> None:
    # Aliases share node objects; visiting each once keeps a self-referencing
    # document from recursing forever.
    if id(node) in seen:
        return
    seen.add(id(node))
    lines.setdefault(path, node.start_mark.line + 1)
    if core:
        problems += _node_problems(node, path)
    if isinstance(node, yaml.MappingNode):
        keys: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            child = (*path, key)
            if key in keys:
                problems.append(Problem(child, f"'{key}' is given twice", "keep one of the two entries"))
            keys.add(key)
            lines[child] = key_node.start_mark.line + 1
            if core:
                problems += _node_problems(key_node, child)
            _walk(value_node, child, lines, problems, seen, core)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*path, i), lines, problems, seen, core)


def _node_problems(node: yaml.Node, path: Path) -> list[Problem]:
    """A tag outside YAML 1.2's core schema, or template syntax in a text value."""
    if node.tag not in CORE_TAGS:
        name = node.tag.removeprefix(_TAG)
        made, fix = _OTHER_TAGS.get(name, ("a value gpufabric does not read", "remove the tag"))
        return [Problem(path, f"the tag !!{name} is not part of YAML 1.2's core schema (it makes {made})", fix)]
    if isinstance(node, yaml.ScalarNode) and node.tag == STR and any(m in node.value for m in TEMPLATE_MARKERS):
        return [
            Problem(
                path,
                "holds template syntax ({{, {% or {#), which Ansible would evaluate on the controller "
                "when it reads the inventory",
                "remove the braces: intent values are taken literally",
            )
        ]
    return []
