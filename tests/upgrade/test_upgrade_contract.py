"""What every registered platform answers for restarts and upgrades: its reboot modes, its fallback, and
each of its releases read back out of a version text that begins with it."""

from __future__ import annotations

import pytest

from gpufabric.platforms import all_platforms

MODES = {"warm", "fast", "cold", "daemons"}


@pytest.mark.parametrize("spec", all_platforms(), ids=lambda s: s.name)
def test_every_platform_has_reboot_modes_a_fallback_and_reads_its_releases(spec) -> None:
    modes = spec.reboot_modes()
    assert modes and set(modes) <= MODES and len(set(modes)) == len(modes)
    assert spec.image_fallback().strip()
    for release in spec.facts.releases:
        assert spec.running_release(f"{release}.3") == release, release
    assert spec.running_release("") is None
