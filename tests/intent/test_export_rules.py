"""Intent rules that keep the exports true (gpufabric/intent/export_rules.py): SONiC switches within their
SKU's cages and speeds, NVLink domains only on GPU servers, every cable class within some medium's reach.

Each refusal is an intent error: located (file, line, field), exit 2, and nothing planned or written.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufabric import media
from gpufabric.intent import IntentError, load_intent_text
from gpufabric.plan.model import link_length
from tests.conftest import DELETE, INVENTORY, default_doc, plan_doc, run_in_process, set_path
from tests.fabric_builders import role, single_plane

SONIC = INVENTORY / "examples" / "sonic.yml"
SUPERPOD = INVENTORY / "examples" / "superpod-1su.yml"
MULTI_VENDOR = INVENTORY / "examples" / "multi-vendor.yml"


def _doc(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def _problems(doc: dict[str, Any]) -> IntentError:
    with pytest.raises(IntentError) as info:
        load_intent_text(yaml.safe_dump(doc, sort_keys=False), "fabric.yml")
    return info.value


def _at(error: IntentError, *path: str | int) -> list[str]:
    """The messages of the problems located at `path`, each checked to have a line in the file."""
    found = [p for p in error.problems if p.path == path]
    assert all(error.line_of(p.path) is not None for p in found)
    return [p.message for p in found]


# -- SONiC: the SKU's facts ------------------------------------------------------------------------------

LEAF = ("planes", "compute", "switches", "leaf")
SPINE = ("planes", "compute", "switches", "spine")


@pytest.mark.parametrize(
    ("path", "value", "field", "says"),
    [
        ((*LEAF, "model"), "SN9999", (*LEAF, "model"), "no SONiC hardware SKU is known for model 'SN9999'"),
        ((*LEAF, "ports"), 48, (*LEAF, "ports"), "the SN4700 has 32 cages, not 48"),
        ((*SPINE, "model"), "SN4700", (*SPINE, "port_speed"), "a SN4700 cage does not run at 800G"),
    ],
    ids=["unknown-sku", "more-ports-than-cages", "faster-than-the-cage"],
)
def test_sonic_roles_beyond_their_sku_are_refused(
    path: tuple[str, ...], value: Any, field: tuple[str, ...], says: str
) -> None:
    messages = _at(_problems(set_path(_doc(SONIC), path, value)), *field)
    assert any(says in m for m in messages), messages


def test_a_breakout_the_sku_has_not_is_refused() -> None:
    """An 800G SN5600 cage split eight ways (100G): the intent's breakouts allow 8, the SKU only 1, 2 and 4."""
    doc = set_path(_doc(SONIC), (*SPINE, "downlink_speed"), "100G")
    doc = set_path(doc, (*LEAF, "uplink_speed"), "100G")
    messages = _at(_problems(doc), *SPINE, "downlink_speed")
    assert messages == ["sonic spine: a SN5600 cage at 800G does not break out 8 ways at 100G"]


def test_every_sku_fact_an_example_uses_is_accepted() -> None:
    load_intent_text(SONIC.read_text(), str(SONIC))  # SN4700 32 x 400G leaves, SN5600 800G spines split 2x400G


@pytest.mark.parametrize("command", [["export", "cabling", "-o", "{out}"], ["render", "-o", "{out}"]], ids=str)
def test_an_unknown_sku_stops_before_anything_is_written(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "sonic.yml"
    path.write_text(yaml.safe_dump(set_path(_doc(SONIC), (*LEAF, "ports"), 48), sort_keys=False))
    out = tmp_path / "out"
    done = run_in_process("gpufabric", *(c.format(out=out) for c in command), str(path))
    assert done.returncode == 2, done.stderr
    assert f"{path}:" in done.stderr and "planes.compute.switches.leaf.ports" in done.stderr, done.stderr
    assert "set ports: 32 or fewer" in done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert not out.exists()


# -- NVLink domains: GPU servers only ---------------------------------------------------------------------


def test_nvlink_domain_on_storage_servers_is_refused() -> None:
    error = _problems(set_path(default_doc(), ("server_groups", 1, "nvlink_domain"), 2))
    messages = _at(error, "server_groups", 1, "nvlink_domain")
    assert len(messages) == 1 and "group 'storage'" in messages[0] and "kind: storage" in messages[0], messages


def test_nvlink_domain_on_a_gpu_group_without_gpus_is_refused() -> None:
    doc = set_path(default_doc(), ("server_groups", 0, "nvlink_domain"), 2)
    messages = _at(_problems(set_path(doc, ("server_groups", 0, "gpus"), DELETE)), "server_groups", 0, "nvlink_domain")
    assert len(messages) == 1 and "no GPUs (gpus: 0)" in messages[0] and "group 'gpu'" in messages[0], messages


def test_nvlink_domain_on_gpu_servers_is_accepted() -> None:
    plan = plan_doc(set_path(default_doc(), ("server_groups", 0, "nvlink_domain"), 2))
    assert plan.intent.server_groups[0].nvlink_domain == 2


def test_the_slurm_block_export_of_storage_domains_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "fabric.yml"
    path.write_text(yaml.safe_dump(set_path(default_doc(), ("server_groups", 1, "nvlink_domain"), 2)))
    done = run_in_process("gpufabric", "export", "slurm-block", str(path))
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert "server_groups[1].nvlink_domain" in done.stderr and "group 'storage'" in done.stderr, done.stderr


# -- Cable reach: every class ------------------------------------------------------------------------------


def test_an_edge_cable_beyond_every_reach_is_refused() -> None:
    doc = set_path(_doc(SUPERPOD), ("planes", "business", "lengths", "edge"), 3000)
    messages = _at(_problems(doc), "planes", "business", "lengths", "edge")
    assert messages == ["3000 m at 100G is beyond every medium's reach (2000 m)"]


def _slow_superspine_uplinks(lengths: dict[str, int]) -> dict[str, Any]:
    """Three tiers whose spines uplink at 10G (40G cages split 4 ways): copper, 100 m at most, while the
    40G leaf uplinks reach 2 km on fibre."""
    return single_plane(
        8,
        1,
        {
            "leaf": role(4, "40G"),
            "spine": role(4, "40G", uplink_speed="10G"),
            "superspine": role(8, "40G", downlink_speed="10G"),
        },
        topology="clos",
        tiers=3,
        nic_speed="40G",
        lengths=lengths,
    )


def test_spine_superspine_cables_taking_the_leaf_spine_length_are_checked_too() -> None:
    error = _problems(_slow_superspine_uplinks({"host": 3, "leaf_spine": 150}))
    messages = _at(error, "planes", "compute", "lengths", "leaf_spine")
    assert messages == [
        "150 m at 10G is beyond every medium's reach (100 m) "
        "(spine-to-superspine cables take it: lengths.spine_superspine is not given)"
    ]
    plan_doc(_slow_superspine_uplinks({"host": 3, "leaf_spine": 150, "spine_superspine": 90}))  # their own: fits


def test_the_cli_refuses_an_edge_beyond_reach_and_writes_no_bill_of_material(tmp_path: Path) -> None:
    path = tmp_path / "fabric.yml"
    path.write_text(yaml.safe_dump(set_path(_doc(SUPERPOD), ("planes", "business", "lengths", "edge"), 3000)))
    out = tmp_path / "bom.csv"
    done = run_in_process("gpufabric", "export", "bom", str(path), "-o", str(out))
    assert done.returncode == 2, done.stderr
    assert "planes.business.lengths.edge" in done.stderr and "within 2000 m" in done.stderr
    assert not out.exists()


def _lengthy_designs() -> list[tuple[str, dict[str, Any]]]:
    lacp = _doc(MULTI_VENDOR)
    for name in ("compute", "storage", "business"):
        if name in lacp["planes"]:
            lacp["planes"][name]["lengths"] = {"host": 2, "leaf_spine": 5}  # RoCE planes: within 5m
    three = _slow_superspine_uplinks({"host": 3, "leaf_spine": 90})
    superpod = copy.deepcopy(_doc(SUPERPOD))
    return [("superpod-1su (edge)", superpod), ("multi-vendor (lacp peer links)", lacp), ("three tiers", three)]


@pytest.mark.parametrize(("name", "doc"), _lengthy_designs(), ids=[name for name, _ in _lengthy_designs()])
def test_the_rules_see_every_cable_the_planner_lays(name: str, doc: dict[str, Any]) -> None:
    """The classes the rule checks are exactly the (length, speed) pairs of the plan's cables, so no cable
    escapes it; and each of them has a medium."""
    from gpufabric.intent.export_rules import cable_classes  # here: the other tests run without the module

    plan = plan_doc(doc)
    for plane_name, plane in plan.planes.items():
        intent_plane = getattr(plan.intent.planes, plane_name)
        if plane_name == "oob" or intent_plane.lengths is None:
            continue
        roles = {d.name: d.role for d in plane.devices}
        laid = {(link_length(plane, link, roles), link.speed) for link in plane.links}
        checked = {(c.metres, c.speed) for c in cable_classes(intent_plane)}
        assert laid == checked, (name, plane_name)
        assert all(media.choose(speed, metres) is not None for metres, speed in laid)
