"""The 131,072-GPU example (inventory/examples/multiplane-131k.yml), proved by its own tests: the sweeps
over every example leave it out (conftest.HUGE_DESIGNS), the benches time it (docs/benchmarks.md).

Its plan is counted against the sizing its header gives, and a sample of its switches (the first and
the last of every role of every plane) is rendered and judged by NVIDIA's NVUE object model
(nvueschema, as tests/oracles/test_oracle_nvue.py judges the smaller examples)."""

from __future__ import annotations

from collections import Counter

import pytest
from conftest import INVENTORY, example_plan

from gpufabric.config.context import LinkIndex
from gpufabric.config.render import render_device
from gpufabric.nos.cumulus import judge as nvue
from gpufabric.plan.model import Device, Plan

pytestmark = pytest.mark.slow
EXAMPLE = INVENTORY / "examples" / "multiplane-131k.yml"


@pytest.fixture(scope="module")
def plan() -> Plan:
    return example_plan(EXAMPLE)


def test_the_plan_is_the_sizing_its_header_gives(plan):
    assert sum(s.gpus for s in plan.servers) == 131_072
    roles = {name: Counter(d.role for d in p.devices) for name, p in plan.planes.items()}
    assert roles["compute"] == {"leaf": 4096, "spine": 4096, "superspine": 2048}
    assert roles["storage"] == {"leaf": 266, "spine": 144, "superspine": 32}
    assert roles["business"] == {"leaf": 512, "spine": 512, "superspine": 336, "border": 2}
    assert roles["oob"] == {"mgmt": 624, "spine": 30, "superspine": 4}
    assert sum(len(p.devices) for p in plan.planes.values()) == 12_702
    compute = plan.planes["compute"]
    host = Counter(link.b for link in compute.links if link.kind == "host")
    assert len(host) == 4096 and set(host.values()) == {64}  # every leaf: 64 host ports, 64 up
    per_server = Counter(link.a for link in compute.links if link.kind == "host")
    assert len(per_server) == 16_384 and set(per_server.values()) == {16}


def test_the_oob_core_carries_every_management_port(plan):
    oob = plan.planes["oob"]
    assert oob.sizing["management_ports"] == 28_700 == sum(1 for link in oob.links if link.kind == "mgmt")
    others = sum(len(p.devices) for n, p in plan.planes.items() if n != "oob")
    assert oob.sizing["management_ports"] == others + len(plan.servers)
    spines = [d.name for d in oob.devices if d.role == "spine"]
    up: dict[str, set[str]] = {}
    for link in oob.links:
        if link.kind == "fabric":
            up.setdefault(link.a, set()).add(link.b)
    for m in range(624):
        group = m // 44  # 48-port spines: 4 ports to the cores, 44 for the mgmt switches of their pair
        assert up[f"oob-mgmt{m + 1}"] == set(spines[2 * group : 2 * group + 2])
    assert all(up[s] == {"oob-core1", "oob-core2", "oob-core3", "oob-core4"} for s in spines)
    addresses = [d.mgmt_ip for d in plan.devices()] + [s.mgmt_ip for s in plan.servers]
    assert None not in addresses and len(set(addresses)) == len(addresses) == 12_702 + 16_656


def _sample(plan: Plan) -> list[Device]:
    """The first and the last switch of every role of every plane (and each compute plane's)."""
    firsts: dict[tuple[str, str, str], list[Device]] = {}
    for d in plan.devices():
        side = d.name.split("-")[1] if d.plane == "compute" else ""
        firsts.setdefault((d.plane, d.role, side), []).append(d)
    return [d for ds in firsts.values() for d in {ds[0].name: ds[0], ds[-1].name: ds[-1]}.values()]


def test_a_sample_of_every_role_renders_what_nvidias_model_accepts(plan):
    index = LinkIndex(plan)
    release = plan.intent.release("cumulus")
    sample = _sample(plan)
    assert {(d.plane, d.role) for d in sample} >= {("oob", "superspine"), ("oob", "spine"), ("compute", "superspine")}
    assert len(sample) >= 2 * 11
    findings = {}
    for d in sample:
        text = render_device(plan, d, index).files[f"{d.name}.yaml"]
        found = nvue.check(nvue.set_tree(text), release)
        if found:
            findings[d.name] = found
    assert findings == {}


def test_every_plane_draws_within_what_dot_is_given(plan):
    """The OOB plane's 624 mgmt switches are counted past the first, as spines are: every plane's drawing
    stays small enough for Graphviz (docs/examples/multiplane-131k.md shows them)."""
    from gpufabric.export.drawing import SVG_MAX_NODES, drawn_nodes, plane_dot

    for name, plane in plan.planes.items():
        text = plane_dot(plan, plane)
        assert 0 < drawn_nodes(text) <= SVG_MAX_NODES, name
    oob = plane_dot(plan, plan.planes["oob"])
    assert '"616 more mgmt switches"' in oob and '"oob-core4"' in oob and '"22 more spines"' in oob
