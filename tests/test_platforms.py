"""Every platform fact lives in its platform module (gpufabric/platforms/), nowhere else."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

from gpufabric.intent.types import Platform
from gpufabric.platforms import NAMES, all_platforms, platform

ROOT = Path(__file__).resolve().parents[1]


def test_the_schema_names_exactly_the_registered_platforms():
    assert set(typing.get_args(Platform)) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_each_platform_module_is_complete(name):
    spec = platform(name)
    assert spec.name == name
    assert spec.default_release in spec.releases
    assert spec.port_name(3, 1, 2) != spec.port_name(3, 0, 2)  # split lanes get their own names
    for _, template in spec.outputs:
        assert spec.builder is not None or (ROOT / "templates" / template).is_file()


def test_no_module_outside_the_platform_modules_keeps_a_table_of_platforms():
    """A dict keyed by platform names (`{"cumulus": ..., "eos": ...}`) anywhere else is a fact out of place."""
    table = re.compile(r"\"(cumulus|eos|nxos)\"\s*:")  # `frr` is also a daemon name
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("gpufabric", "nornir_tasks")
        for path in (ROOT / folder).rglob("*.py")
        if "platforms" not in path.parts and table.search(path.read_text())
    ]
    assert offenders == []


def test_unknown_platform_is_a_clear_error():
    with pytest.raises(KeyError, match="known: cumulus, eos, nxos, frr, sonic"):
        platform("junos")
    assert [p.name for p in all_platforms()] == list(NAMES)
