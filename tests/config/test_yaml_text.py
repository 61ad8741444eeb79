"""The YAML writer behind NVUE documents: every value reads back as exactly the text written."""

from __future__ import annotations

import re

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
    _escape,
    _remember,
    _text,
    mapping_lines,
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
