"""Property: whatever the intent says, gpufabric either plans it or explains what is wrong.

Hypothesis mutates real intents (deletes fields, swaps values for values of other
types, inserts unknown keys) and the loader and planner must end in a Plan or an
IntentError that renders; any other exception is a crash a user would see.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import pytest
import yaml
from conftest import INVENTORY, run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpufabric.intent import IntentError, load_intent_text
from gpufabric.plan import build_plan

pytestmark = pytest.mark.slow  # hypothesis draws hundreds of cases: seconds

BASES = [yaml.safe_load((INVENTORY / name).read_text()) for name in ("fabric.yml", "examples/multi-vendor.yml")]

# Values engineers plausibly mistype, mixed with arbitrary ones.
TRICKY_VALUES = [
    "400G",
    "800G",
    "1G",
    "0G",
    "1:1",
    "3:1",
    "0:1",
    "10.0.0.0/8",
    "10.0.0.0/31",
    "10.0.0.1/24",
    "4200000000-4200000001",
    "65000-64000",
    "",
    "x{index}",
    "{",
    "{index!r}",
    "{0}",
    "{index:>9999}",
    65536,
    1024,
    512,
    64,
    9216,
    9214,
    9000,
    0,
    -1,
    3,
    "frr",
    "eos",
    "cumulus",
    "nxos",
    "lacp",
    "routed",
    "p2p31",
    "unnumbered",
    "clos",
    "rail-optimized",
]
TRICKY = st.sampled_from(TRICKY_VALUES)
ANY = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=True), st.text(max_size=12), TRICKY
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=6,
)


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _apply(doc: Any, path: tuple, op: str, value: Any) -> Any:
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    key = path[-1]
    if op == "delete":
        del parent[key]
    elif op == "replace":
        parent[key] = value
    elif op == "insert" and isinstance(parent[key], dict):
        parent[key]["unexpected_field"] = value
    elif op == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[key]))
    return doc


STRINGS = st.one_of(st.sampled_from([v for v in TRICKY_VALUES if isinstance(v, str)]), st.text(max_size=12))
NUMBERS = st.one_of(st.integers(-2, 70_000), st.sampled_from([0, -1, 2**31, 2**40, 4200000000, 4294967295]))


def _get(doc: Any, path: tuple) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _alike(current: Any) -> st.SearchStrategy:
    """A wrong value of the same type: the mistakes that get past a type check."""
    if isinstance(current, bool):
        return st.booleans()
    if isinstance(current, str):
        return STRINGS
    if isinstance(current, int):
        return NUMBERS
    if isinstance(current, list):
        return st.lists(STRINGS | NUMBERS, max_size=3)
    return ANY


@st.composite
def mutated(draw: st.DrawFn) -> str:
    doc = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["delete", "replace", "alike", "alike", "insert", "duplicate"]))
        value = draw(_alike(_get(doc, path)) if op == "alike" else ANY)
        doc = _apply(doc, path, "replace" if op == "alike" else op, value)
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_intents_never_crash(text: str):
    try:
        plan = build_plan(load_intent_text(text, "fuzz.yml"))
    except IntentError as exc:
        rendered = exc.render()
        assert "fuzz.yml" in rendered and exc.problems
        assert all(p.message for p in exc.problems)
        return
    assert plan.devices()  # a plan that loads has switches


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_never_crashes(text: str):
    with contextlib.suppress(IntentError):
        build_plan(load_intent_text(text, "fuzz.yml"))


def test_cli_never_prints_a_traceback(tmp_path):
    """A handful of hostile files through the real CLI: exit 2 and a message, never a traceback."""
    cases = [
        "",
        "- 1\n",
        "{",
        "fabric: [\n",
        "a: &a [*a]\n",
        "fabric: !!python/object:os.system {}\n",
        yaml.safe_dump({"fabric": {"name": "x"}, "server_groups": "nope"}),
    ]
    for i, text in enumerate(cases):
        f = tmp_path / f"case{i}.yml"
        f.write_text(text)
        done = run("gpufabric", "plan", str(f))
        assert done.returncode == 2, (text, done.stderr)
        assert "Traceback" not in done.stderr and "error:" in done.stderr
