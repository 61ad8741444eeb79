"""The network operating systems gpufabric configures, found through the `gpufabric.platforms` entry points.

Each entry point names a `Platform` object (`eos = "gpufabric.nos.eos:PLATFORM"`). The built-in
platforms are declared in pyproject.toml exactly as a third party declares its own in its distribution's
metadata: one Platform subclass, its templates, and one entry-point line, no edit to gpufabric.
The intent, planner, renderer, verify, push and exports reach a platform only through this registry.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import EntryPoint, entry_points

from gpufabric.errors import GpufabricError
from gpufabric.platforms.spec import (
    LoadBalancing,
    LosslessBuffers,
    Platform,
    PlatformFacts,
    VendorJudge,
    templates_root,
)

GROUP = "gpufabric.platforms"

__all__ = [
    "GROUP",
    "LoadBalancing",
    "LosslessBuffers",
    "Platform",
    "PlatformFacts",
    "PlatformRegistryError",
    "UnknownPlatformError",
    "VendorJudge",
    "all_platforms",
    "names",
    "platform",
    "reset",
    "templates_root",
]


class UnknownPlatformError(KeyError, GpufabricError):
    """A platform name no installed distribution registers."""

    def __init__(self, name: str, known: tuple[str, ...]) -> None:
        super().__init__(name)
        self.name = name
        self.known = known

    def __str__(self) -> str:
        return f"unknown platform {self.name!r}; registered: {', '.join(self.known)}"


class PlatformRegistryError(RuntimeError, GpufabricError):
    """An entry point of the group does not name a well-formed Platform, or two name one platform."""


def _origin(ep: EntryPoint) -> str:
    dist = ep.dist.name if ep.dist is not None else "an unnamed distribution"
    return f"{dist} ({ep.name} = {ep.value})"


@cache
def _entry_points() -> dict[str, EntryPoint]:
    # importlib.metadata lists each installed distribution once; two of them registering one name would
    # leave the winner to the order of sys.path, so the registry refuses to choose.
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=GROUP):
        first = found.setdefault(ep.name, ep)
        if first is not ep:
            raise PlatformRegistryError(
                f"platform {ep.name!r} is registered twice in {GROUP}: by {_origin(first)} and by {_origin(ep)};"
                " uninstall one of them"
            )
    return found


@cache
def _load(name: str) -> Platform:
    ep = _entry_points()[name]
    found = ep.load()
    if not isinstance(found, Platform):
        raise PlatformRegistryError(f"entry point {name} = {ep.value!r} of {GROUP} is not a Platform")
    if found.name != name:
        raise PlatformRegistryError(f"entry point {name} = {ep.value!r} names the platform {found.name!r}")
    return found


@cache
def names() -> tuple[str, ...]:
    """Every registered platform name: the built-ins in their rank, third parties after, by name."""
    return tuple(sorted(_entry_points(), key=lambda n: (_load(n).facts.rank, n)))


def platform(name: str) -> Platform:
    if name not in _entry_points():
        raise UnknownPlatformError(name, names())
    return _load(name)


def all_platforms() -> list[Platform]:
    return [_load(n) for n in names()]


def reset() -> None:
    """Forget what was found: for a test that registers a platform of its own through an entry point."""
    for cached in (_entry_points, _load, names):
        cached.cache_clear()
