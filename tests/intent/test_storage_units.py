"""The storage plane's quantities as storage people write them: sizes, rates and durations, each read into one
number, or refused at its field with what would be right (never a traceback)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from conftest import default_doc, plan_doc

from gpufabric.intent import IntentError, load_intent_text
from gpufabric.intent.model import StoragePlane


def _read(doc: dict[str, Any]) -> StoragePlane:
    """The storage plane as validated (not planned: a demand the default plane cannot carry still reads)."""
    plane = load_intent_text(yaml.safe_dump(doc, sort_keys=False), "<test>").intent.planes.storage
    assert plane is not None
    return plane


def _demand(**demand: Any) -> dict[str, Any]:
    doc = copy.deepcopy(default_doc())
    del doc["planes"]["storage"]["switches"]["spine"]["count"]
    doc["planes"]["storage"]["demand"] = demand
    return doc


@pytest.mark.parametrize(
    ("written", "gbps"),
    [("2GB/s", 16.0), ("16Gb/s", 16.0), ("500MB/s", 4.0), ("1.5 GB/s", 12.0), ("100Mb/s", 0.1)],
)
def test_rates_say_bytes_or_bits(written: str, gbps: float) -> None:
    plane = _read(_demand(read_per_gpu=written))
    assert plane.demand is not None
    assert plane.demand.read_per_gpu == pytest.approx(gbps)


@pytest.mark.parametrize(
    ("size", "within", "bytes_", "seconds"),
    [
        ("1TB", "60s", 10**12, 60),
        ("1TiB", "2min", 2**40, 120),
        ("500GB", "1h", 5 * 10**11, 3600),
        (10**9, 30, 10**9, 30),
    ],
)
def test_sizes_and_durations_in_their_units(size: Any, within: Any, bytes_: int, seconds: float) -> None:
    plane = _read(_demand(checkpoint={"size": size, "within": within}))
    assert plane.demand is not None and plane.demand.checkpoint is not None
    assert plane.demand.checkpoint.size == bytes_
    assert plane.demand.checkpoint.within == seconds


@pytest.mark.parametrize(
    ("demand", "field", "says"),
    [
        ({"read_per_gpu": "2G"}, "read_per_gpu", "2GB/s (bytes per second) or 16Gb/s (bits)"),
        ({"read_per_gpu": 2}, "read_per_gpu", "written with its unit"),
        ({"read_per_gpu": "9" * 400 + "GB/s"}, "read_per_gpu", "is not a rate"),
        ({"checkpoint": {"size": "40XB", "within": "60s"}}, "size", "40TB (decimal) or 36TiB (binary)"),
        ({"checkpoint": {"size": "9" * 400 + "TB", "within": "60s"}}, "size", "is not a size"),
        ({"checkpoint": {"size": 40.5, "within": "60s"}}, "size", "written like 40TB"),
        ({"checkpoint": {"size": "40TB", "within": "60 seconds"}}, "within", "60s, 5min or 1h"),
        ({"checkpoint": {"size": "40TB", "within": 10**400}}, "within", "is not a duration"),
        ({"checkpoint": {"size": "40TB", "within": "0s"}}, "within", "60s, 5min or 1h"),
        ({"checkpoint": {"size": "40TB"}}, "within", "required"),
    ],
)
def test_a_quantity_written_otherwise_is_refused_at_its_field(demand: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(IntentError) as refused:
        plan_doc(_demand(**demand))
    found = [(p.path, p.message + " " + p.hint) for p in refused.value.problems]
    assert any(path[-1] == field and says.lower() in text.lower() for path, text in found), found
