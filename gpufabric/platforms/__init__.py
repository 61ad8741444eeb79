"""The network operating systems gpufabric configures: one module each, registered here.

Adding a platform (SONiC, say) is one module beside these that defines `PLATFORM`, its templates,
and its name in `_MODULES`; the intent, planner, renderer, verify, push and exports find it here.
"""

from __future__ import annotations

import importlib
from functools import cache

from gpufabric.platforms.base import PlatformSpec

_MODULES = ("cumulus", "eos", "nxos", "frr", "sonic")
NAMES: tuple[str, ...] = _MODULES


@cache
def platform(name: str) -> PlatformSpec:
    if name not in _MODULES:
        raise KeyError(f"unknown platform {name!r}; known: {', '.join(_MODULES)}")
    spec: PlatformSpec = importlib.import_module(f"gpufabric.platforms.{name}").PLATFORM
    return spec


def all_platforms() -> list[PlatformSpec]:
    return [platform(n) for n in _MODULES]
