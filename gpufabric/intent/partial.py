"""Cross-field problems of an intent whose schema check failed, so one run reports every problem.

The fields that failed are taken out (an optional field falls back to its default) and the rest is
validated again; the rules then run on what remains. What the rules say about the objects a field
was taken from is dropped: it could only be a consequence of the taking out. When what failed
cannot be taken out (a required field, a whole list entry), only the schema problems are reported.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from gpufabric.intent.errors import Path, Problem
from gpufabric.intent.model import Intent

ROUNDS = 3  # taking a field out can uncover another problem beneath it; a few rounds settle it


# pydantic's synthetic location parts: "[key]" (a mapping's key), validator and union-branch names such
# as "function-after[...]" or "list[int]". A user's own key may hold brackets ("x[1]"): it stays.
_SYNTHETIC = re.compile(
    r"^(?:\[key\]|function-\w+\[.*|(?:list|dict|set|tuple|frozenset|union|tagged-union|nullable|literal|"
    r"lax-or-strict|json-or-python|chain|is-instance|constrained-\w+)\[.*|transport:\w+)$",
    re.DOTALL,
)


def clean_path(loc: tuple[Any, ...]) -> Path:
    """pydantic's location without its synthetic parts (validator names, union branches)."""
    return tuple(p for p in loc if not (isinstance(p, str) and _SYNTHETIC.match(p)))


def rule_problems_despite(
    data: dict[str, Any], exc: ValidationError, rules: Callable[[Intent], list[Problem]]
) -> list[Problem]:
    working = copy.deepcopy(data)
    removed: list[Path] = []
    error: ValidationError | None = exc
    for _ in range(ROUNDS):
        assert error is not None
        paths = [clean_path(e["loc"]) for e in error.errors(include_url=False) if e["type"] != "missing"]
        if len(paths) < len(error.errors(include_url=False)) or not _take_out(working, paths):
            return []
        removed += paths
        try:
            intent = Intent.model_validate(working)
        except ValidationError as again:
            error = again
            continue
        except RecursionError:
            return []
        touched = {p[:-1] for p in removed}
        return [p for p in rules(intent) if not any(_overlaps(p.path, t) for t in touched)]
    return []


def _overlaps(a: Path, b: Path) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _order(path: Path) -> tuple[tuple[int, Any], ...]:
    return tuple((0, p) if isinstance(p, int) else (1, str(p)) for p in path)


def _take_out(doc: dict[str, Any], paths: list[Path]) -> bool:
    """Delete each failing value; later list entries first, so earlier indices stay right."""
    for path in sorted(set(paths), key=_order, reverse=True):
        if not path:
            return False
        parent: Any = doc
        for part in path[:-1]:
            try:
                parent = parent[part]
            except (KeyError, IndexError, TypeError):
                return False
        last = path[-1]
        if isinstance(parent, list):
            if not isinstance(last, int) or last >= len(parent) or isinstance(parent[last], dict):
                return False  # a whole entry (a plane's switch, a server group) cannot be left out
            del parent[last]
        elif isinstance(parent, dict) and last in parent:
            del parent[last]
        else:
            return False
    return True
