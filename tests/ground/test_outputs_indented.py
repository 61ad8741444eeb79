"""json_dumps writes an indented document in one pass of its own (gpufabric.outputs._indented): its text must be
json.dumps's, byte for byte, for every value, whatever the indent, key order and separators; and what it does
not write itself (another type, a key that is not text, a float that is not finite, a circle) json.dumps
writes or refuses as it always did."""

from __future__ import annotations

import enum
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufabric import outputs
from gpufabric.outputs import json_dumps

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()  # every code point: escaped as json.dumps escapes it (ensure_ascii)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=40,
)
STYLES = st.tuples(
    st.sampled_from([0, 1, 2, 4, "\t", "--"]),
    st.booleans(),
    st.sampled_from([None, (",", ": "), (", ", ":"), (";", "=")]),
)


@settings(max_examples=400, deadline=None)
@given(VALUES, STYLES)
def test_the_indented_text_is_json_dumps_text(value, style):
    indent, sort_keys, separators = style
    want = json.dumps(value, indent=indent, sort_keys=sort_keys, separators=separators, allow_nan=False)
    assert outputs._indented(value, indent, sort_keys, separators or (",", ": ")) == want
    assert json_dumps(value, indent=indent, sort_keys=sort_keys, separators=separators) == want


class Colour(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@pytest.mark.parametrize(
    "value",
    [
        {"colour": Colour.RED, "level": Level.HIGH},  # subclasses: json.dumps's own way of writing them
        {7: "a", 2.5: "b", True: "c", None: "d"},  # keys json.dumps turns into text
        {"a": float("nan"), "b": [float("inf")]},  # json_dumps's null and its note
    ],
    ids=["subclasses", "keys that are not text", "not finite"],
)
def test_what_the_one_pass_leaves_is_written_by_json_dumps_as_before(value):
    with pytest.raises(outputs._UnusualError):
        outputs._indented(value, 2, False, (",", ": "))
    try:
        want = json.dumps(value, indent=2, allow_nan=False)
    except ValueError:
        want = json.dumps(outputs._finite(value), indent=2, allow_nan=False)
    assert json_dumps(value, indent=2) == want


def test_keys_that_cannot_be_sorted_and_circles_are_refused_as_json_dumps_refuses_them():
    with pytest.raises(TypeError):
        json_dumps({"a": 1, 2: 3}, indent=2, sort_keys=True)
    circle: list = []
    circle.append(circle)
    with pytest.raises(ValueError, match="Circular reference"):
        json_dumps(circle, indent=2)
    with pytest.raises(TypeError, match="not JSON serializable"):
        json_dumps({"a": {1, 2}}, indent=2)
