"""Growth without disruption: with a build-out target, installing one more unit only adds."""

from __future__ import annotations

import copy
import itertools
import re

import pytest
import yaml
from conftest import INVENTORY, run_in_process

from gpufabric.config.compare import compare
from gpufabric.intent.loader import load_intent_text
from gpufabric.plan import build_plan

SMALL = ["fabric.yml", "examples/multi-vendor.yml", "examples/superpod-1su.yml"]
LARGE = ["examples/superpod-4su.yml", "examples/rail-28k.yml", "examples/three-tier-32k.yml"]


def _doc(name: str) -> dict:
    return yaml.safe_load((INVENTORY / name).read_text())


def _unit(doc: dict, group: dict) -> int:
    planes = [p for n, p in doc["planes"].items() if n in group["nics"] and n != "oob"]
    return min(p.get("unit_nodes") or group["count"] for p in planes)


def _steps(doc: dict) -> tuple[int, list[int]]:
    """The first GPU group, grown a unit at a time up to its full count (its build-out)."""
    gi = next(i for i, g in enumerate(doc["server_groups"]) if g.get("kind", "gpu") == "gpu")
    group = doc["server_groups"][gi]
    unit, target = _unit(doc, group), group["count"]
    return gi, sorted({*range(unit, target, unit), target})


def _plan(doc: dict, gi: int, count: int):
    doc = copy.deepcopy(doc)
    doc["server_groups"][gi]["build_out"] = doc["server_groups"][gi]["count"]
    doc["server_groups"][gi]["count"] = count
    return build_plan(load_intent_text(yaml.safe_dump(doc)))


def _assert_only_added(old, new) -> None:
    od, nd = {d.name: d for d in old.devices()}, {d.name: d for d in new.devices()}
    assert set(od) <= set(nd)
    for name, d in od.items():
        n = nd[name]
        assert (d.asn, d.loopback, d.mgmt_ip, d.failure_domain) == (n.asn, n.loopback, n.mgmt_ip, n.failure_domain), (
            name
        )
    assert {s.name for s in old.servers} <= {s.name for s in new.servers}
    ol = {(x.plane, x.a, x.a_port): x for x in old.links()}
    nl = {(x.plane, x.a, x.a_port): x for x in new.links()}
    assert set(ol) <= set(nl)
    for key, x in ol.items():
        y = nl[key]
        assert (x.b, x.b_port, x.a_ip, x.b_ip, x.number) == (y.b, y.b_port, y.a_ip, y.b_ip, y.number), key


@pytest.mark.parametrize(
    "name", [*SMALL, *(pytest.param(n, marks=pytest.mark.slow) for n in LARGE)], ids=lambda n: n.split("/")[-1]
)
def test_growing_unit_by_unit_changes_nothing_that_exists(name):
    doc = _doc(name)
    gi, steps = _steps(doc)
    assert len(steps) >= 1
    plans = [_plan(doc, gi, c) for c in steps]
    for old, new in itertools.pairwise(plans):
        _assert_only_added(old, new)
    # Configurations: an existing switch only gains lines (or lines that gain items), on the first steps.
    for old, new in list(itertools.pairwise(plans))[:3]:
        diff = compare(old, new)
        assert not diff.disruptive, [(c.device, c.removed) for c in diff.configs if c.removed][:5]
        assert not diff.renumbered and not diff.links_moved and not diff.links_removed


def test_without_a_build_out_growth_renumbers_and_says_so(tmp_path):
    doc = _doc("fabric.yml")
    small, grown = copy.deepcopy(doc), copy.deepcopy(doc)
    small["server_groups"][0]["count"], grown["server_groups"][0]["count"] = 4, 6
    (tmp_path / "old.yml").write_text(yaml.safe_dump(small))
    (tmp_path / "new.yml").write_text(yaml.safe_dump(grown))
    done = run_in_process("gpufabric", "diff", str(tmp_path / "old.yml"), str(tmp_path / "new.yml"))
    assert done.returncode == 5, done.stderr
    assert "would be renumbered" in done.stderr and "would move" in done.stderr
    for d in (small, grown):
        d["server_groups"][0]["build_out"] = 8
    (tmp_path / "old.yml").write_text(yaml.safe_dump(small))
    (tmp_path / "new.yml").write_text(yaml.safe_dump(grown))
    done = run_in_process("gpufabric", "diff", str(tmp_path / "old.yml"), str(tmp_path / "new.yml"), "--work-order",
               str(tmp_path / "wo.csv"))  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    assert "would" not in done.stderr
    rows = (tmp_path / "wo.csv").read_text().splitlines()
    assert rows[0].startswith("action,cable_id,plane,rack,device,port") and all(r.startswith("add,") for r in rows[1:])
    assert any(",cmp-su3-leaf1,swp3,cmp-spine1," in r for r in rows)
    same = run_in_process("gpufabric", "diff", str(tmp_path / "new.yml"), str(tmp_path / "new.yml"))
    assert same.returncode == 0 and "no change" in same.stdout


def test_build_out_below_count_is_refused(tmp_path):
    doc = _doc("fabric.yml")
    doc["server_groups"][0]["build_out"] = 2
    (tmp_path / "f.yml").write_text(yaml.safe_dump(doc))
    done = run_in_process("gpufabric", "check", str(tmp_path / "f.yml"))
    assert done.returncode == 2 and "server_groups[0].build_out" in done.stderr


def _grown_pair(tmp_path):
    doc = _doc("fabric.yml")
    small, grown = copy.deepcopy(doc), copy.deepcopy(doc)
    for d, count in ((small, 4), (grown, 6)):
        d["server_groups"][0].update(count=count, build_out=8)
    (tmp_path / "old.yml").write_text(yaml.safe_dump(small))
    (tmp_path / "new.yml").write_text(yaml.safe_dump(grown))
    return tmp_path / "old.yml", tmp_path / "new.yml"


def test_push_changed_from_targets_only_what_the_growth_touches(tmp_path):
    from gpufabric.fleet.args import FleetArgs
    from gpufabric.push.service import changed_since

    old, new = _grown_pair(tmp_path)
    narrowed = changed_since(FleetArgs(file=str(new)), str(old))
    assert narrowed is not None
    names = set(narrowed.devices)
    assert {"cmp-su3-leaf1", "cmp-su3-leaf2", "cmp-spine1", "cmp-spine2", "oob-mgmt1"} <= names
    assert not names & {"cmp-su1-leaf1", "cmp-su2-leaf2", "sto-leaf1", "biz-border1"}  # untouched switches
    assert changed_since(FleetArgs(file=str(new), devices=("cmp-spine1", "cmp-su1-leaf1")), str(old)).devices == (
        "cmp-spine1",
    )


def test_push_changed_from_an_identical_intent_pushes_nothing(tmp_path):
    _, new = _grown_pair(tmp_path)
    done = run_in_process("nornir", "push", str(new), "--changed-from", str(new))
    assert done.returncode == 0 and "nothing to push" in done.stderr


def test_diff_drawing_shows_what_the_growth_adds_in_green(tmp_path):
    old, new = _grown_pair(tmp_path)
    done = run_in_process("gpufabric", "diff", str(old), str(new), "--drawing", str(tmp_path / "draw"))
    assert done.returncode == 4, done.stderr
    compute = (tmp_path / "draw" / "compute.dot").read_text()
    filled = set(re.findall(r'^\s+"([^"]+)" \[.*fillcolor="#00a651', compute, re.M))
    assert {"cmp-su3-leaf1", "cmp-su3-leaf2"} <= filled  # the new unit's leaves
    assert not filled & {"cmp-su1-leaf1", "cmp-su2-leaf2", "cmp-spine1"}  # existing switches stay plain
    new_lines = re.findall(r'^\s+"([^"]+)" -- "([^"]+)" \[color="#00a651"', compute, re.M)
    assert ("cmp-spine1", "cmp-su3-leaf1") in new_lines and ("cmp-spine1", "cmp-su1-leaf1") not in new_lines
    assert "what this change adds or moves (2 switches" in compute
    plain = run_in_process("gpufabric", "diff", str(old), str(old), "--drawing", str(tmp_path / "same"))
    assert plain.returncode == 0 and "#00a651" not in (tmp_path / "same" / "compute.dot").read_text()
