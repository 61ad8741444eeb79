"""host_network on a converged plane: a NIC that carries only tagged planes (`native: false`) has no address,
and the role's default leaves it out instead of failing its check on it."""

from __future__ import annotations

from pathlib import Path

import jinja2
import yaml

from gpufabric.export import inventory
from tests.conftest import INVENTORY, example_plan

DEFAULTS = Path(__file__).resolve().parents[2] / "roles" / "host_network" / "defaults" / "main.yml"


def _default_nics(nics: list[dict[str, object]]) -> list[dict[str, object]]:
    text = yaml.safe_load(DEFAULTS.read_text())["host_network_nics"]
    expression = text.strip().removeprefix("{{").removesuffix("}}")
    return jinja2.Environment().compile_expression(expression)(gpufabric_nics=nics)


def test_the_default_takes_addressed_nics_only():
    plan = example_plan(INVENTORY / "examples" / "converged-inband.yml")
    hosts = {h.name: h for h in inventory.build(plan)}
    gpu, nvme = hosts["gpu01"].data["nics"], hosts["nvme01"].data["nics"]
    assert [n["plane"] for n in _default_nics(nvme)] == []
    taken = _default_nics(gpu)
    assert {n["plane"] for n in taken} == {"compute", "business"}
    assert all(isinstance(n["address"], str) for n in taken)
    assert len(taken) == len(gpu) == 4
