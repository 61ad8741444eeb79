"""The YAML writer behind NVUE documents: every value reads back as exactly the text written."""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufabric.nos.cumulus.judge import NvueLoader
from gpufabric.platforms.yaml_text import (
    _ADDRESS,
    _AMBIGUOUS,
    _CONTROL,
    _DECIDED,
    _DECIDED_BOUND,
    _NUMERIC,
    _PLAIN,
    _SAFE,
    Filled,
    Form,
    Slot,
    _escape,
    _remember,
    _text,
    mapping_lines,
    plain,
    scalar,
)

TRICKY = [
    "on",
    "off",
    "yes",
    "No",
    "true",
    "null",
    "~",
    "1:20",
    "0x1F",
    "1e3",
    "0_",
    "1_000",
    "1_0.5",
    "1:2_0",
    "010",
    "2024-01-01",
    "10.0.0.1",
    "",
    " lead",
    "trail ",
    "a: b",
    "- x",
    "#c",
    "'q'",
    '"d"',
    "line\nbreak",
    "tab\t",
    "O'Brien hall",
    "@secret:env:X@",
    "[x]",
    "abc\n",
    "0:",
    "a:",
    "10.0.0.1\n",
    "{y}",
    "&a",
    "*b",
    "!tag",
    "%p",
    "a\u2028b",
    "\x00",
]


def _round_trip(value: str) -> tuple[object, object]:
    doc = f"k: {scalar(value)}\n"
    return yaml.safe_load(doc)["k"], yaml.load(doc, Loader=NvueLoader)["k"]


def test_tricky_values_read_back_unchanged():
    for value in TRICKY:
        assert _round_trip(value) == (value, value), value


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=40))
def test_any_text_reads_back_unchanged(value):
    assert _round_trip(value) == (value, value)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=12), st.one_of(st.text(max_size=12), st.integers(0, 10**9)), max_size=6
    )
)
def test_nested_mappings_read_back_unchanged(tree):
    out: list[str] = []
    mapping_lines({"top": tree}, 0, out)
    assert yaml.safe_load("\n".join(out) + "\n") == {"top": tree or {}}


def test_values_equal_to_a_dict_are_written_as_their_own_type():
    # True == 1 == 1.0 as dict keys: the writer's table of decided scalars must not give one the other's text
    out: list[str] = []
    mapping_lines({"vlan": {1: {}}, "flag": True, "ratio": 1.0, "count": 1}, 0, out)
    assert out == ["vlan:", "  1: {}", "flag: true", "ratio: '1.0'", "count: 1"]
    assert yaml.safe_load("\n".join(out)) == {"vlan": {1: {}}, "flag": True, "ratio": "1.0", "count": 1}


# The plain-scalar rule as first written: the writer tries the plain pattern first, with the same result.
_FIRST_SAFE = re.compile(f"(?!{_NUMERIC})(?!.*:\\Z)(?:{_PLAIN.pattern})", re.DOTALL)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=24), st.from_regex(r"[0-9a-z_./:-]{1,16}", fullmatch=True)))
def test_plain_pattern_order_does_not_change_what_is_plain(value):
    assert bool(_SAFE.match(value)) == bool(_FIRST_SAFE.match(value))


def _quoted_as_first_written(text: str) -> str:
    """The scalar rule before its shortcuts (a space, an address): the pattern, then the quoting."""
    if _SAFE.match(text) and text.lower() not in _AMBIGUOUS:
        return text
    if (text.isascii() and text.isprintable()) or not _CONTROL.search(text):
        return "'" + text.replace("'", "''") + "'"
    return '"' + "".join(_escape(c) for c in text) + '"'


_ADDRESSES = st.from_regex(r"[0-9]{1,4}(\.[0-9]{1,4}){3}/[0-9]{1,3}", fullmatch=True)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=24), _ADDRESSES, st.from_regex(r"[a-z0-9 :'./-]{1,16}", fullmatch=True)))
def test_shortcuts_decide_as_the_pattern_does(value):
    """A text with a space is never plain, an address always is: the same text as the pattern gives, whether
    the value is kept in the table of decided scalars (a name) or not (an address, a description)."""
    assert _text(value) == _quoted_as_first_written(value)
    assert _remember(value) == _quoted_as_first_written(value)
    assert len(_DECIDED) <= _DECIDED_BOUND
    if _ADDRESS.match(value):
        assert _SAFE.match(value) and value not in _DECIDED


_SCALARS = st.one_of(st.text(max_size=10), st.integers(0, 10**9), st.booleans())
_TREES = st.recursive(
    st.dictionaries(st.text(min_size=1, max_size=8), _SCALARS, min_size=1, max_size=4),
    lambda inner: st.dictionaries(
        st.text(min_size=1, max_size=8), st.one_of(_SCALARS, inner, st.just({})), min_size=1, max_size=4
    ),
    max_leaves=12,
)


def _with_slots(tree: dict, slotted: list[bool]) -> tuple[dict, list[object]]:
    """The tree with some of its scalar values, and keys of empty mappings, made slots in the order they are
    written: the template, and the values that fill it back to the tree."""
    values: list[object] = []
    choices = iter(slotted * 50)

    def walk(node: dict) -> dict:
        out: dict = {}
        for key, value in node.items():
            if value == {} and type(value) is dict and next(choices, False):
                out[Slot(len(values))] = {}
                values.append(key)
            elif isinstance(value, dict):
                out[key] = walk(value)
            elif next(choices, False):
                out[key] = Slot(len(values))
                values.append(value)
            else:
                out[key] = value
        return out

    return walk(tree), values


@settings(max_examples=200, deadline=None)
@given(_TREES, st.lists(st.booleans(), min_size=1, max_size=8), st.integers(0, 6))
def test_a_form_writes_what_the_line_by_line_writer_writes(tree, slotted, indent):
    template, values = _with_slots(tree, slotted)
    entry = Filled((Form.of(template), *values))
    in_one_piece: list[str] = []
    mapping_lines({"entry": entry, "next": 1}, indent, in_one_piece)
    line_by_line: list[str] = []
    mapping_lines({"entry": tree, "next": 1}, indent, line_by_line)
    assert "\n".join(in_one_piece) == "\n".join(line_by_line)
    assert plain({"entry": entry}) == {"entry": tree}


def test_a_form_is_made_once_per_shape_and_refuses_what_it_cannot_write():
    first = Form.of({"type": "swp", "description": Slot(0), "link": {"mtu": 9216}})
    assert Form.of({"type": "swp", "description": Slot(0), "link": {"mtu": 9216}}) is first
    assert Form.of({"type": "swp", "description": Slot(0), "link": {"mtu": "9216"}}) is not first
    out: list[str] = []
    mapping_lines({"swp1": Filled((first, "host: a'b 100%"))}, 2, out)
    assert out == ["  swp1:\n    type: swp\n    description: 'host: a''b 100%'\n    link:\n      mtu: 9216"]
    with pytest.raises(ValueError, match="numbered"):
        Form.of({"a": Slot(1), "b": Slot(0)}).text("")
    with pytest.raises(ValueError, match="numbered"):
        Form.of({"a": Slot(0), "b": Slot(2)})
    with pytest.raises(ValueError, match="at least one key"):
        Form.of({})
    with pytest.raises(TypeError):  # one value short: the writer's `%` says so
        mapping_lines({"swp1": Filled((Form.of({"a": Slot(0), "b": Slot(1)}), "x"))}, 0, [])
