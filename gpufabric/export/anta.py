"""ANTA catalogs: what Arista's test framework should find on each EOS switch, from the plan.

`render` is one catalog for the whole fabric in which every test carries a `filters: tags: [<switch>]`
(ANTA tags each device of its inventory with its own name), so one `anta nrfu --catalog` run tests each
switch against its own plan. `documents` is one catalog per switch, for teams that keep a file per device.
Which tests and why: the platform's `anta_catalog` (gpufabric/nos/eos/anta.py).
"""

from __future__ import annotations

from typing import Any

from gpufabric.config.context import LinkIndex, build
from gpufabric.config.secrets import ReferenceHasher
from gpufabric.errors import GpufabricError
from gpufabric.export.yaml_out import dump_yaml
from gpufabric.plan.model import Plan
from gpufabric.platforms import platform


class NoAntaSwitchError(ValueError, GpufabricError):
    """The fabric has no switch ANTA can test."""


def catalogs(plan: Plan) -> dict[str, dict[str, Any]]:
    """Switch name -> its catalog, for every switch whose platform has one; refused when none has."""
    index = LinkIndex(plan, ReferenceHasher(plan.intent.fabric.name))
    out: dict[str, dict[str, Any]] = {}
    for device in sorted(plan.devices(), key=lambda d: d.name):
        found = platform(device.platform).anta_catalog(build(plan, device, index))
        if found is not None:
            out[device.name] = found
    if not out:
        kinds = ", ".join(sorted({d.platform for d in plan.devices()})) or "none"
        raise NoAntaSwitchError(
            f"no switch of this fabric has an ANTA catalog: ANTA tests Arista EOS, and the platforms here are {kinds}"
        )
    return out


def _tagged(tests: Any, tag: str) -> Any:
    """Every test of a catalog section with `filters: tags: [tag]` added to its inputs."""
    if isinstance(tests, dict):  # a package of modules (anta.tests.routing: {bgp: [...]})
        return {name: _tagged(section, tag) for name, section in tests.items()}
    out = []
    for entry in tests:
        ((name, inputs),) = entry.items()
        out.append({name: {**(inputs or {}), "filters": {"tags": [tag]}}})
    return out


def _merge(into: dict[str, Any], section: dict[str, Any]) -> None:
    for key, value in section.items():
        if isinstance(value, dict):
            _merge(into.setdefault(key, {}), value)
        else:
            into.setdefault(key, []).extend(value)


def render(plan: Plan) -> str:
    merged: dict[str, Any] = {}
    for name, found in catalogs(plan).items():
        _merge(merged, _tagged(found, name))
    return dump_yaml(merged)


def documents(plan: Plan) -> dict[str, str]:
    """File name -> one switch's catalog."""
    return {f"{name}.yml": dump_yaml(found) for name, found in catalogs(plan).items()}
