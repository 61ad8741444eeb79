"""The exports' YAML writer: whatever it is given, PyYAML reads back the same data."""

from __future__ import annotations

import math

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufabric.export.yaml_out import dump_yaml

_scalars = st.one_of(
    st.text(max_size=16),
    st.integers(-(10**12), 10**12),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
)
_keys = st.one_of(st.text(min_size=1, max_size=10), st.integers(0, 999))
_trees = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=4)),
    max_leaves=24,
)


@pytest.mark.slow  # hypothesis's recursive trees take seconds; the fast tier keeps the fixed cases
@settings(max_examples=200, deadline=None)
@given(st.one_of(st.dictionaries(_keys, _trees, max_size=5), st.lists(_trees, max_size=5)))
def test_any_tree_reads_back_unchanged(tree):
    assert yaml.safe_load(dump_yaml(tree)) == tree


def test_block_style_as_pyyaml_writes_it():
    """Lists sit at their key's indentation and a list's mappings start on the dash's line, as in
    PyYAML's own output, so the exports read as they did."""
    tree = {"all": {"hosts": [{"name": "gpu01", "nics": ["rail1", "rail2"]}, [1, [2]], {}, []], "empty": {}}}
    assert dump_yaml(tree) == (
        "all:\n"
        "  hosts:\n"
        "  - name: gpu01\n"
        "    nics:\n"
        "    - rail1\n"
        "    - rail2\n"
        "  - - 1\n"
        "    - - 2\n"
        "  - {}\n"
        "  - []\n"
        "  empty: {}\n"
    )
    assert yaml.safe_dump(tree, sort_keys=False) == dump_yaml(tree)


@pytest.mark.parametrize("value", [math.inf, -math.inf, 1e20, 1.5e-7, 0.1, -0.0])
def test_floats_keep_their_value(value):
    assert yaml.safe_load(dump_yaml({"v": value}))["v"] == value


def test_what_it_cannot_write_is_an_error_not_a_guess():
    with pytest.raises(TypeError, match="set"):
        dump_yaml({"v": {1, 2}})
