"""The network operating systems gpufabric configures, found through the `gpufabric.platforms` entry points.

Each entry point names a `PlatformSpec` object (`eos = "gpufabric.nos.eos:PLATFORM"`). The built-in
platforms are declared in pyproject.toml exactly as a third party declares its own in its distribution's
metadata: one folder (spec, templates, readers, driver) and one entry-point line, no edit to gpufabric.
The intent, planner, renderer, verify, push and exports reach a platform only through this registry.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points

from gpufabric.errors import GpufabricError
from gpufabric.platforms.spec import PlatformSpec

GROUP = "gpufabric.platforms"


class UnknownPlatformError(KeyError, GpufabricError):
    """A platform name no installed distribution registers."""

    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        super().__init__(name)
        self.name = name
        self.known = known

    def __str__(self) -> str:
        return f"unknown platform {self.name!r}; registered: {', '.join(self.known)}"


class PlatformRegistryError(RuntimeError, GpufabricError):
    """An entry point of the group does not name a well-formed PlatformSpec."""


@cache
def _entry_points() -> dict[str, EntryPoint]:
    # Two distributions registering one name: the first found wins, as importlib.metadata lists them.
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep)
    return found


@cache
def _load(name: str) -> PlatformSpec:
    ep = _entry_points()[name]
    spec = ep.load()
    if not isinstance(spec, PlatformSpec):
        raise PlatformRegistryError(f"entry point {name} = {ep.value!r} of {GROUP} is not a PlatformSpec")
    if spec.name != name:
        raise PlatformRegistryError(f"entry point {name} = {ep.value!r} names the platform {spec.name!r}")
    return spec


@cache
def names() -> tuple[str, ...]:
    """Every registered platform name: the built-ins in their rank, third parties after, by name."""
    return tuple(sorted(_entry_points(), key=lambda n: (_load(n).rank, n)))


def platform(name: str) -> PlatformSpec:
    if name not in _entry_points():
        raise UnknownPlatformError(name, names())
    return _load(name)


def all_platforms() -> list[PlatformSpec]:
    return [_load(n) for n in names()]


def reset() -> None:
    """Forget what was found: for a test that registers a platform of its own through an entry point."""
    for cached in (_entry_points, _load, names):
        cached.cache_clear()
