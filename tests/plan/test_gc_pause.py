"""gc_paused: what the pause built leaves it counted as old, so the next collection does not walk it all;
cyclic garbage made during the pause is still collected."""

from __future__ import annotations

import gc
import weakref

import pytest

from gpufabric.gc_pause import gc_paused


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the cyclic collector frees it


@pytest.fixture
def collecting():
    """The collector on, as in a command's process (an earlier test in this worker may have left it off,
    as `gpufabric render` does for its whole run); as it was, afterwards."""
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_what_the_pause_built_is_old_and_its_cycles_are_still_collected(collecting):
    gc.collect()
    with gc_paused():
        kept = [[i] for i in range(200_000)]  # tracked objects, as a plan's
        garbage = _Node()
        gone = weakref.ref(garbage)
        del garbage
        assert gc.get_count()[0] > 100_000  # counted as young while the pause lasts
    assert gc.isenabled()
    assert gc.get_count()[0] < 1_000  # moved to the oldest generation, without a collection
    assert gc.get_freeze_count() == 0  # nothing stays frozen
    assert gone() is not None
    gc.collect()
    assert gone() is None and len(kept) == 200_000
